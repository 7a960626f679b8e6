//! Queue heads: the committed (visible) min/max offsets of every queue of the shards this
//! node owns, with a watch per queue that long-polling pulls await.
//!
//! Only the writer advances `max`, after the meta commit of the segment holding the entries,
//! so a reader bounded by [`QueueHeads::max_offset`] never sees an uncommitted entry.
//! Offsets never move backwards through [`QueueHeads::set_max`].

use std::collections::HashMap;

use parking_lot::RwLock;
use stratus_compat::types::QueueOffset;
use stratus_meta::{QueueKey, ShardId, ShardState};
use tokio::sync::watch;

/// Committed bounds and change notification per queue.
#[derive(Debug, Default)]
pub struct QueueHeads {
    queues: RwLock<HashMap<QueueKey, Head>>,
}

#[derive(Debug)]
struct Head {
    min: QueueOffset,
    /// Carries the committed max offset.
    max: watch::Sender<QueueOffset>,
}

impl Head {
    fn new(min: QueueOffset, max: QueueOffset) -> Self {
        Self {
            min,
            max: watch::channel(max).0,
        }
    }
}

impl QueueHeads {
    /// Committed max offset (next to be written), 0 for an unknown queue.
    pub fn max_offset(&self, queue: &QueueKey) -> QueueOffset {
        self.queues
            .read()
            .get(queue)
            .map_or(QueueOffset(0), |h| *h.max.borrow())
    }

    /// Smallest retained offset, 0 for an unknown queue.
    pub fn min_offset(&self, queue: &QueueKey) -> QueueOffset {
        self.queues
            .read()
            .get(queue)
            .map_or(QueueOffset(0), |h| h.min)
    }

    /// True when the queue has a head (its shard is loaded here).
    pub fn contains(&self, queue: &QueueKey) -> bool {
        self.queues.read().contains_key(queue)
    }

    /// A receiver that changes whenever the queue's committed max offset grows. An unknown
    /// queue gets a head at 0 so the first commit to it wakes the watcher; the receiver
    /// reports closed when the queue's shard is removed.
    pub fn watch(&self, queue: &QueueKey) -> watch::Receiver<QueueOffset> {
        if let Some(h) = self.queues.read().get(queue) {
            return h.max.subscribe();
        }
        let mut w = self.queues.write();
        w.entry(queue.clone())
            .or_insert_with(|| Head::new(QueueOffset(0), QueueOffset(0)))
            .max
            .subscribe()
    }

    /// Advances the committed max offset (never lowers it) and wakes watchers.
    pub fn set_max(&self, queue: &QueueKey, max: QueueOffset) {
        if !self.queues.read().contains_key(queue) {
            self.queues
                .write()
                .entry(queue.clone())
                .or_insert_with(|| Head::new(QueueOffset(0), QueueOffset(0)));
        }
        if let Some(h) = self.queues.read().get(queue) {
            h.max.send_if_modified(|m| {
                let grow = max > *m;
                if grow {
                    *m = max;
                }
                grow
            });
        }
    }

    /// Raises the smallest retained offset (retention moves it), never past the committed
    /// max and never backwards. A queue without a head here (its shard is not loaded) is
    /// left alone: the shard's next owner loads the min from meta. Returns whether it moved.
    pub fn set_min(&self, queue: &QueueKey, min: QueueOffset) -> bool {
        let mut w = self.queues.write();
        let Some(h) = w.get_mut(queue) else {
            return false;
        };
        let min = min.min(*h.max.borrow());
        if min > h.min {
            h.min = min;
            true
        } else {
            false
        }
    }

    /// Loads every queue of a shard from its meta state (a shard was opened here). Existing
    /// heads of the shard are replaced; their watchers are woken when the max differs.
    pub fn load(&self, state: &ShardState) {
        let mut w = self.queues.write();
        for r in &state.queues {
            match w.get_mut(&r.queue) {
                Some(h) => {
                    h.min = r.min_offset;
                    h.max.send_if_modified(|m| {
                        let changed = *m != r.max_offset;
                        *m = r.max_offset;
                        changed
                    });
                }
                None => {
                    w.insert(r.queue.clone(), Head::new(r.min_offset, r.max_offset));
                }
            }
        }
    }

    /// Forgets every queue of `shard` (it is no longer owned here); watchers see the channel
    /// close.
    pub fn remove_shard(&self, shard: ShardId) {
        self.queues.write().retain(|k, _| k.shard != shard);
    }
}

#[cfg(test)]
mod tests {
    use stratus_compat::types::{QueueId, Topic};
    use stratus_meta::QueueRange;

    use super::*;

    fn key(shard: u32, q: i32) -> QueueKey {
        QueueKey {
            shard: ShardId(shard),
            topic: Topic::new("T"),
            queue_id: QueueId(q),
        }
    }

    #[tokio::test]
    async fn set_max_wakes_watchers_and_never_goes_back() {
        let heads = QueueHeads::default();
        let k = key(0, 1);
        let mut rx = heads.watch(&k);
        assert_eq!(heads.max_offset(&k), QueueOffset(0));
        heads.set_max(&k, QueueOffset(5));
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), QueueOffset(5));
        heads.set_max(&k, QueueOffset(3));
        assert!(!rx.has_changed().unwrap());
        assert_eq!(heads.max_offset(&k), QueueOffset(5));
    }

    #[test]
    fn set_min_only_raises_known_queues_up_to_max() {
        let heads = QueueHeads::default();
        let k = key(0, 0);
        assert!(!heads.set_min(&k, QueueOffset(3)));
        assert!(!heads.contains(&k));
        heads.set_max(&k, QueueOffset(10));
        assert!(heads.set_min(&k, QueueOffset(4)));
        assert_eq!(heads.min_offset(&k), QueueOffset(4));
        assert!(!heads.set_min(&k, QueueOffset(2)));
        assert_eq!(heads.min_offset(&k), QueueOffset(4));
        assert!(heads.set_min(&k, QueueOffset(12)));
        assert_eq!(heads.min_offset(&k), QueueOffset(10));
        assert_eq!(heads.max_offset(&k), QueueOffset(10));
    }

    #[test]
    fn load_and_remove_shard() {
        let heads = QueueHeads::default();
        let state = ShardState {
            shard: ShardId(2),
            commit_log_end: stratus_compat::types::CommitLogOffset(0),
            queues: vec![QueueRange {
                queue: key(2, 0),
                min_offset: QueueOffset(3),
                max_offset: QueueOffset(9),
            }],
        };
        heads.load(&state);
        heads.set_max(&key(1, 0), QueueOffset(4));
        assert_eq!(heads.min_offset(&key(2, 0)), QueueOffset(3));
        assert_eq!(heads.max_offset(&key(2, 0)), QueueOffset(9));
        let rx = heads.watch(&key(2, 0));
        heads.remove_shard(ShardId(2));
        assert!(rx.has_changed().is_err());
        assert_eq!(heads.max_offset(&key(2, 0)), QueueOffset(0));
        assert_eq!(heads.max_offset(&key(1, 0)), QueueOffset(4));
    }
}
