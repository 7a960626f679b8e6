-- Delivery progress of the delay-level scheduler: per shard and delay level, the next offset
-- of SCHEDULE_TOPIC_XXXX queue (level - 1) to deliver. Advanced by the same transaction that
-- commits the delivered message (a segment effect), so a delivery is never repeated or lost.
CREATE TABLE schedule_progress (
    shard_id INTEGER NOT NULL,
    level INTEGER NOT NULL,
    next_offset BIGINT NOT NULL,
    PRIMARY KEY (shard_id, level)
);
