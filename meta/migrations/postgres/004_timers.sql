-- Stratus meta schema, version 4 (PostgreSQL): pending timer messages (see
-- migrations/sqlite/004_timers.sql).
CREATE TABLE timers (
    shard_id BIGINT NOT NULL,
    handle   BIGINT NOT NULL,
    due_ms   BIGINT NOT NULL,
    PRIMARY KEY (shard_id, handle)
);
CREATE INDEX timers_by_due ON timers (shard_id, due_ms);
