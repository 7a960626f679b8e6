-- Stratus meta schema, version 8 (PostgreSQL): idempotent Kafka producers' recent batches.
--
-- One row per batch of an idempotent producer (a producer id) appended to a queue, written
-- by the commit of the section holding the batch (a segment effect), so a shard's next
-- owner knows exactly which batches are durable and answers a retried one with its
-- original offset instead of storing it twice. The commit keeps the newest five per
-- producer and queue (the most a producer has in flight) and housekeeping deletes the rows
-- of producers silent for longer than their expiry.
CREATE TABLE producer_batches (
    shard_id     BIGINT  NOT NULL,
    producer_id  BIGINT  NOT NULL,
    topic        TEXT    NOT NULL,
    queue_id     INTEGER NOT NULL,
    first_offset BIGINT  NOT NULL,
    epoch        INTEGER NOT NULL,
    first_seq    INTEGER NOT NULL,
    last_seq     INTEGER NOT NULL,
    committed_ms BIGINT  NOT NULL,
    PRIMARY KEY (shard_id, producer_id, topic, queue_id, first_offset)
);
CREATE INDEX producer_batches_by_time ON producer_batches (committed_ms);
