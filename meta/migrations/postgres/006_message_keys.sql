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
