-- Pending timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS): one row per
-- message stored in rmq_sys_wheel_timer, inserted by the commit of its segment section and
-- deleted by the commit that delivers it. The index on due time lets the scheduler find
-- what is due without scanning anything else.
CREATE TABLE timers (
    shard_id INTEGER NOT NULL,
    handle BIGINT NOT NULL,
    due_ms BIGINT NOT NULL,
    PRIMARY KEY (shard_id, handle)
);
CREATE INDEX timers_by_due ON timers (shard_id, due_ms);
