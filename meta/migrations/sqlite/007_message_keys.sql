-- Stratus meta schema, version 6 (SQLite): the key index of QUERY_MESSAGE.
--
-- One row per (message, key) of every committed section: the 64-bit hash of `topic#key`
-- (the `KEYS` property split on spaces, and `UNIQ_KEY`), the record's local commit-log
-- offset in its shard and its store time. Rows are inserted by the commit of the record's
-- section (a segment effect) and deleted by retention below the shard's first retained
-- section. The primary key follows the commit log, so inserts append and retention deletes
-- a prefix; the second index answers a lookup by hash, newest first, without reading the
-- table.
CREATE TABLE message_keys (
    shard_id   BIGINT  NOT NULL,
    log_offset BIGINT  NOT NULL,
    key_hash   BIGINT  NOT NULL,
    store_ts   BIGINT  NOT NULL,
    PRIMARY KEY (shard_id, log_offset, key_hash)
) WITHOUT ROWID;
CREATE INDEX message_keys_by_hash ON message_keys (shard_id, key_hash, store_ts);

-- Unique keys in the client id layout (`KeyIndexEntry::id_time`): ordered by the id's time
-- field (ms since the producer's month start), so the rows of one commit, created at about
-- the same time, land on the same few pages instead of one random page each. A lookup
-- knows the time from the id it is given. The second index serves retention.
CREATE TABLE unique_keys (
    shard_id   BIGINT  NOT NULL,
    id_time    BIGINT  NOT NULL,
    key_hash   BIGINT  NOT NULL,
    log_offset BIGINT  NOT NULL,
    store_ts   BIGINT  NOT NULL,
    PRIMARY KEY (shard_id, id_time, key_hash, log_offset)
) WITHOUT ROWID;
CREATE INDEX unique_keys_by_offset ON unique_keys (shard_id, log_offset);
