-- Stratus meta schema, version 5 (PostgreSQL): node membership, and the indexes retention
-- needs (see migrations/sqlite/005_nodes.sql).
CREATE TABLE nodes (
    node_id      TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    addr         TEXT   NOT NULL,
    heartbeat_ms BIGINT NOT NULL
);

CREATE INDEX queue_segments_by_segment ON queue_segments (segment_id);

CREATE INDEX segments_by_object_key ON segments (object_key);
