-- Stratus meta schema, version 5 (SQLite): node membership, and the indexes retention needs.
--
-- Same SQL subset as 001 (see there); nothing here is SQLite-only.

-- Gateway nodes: one row per node id, refreshed by its heartbeat and removed at graceful
-- shutdown. `addr` is the advertised host:port of the node's first broker port.
CREATE TABLE nodes (
    node_id      TEXT   NOT NULL PRIMARY KEY,
    addr         TEXT   NOT NULL,
    heartbeat_ms BIGINT NOT NULL
);

-- Retention: the queue rows of a section (deleting whole sections, finding sections left
-- without rows).
CREATE INDEX queue_segments_by_segment ON queue_segments (segment_id);

-- Retention and orphan collection: is an object key still referenced by any section?
CREATE INDEX segments_by_object_key ON segments (object_key);
