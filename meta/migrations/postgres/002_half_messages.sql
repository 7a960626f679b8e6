-- Stratus meta schema, version 2 (PostgreSQL): pending transactional half messages (see
-- migrations/sqlite/002_half_messages.sql).
CREATE TABLE half_messages (
    shard_id       BIGINT  NOT NULL,
    handle         BIGINT  NOT NULL,
    queue_offset   BIGINT  NOT NULL,
    producer_group TEXT    NOT NULL,
    transaction_id TEXT    NOT NULL,
    real_topic     TEXT    NOT NULL,
    real_queue_id  INTEGER NOT NULL,
    stored_at_ms   BIGINT  NOT NULL,
    check_times    INTEGER NOT NULL,
    next_check_ms  BIGINT  NOT NULL,
    PRIMARY KEY (shard_id, handle)
);

CREATE INDEX half_messages_by_next_check ON half_messages (shard_id, next_check_ms);
