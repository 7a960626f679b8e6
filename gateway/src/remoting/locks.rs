//! Queue locks for orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ), held in memory by
//! the owner of each queue's shard. Mirrors `RebalanceLockManager`: a lock not refreshed for
//! `broker.queue_lock_expiry` (60 s) is free again; locking a queue you hold refreshes it.

use std::collections::HashMap;

use parking_lot::Mutex;
use stratus_compat::request::lock::MessageQueue;

#[derive(Debug)]
struct Holder {
    client_id: String,
    last_update_ms: i64,
}

/// (group, queue) → holder.
#[derive(Debug, Default)]
pub(crate) struct QueueLocks {
    table: Mutex<HashMap<(String, MessageQueue), Holder>>,
}

impl QueueLocks {
    /// Locks each queue for `client_id` when it is free, expired, or already held by it;
    /// returns the queues the client now holds.
    pub(crate) fn lock(
        &self,
        group: &str,
        client_id: &str,
        queues: Vec<MessageQueue>,
        now_ms: i64,
        expiry_ms: i64,
    ) -> Vec<MessageQueue> {
        let mut table = self.table.lock();
        let mut granted = Vec::new();
        for mq in queues {
            let key = (group.to_owned(), mq.clone());
            let free = match table.get(&key) {
                None => true,
                Some(h) => h.client_id == client_id || now_ms - h.last_update_ms > expiry_ms,
            };
            if free {
                table.insert(
                    key,
                    Holder {
                        client_id: client_id.to_owned(),
                        last_update_ms: now_ms,
                    },
                );
                granted.push(mq);
            }
        }
        granted
    }

    /// Releases the queues `client_id` holds among `queues`; others' locks are untouched.
    pub(crate) fn unlock(&self, group: &str, client_id: &str, queues: Vec<MessageQueue>) {
        let mut table = self.table.lock();
        for mq in queues {
            let key = (group.to_owned(), mq);
            if table.get(&key).is_some_and(|h| h.client_id == client_id) {
                table.remove(&key);
            }
        }
    }

    /// Drops expired entries (housekeeping, bounds memory).
    pub(crate) fn expire(&self, now_ms: i64, expiry_ms: i64) {
        self.table
            .lock()
            .retain(|_, h| now_ms - h.last_update_ms <= expiry_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(q: i32) -> MessageQueue {
        MessageQueue {
            broker_name: "broker-0".into(),
            queue_id: q,
            topic: "T".into(),
        }
    }

    #[test]
    fn locks_are_exclusive_refreshable_and_expire() {
        let locks = QueueLocks::default();
        assert_eq!(
            locks.lock("g", "a", vec![mq(0), mq(1)], 0, 60_000),
            vec![mq(0), mq(1)]
        );
        assert_eq!(
            locks.lock("g", "b", vec![mq(1), mq(2)], 1_000, 60_000),
            vec![mq(2)]
        );
        // Another group is independent.
        assert_eq!(
            locks.lock("h", "b", vec![mq(1)], 1_000, 60_000),
            vec![mq(1)]
        );
        // a refreshes q1 at 50 s; b still cannot take it at 70 s, but takes q0 (not refreshed).
        assert_eq!(
            locks.lock("g", "a", vec![mq(1)], 50_000, 60_000),
            vec![mq(1)]
        );
        assert_eq!(
            locks.lock("g", "b", vec![mq(0), mq(1)], 70_000, 60_000),
            vec![mq(0)]
        );
        // Unlock by a non-holder changes nothing; by the holder frees it.
        locks.unlock("g", "b", vec![mq(1)]);
        assert!(locks.lock("g", "c", vec![mq(1)], 71_000, 60_000).is_empty());
        locks.unlock("g", "a", vec![mq(1)]);
        assert_eq!(
            locks.lock("g", "c", vec![mq(1)], 72_000, 60_000),
            vec![mq(1)]
        );
        locks.expire(200_000, 60_000);
        assert_eq!(
            locks
                .lock("g", "z", vec![mq(0), mq(1), mq(2)], 200_001, 60_000)
                .len(),
            3
        );
    }
}
