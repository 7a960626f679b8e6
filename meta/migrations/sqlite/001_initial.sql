-- Stratus meta schema, version 1 (SQLite).
--
-- Written in the subset SQLite and PostgreSQL share, so migrations/postgres/ can reuse it.
-- The SQLite-only parts are marked "sqlite:": `INTEGER PRIMARY KEY` row ids (PostgreSQL:
-- `BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY`) and `WITHOUT ROWID`.
--
-- Unsigned values (shard ids, byte positions, entry counts) are stored as BIGINT and checked
-- on the way in and out. Names avoid SQL keywords (`order`, `group`, `offset`, `key`).

-- Topic configs (TopicConfig.java), one row per topic.
CREATE TABLE topics (
    topic             TEXT    NOT NULL PRIMARY KEY,
    read_queue_nums   INTEGER NOT NULL,
    write_queue_nums  INTEGER NOT NULL,
    perm              INTEGER NOT NULL,
    topic_filter_type TEXT    NOT NULL,
    topic_sys_flag    INTEGER NOT NULL,
    order_flag        BOOLEAN NOT NULL,
    retention_hours   BIGINT
);

-- Name-server KV config (PUT_KV_CONFIG / GET_KV_CONFIG).
CREATE TABLE kv_config (
    namespace TEXT NOT NULL,
    kv_key    TEXT NOT NULL,
    kv_value  TEXT NOT NULL,
    PRIMARY KEY (namespace, kv_key)
);

-- Subscription groups (SubscriptionGroupConfig.java), the fields Stratus uses.
CREATE TABLE subscription_groups (
    group_name               TEXT    NOT NULL PRIMARY KEY,
    consume_enable           BOOLEAN NOT NULL,
    consume_broadcast_enable BOOLEAN NOT NULL,
    retry_queue_nums         INTEGER NOT NULL,
    retry_max_times          INTEGER NOT NULL
);

-- Shards (logical brokers): the lease and the commit-log end. `owner` is NULL when free;
-- `epoch` only increases; `commit_log_end` is the next commit-log offset to assign.
CREATE TABLE shards (
    shard_id       BIGINT NOT NULL PRIMARY KEY,
    epoch          BIGINT NOT NULL,
    owner          TEXT,
    expires_at_ms  BIGINT NOT NULL,
    commit_log_end BIGINT NOT NULL
);

-- Queues of a shard and their bounds; created by the first segment commit that touches them.
-- `queue_ref` is a surrogate key so queue_segments rows stay small.
CREATE TABLE queues (
    queue_ref  INTEGER PRIMARY KEY, -- sqlite: row id alias
    shard_id   BIGINT  NOT NULL REFERENCES shards (shard_id),
    topic      TEXT    NOT NULL,
    queue_id   INTEGER NOT NULL,
    min_offset BIGINT  NOT NULL,
    max_offset BIGINT  NOT NULL,
    UNIQUE (shard_id, topic, queue_id)
);

-- Committed segment sections: one row per (segment object, shard). Sections of a shard are
-- contiguous in commit-log offsets.
CREATE TABLE segments (
    segment_id       INTEGER PRIMARY KEY, -- sqlite: row id alias
    shard_id         BIGINT  NOT NULL,
    epoch            BIGINT  NOT NULL,
    node             TEXT    NOT NULL,
    object_key       TEXT    NOT NULL,
    section_pos      BIGINT  NOT NULL,
    section_len      BIGINT  NOT NULL,
    footer_pos       BIGINT  NOT NULL,
    footer_len       BIGINT  NOT NULL,
    commit_log_start BIGINT  NOT NULL,
    commit_log_end   BIGINT  NOT NULL,
    committed_at_ms  BIGINT  NOT NULL
);

-- segment_by_commit_log_offset: the first section of the shard ending after the offset.
CREATE INDEX segments_by_commit_log_end ON segments (shard_id, commit_log_end);

-- Entries one section adds to one queue: [first_offset, end_offset). Ranges of a queue are
-- contiguous, so ordering by end_offset is ordering by first_offset. No foreign keys: this is
-- the largest table and retention deletes from it in bulk.
CREATE TABLE queue_segments (
    queue_ref    BIGINT NOT NULL,
    end_offset   BIGINT NOT NULL,
    first_offset BIGINT NOT NULL,
    entry_count  BIGINT NOT NULL,
    segment_id   BIGINT NOT NULL,
    min_store_ts BIGINT NOT NULL,
    max_store_ts BIGINT NOT NULL,
    PRIMARY KEY (queue_ref, end_offset)
) WITHOUT ROWID; -- sqlite: clustered on the primary key

-- Committed consumer offsets.
CREATE TABLE consumer_offsets (
    group_name   TEXT    NOT NULL,
    shard_id     BIGINT  NOT NULL,
    topic        TEXT    NOT NULL,
    queue_id     INTEGER NOT NULL,
    queue_offset BIGINT  NOT NULL,
    PRIMARY KEY (group_name, shard_id, topic, queue_id)
);
