-- Stratus meta schema, version 6 (PostgreSQL): the key index of QUERY_MESSAGE (see
-- migrations/sqlite/006_message_keys.sql).
CREATE TABLE message_keys (
    shard_id   BIGINT NOT NULL,
    log_offset BIGINT NOT NULL,
    key_hash   BIGINT NOT NULL,
    store_ts   BIGINT NOT NULL,
    PRIMARY KEY (shard_id, log_offset, key_hash)
);
CREATE INDEX message_keys_by_hash ON message_keys (shard_id, key_hash, store_ts);

CREATE TABLE unique_keys (
    shard_id   BIGINT NOT NULL,
    id_time    BIGINT NOT NULL,
    key_hash   BIGINT NOT NULL,
    log_offset BIGINT NOT NULL,
    store_ts   BIGINT NOT NULL,
    PRIMARY KEY (shard_id, id_time, key_hash, log_offset)
);
CREATE INDEX unique_keys_by_offset ON unique_keys (shard_id, log_offset);
