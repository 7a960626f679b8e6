-- Stratus meta schema, version 1 (PostgreSQL): migrations/sqlite/001_initial.sql in
-- PostgreSQL types. The SQLite row-id aliases are identity columns; text columns use the
-- "C" collation so every `ORDER BY` sorts bytewise, as SQLite does, whatever the
-- database's locale.

CREATE TABLE topics (
    topic             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    read_queue_nums   INTEGER NOT NULL,
    write_queue_nums  INTEGER NOT NULL,
    perm              INTEGER NOT NULL,
    topic_filter_type TEXT    NOT NULL,
    topic_sys_flag    INTEGER NOT NULL,
    order_flag        BOOLEAN NOT NULL,
    retention_hours   BIGINT
);

CREATE TABLE kv_config (
    namespace TEXT COLLATE "C" NOT NULL,
    kv_key    TEXT COLLATE "C" NOT NULL,
    kv_value  TEXT NOT NULL,
    PRIMARY KEY (namespace, kv_key)
);

CREATE TABLE subscription_groups (
    group_name               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    consume_enable           BOOLEAN NOT NULL,
    consume_broadcast_enable BOOLEAN NOT NULL,
    retry_queue_nums         INTEGER NOT NULL,
    retry_max_times          INTEGER NOT NULL
);

-- Shards: the lease and the commit-log end. Segment commits and retention passes lock
-- this row (conditional UPDATE / SELECT … FOR UPDATE), which serialises them per shard.
CREATE TABLE shards (
    shard_id       BIGINT NOT NULL PRIMARY KEY,
    epoch          BIGINT NOT NULL,
    owner          TEXT COLLATE "C",
    expires_at_ms  BIGINT NOT NULL,
    commit_log_end BIGINT NOT NULL
);

CREATE TABLE queues (
    queue_ref  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    shard_id   BIGINT  NOT NULL REFERENCES shards (shard_id),
    topic      TEXT COLLATE "C" NOT NULL,
    queue_id   INTEGER NOT NULL,
    min_offset BIGINT  NOT NULL,
    max_offset BIGINT  NOT NULL,
    UNIQUE (shard_id, topic, queue_id)
);

CREATE TABLE segments (
    segment_id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    shard_id         BIGINT NOT NULL,
    epoch            BIGINT NOT NULL,
    node             TEXT   NOT NULL,
    object_key       TEXT COLLATE "C" NOT NULL,
    section_pos      BIGINT NOT NULL,
    section_len      BIGINT NOT NULL,
    footer_pos       BIGINT NOT NULL,
    footer_len       BIGINT NOT NULL,
    commit_log_start BIGINT NOT NULL,
    commit_log_end   BIGINT NOT NULL,
    committed_at_ms  BIGINT NOT NULL
);

CREATE INDEX segments_by_commit_log_end ON segments (shard_id, commit_log_end);

CREATE TABLE queue_segments (
    queue_ref    BIGINT NOT NULL,
    end_offset   BIGINT NOT NULL,
    first_offset BIGINT NOT NULL,
    entry_count  BIGINT NOT NULL,
    segment_id   BIGINT NOT NULL,
    min_store_ts BIGINT NOT NULL,
    max_store_ts BIGINT NOT NULL,
    PRIMARY KEY (queue_ref, end_offset)
);

CREATE TABLE consumer_offsets (
    group_name   TEXT COLLATE "C" NOT NULL,
    shard_id     BIGINT  NOT NULL,
    topic        TEXT COLLATE "C" NOT NULL,
    queue_id     INTEGER NOT NULL,
    queue_offset BIGINT  NOT NULL,
    PRIMARY KEY (group_name, shard_id, topic, queue_id)
);
