-- Stratus meta schema, version 3 (PostgreSQL): delay-level scheduler progress (see
-- migrations/sqlite/003_schedule_progress.sql).
CREATE TABLE schedule_progress (
    shard_id    BIGINT  NOT NULL,
    level       INTEGER NOT NULL,
    next_offset BIGINT  NOT NULL,
    PRIMARY KEY (shard_id, level)
);
