-- Stratus meta schema, version 2 (SQLite): pending transactional half messages.
--
-- Same SQL subset as 001 (see there); the SQLite-only part is marked "sqlite:".
--
-- One row per half message whose transaction is still open. A row is inserted by the segment
-- commit of the section holding the half record (in RMQ_SYS_TRANS_HALF_TOPIC queue 0 of the
-- shard) and deleted by the commit of the section holding the committed real message, or by
-- a rollback / discard after the last check-back. `handle` is the half record's full
-- commit-log handle (PHYSICALOFFSET), unique within its shard.
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
) WITHOUT ROWID; -- sqlite: clustered on the primary key

-- due_half_messages: a shard's rows whose next check-back is due, earliest first.
CREATE INDEX half_messages_by_next_check ON half_messages (shard_id, next_check_ms);
