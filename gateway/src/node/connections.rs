//! The node's table of client connections, over every port and protocol: admission
//! against `limits.max_connections` and `limits.max_connections_per_ip`, and eviction of
//! the connection that has gone longest without a request when the node is full.
//!
//! Admission never waits: a connection is admitted, admitted after evicting another one,
//! or refused (the front end closes it at once). An evicted connection is told through its
//! token and leaves the table when it has closed; until then it does not count against the
//! limit, so the node briefly holds up to `max_connections` plus the connections being
//! evicted; at most a tenth of `max_connections` (at least one) are evicted at once, past
//! that new connections are refused. A client address at its own limit is refused and evicts nothing, so one address
//! cannot push others out by opening connections in a loop.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its client address has `max_connections_per_ip` connections.
    AddressLimit,
    /// The node has `max_connections` connections and none can be evicted.
    NodeLimit,
}

impl Refused {
    /// The metric label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::AddressLimit => "address_limit",
            Self::NodeLimit => "node_limit",
        }
    }
}

/// One admitted connection, as the table sees it.
#[derive(Debug)]
struct Entry {
    ip: IpAddr,
    /// When its last request arrived (or it was admitted), ms of the node's clock.
    last_request_ms: Arc<AtomicI64>,
    /// Cancelled to evict it.
    evict: CancellationToken,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    by_id: HashMap<u64, Entry>,
    per_ip: HashMap<IpAddr, usize>,
    /// Entries whose eviction was asked for (still in `by_id` until they close).
    evicting: usize,
}

/// The node's connection table.
#[derive(Debug)]
pub(crate) struct Connections {
    max: usize,
    max_per_ip: usize,
    inner: Mutex<Inner>,
}

/// An admitted connection: its slot in the table, released on drop.
#[derive(Debug)]
pub(crate) struct Admitted {
    table: Arc<Connections>,
    id: u64,
    last_request_ms: Arc<AtomicI64>,
    /// Cancelled when the node evicts this connection.
    pub(crate) evict: CancellationToken,
    /// Whether admitting it evicted another connection.
    pub(crate) evicted_other: bool,
}

impl Admitted {
    /// Records a request received now (`now_ms` of the node's clock).
    pub(crate) fn touch(&self, now_ms: i64) {
        self.last_request_ms.store(now_ms, Ordering::Relaxed);
    }

    /// When the last request arrived.
    pub(crate) fn last_request_ms(&self) -> i64 {
        self.last_request_ms.load(Ordering::Relaxed)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.table.remove(self.id);
    }
}

impl Connections {
    /// A table for at most `max` connections, `max_per_ip` from one address.
    pub(crate) fn new(max: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            max_per_ip,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves the maps consistent; a poisoned lock is usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Connections open (evicted ones not yet closed included).
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Admits a connection from `ip` at `now_ms`, evicting the longest-idle connection
    /// when the node is full.
    ///
    /// # Errors
    /// [`Refused`] when the address is at its limit, or the node is full and every
    /// connection is already being evicted.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr, now_ms: i64) -> Result<Admitted, Refused> {
        let mut inner = self.lock();
        if inner.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_per_ip {
            return Err(Refused::AddressLimit);
        }
        let mut evicted_other = false;
        if inner.by_id.len() - inner.evicting >= self.max {
            if inner.evicting >= self.max.div_ceil(10) {
                return Err(Refused::NodeLimit);
            }
            let victim = longest_idle(
                inner
                    .by_id
                    .iter()
                    .filter(|(_, e)| !e.evict.is_cancelled())
                    .map(|(id, e)| (*id, e.last_request_ms.load(Ordering::Relaxed))),
            );
            let Some(victim) = victim else {
                return Err(Refused::NodeLimit);
            };
            if let Some(e) = inner.by_id.get(&victim) {
                e.evict.cancel();
            }
            inner.evicting += 1;
            evicted_other = true;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let last_request_ms = Arc::new(AtomicI64::new(now_ms));
        let evict = CancellationToken::new();
        inner.by_id.insert(
            id,
            Entry {
                ip,
                last_request_ms: last_request_ms.clone(),
                evict: evict.clone(),
            },
        );
        *inner.per_ip.entry(ip).or_insert(0) += 1;
        Ok(Admitted {
            table: self.clone(),
            id,
            last_request_ms,
            evict,
            evicted_other,
        })
    }

    fn remove(&self, id: u64) {
        let mut inner = self.lock();
        let Some(entry) = inner.by_id.remove(&id) else {
            return;
        };
        if entry.evict.is_cancelled() {
            inner.evicting = inner.evicting.saturating_sub(1);
        }
        if let Some(n) = inner.per_ip.get_mut(&entry.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                inner.per_ip.remove(&entry.ip);
            }
        }
    }
}

/// The connection whose last request is oldest (ties: the lowest id, the oldest
/// connection).
fn longest_idle(entries: impl Iterator<Item = (u64, i64)>) -> Option<u64> {
    entries
        .min_by_key(|&(id, last_ms)| (last_ms, id))
        .map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn the_longest_idle_is_chosen_and_ties_go_to_the_oldest() {
        assert_eq!(longest_idle([].into_iter()), None);
        assert_eq!(
            longest_idle([(1, 500), (2, 100), (3, 900)].into_iter()),
            Some(2)
        );
        assert_eq!(
            longest_idle([(7, 100), (3, 100), (5, 200)].into_iter()),
            Some(3)
        );
    }

    #[test]
    fn one_address_is_held_to_its_limit_and_gets_its_slots_back() {
        let t = Connections::new(10, 2);
        let a = t.admit(ip(1), 0).unwrap();
        let b = t.admit(ip(1), 0).unwrap();
        assert_eq!(t.admit(ip(1), 0).unwrap_err(), Refused::AddressLimit);
        // Other addresses are not affected.
        let c = t.admit(ip(2), 0).unwrap();
        assert!(!a.evict.is_cancelled() && !b.evict.is_cancelled());
        drop(a);
        let a2 = t.admit(ip(1), 0).unwrap();
        assert_eq!(t.open(), 3);
        drop((a2, b, c));
        assert_eq!(t.open(), 0);
        assert!(t.lock().per_ip.is_empty());
    }

    #[test]
    fn a_full_node_evicts_the_longest_idle_connection_once() {
        let t = Connections::new(3, 3);
        let a = t.admit(ip(1), 0).unwrap();
        let b = t.admit(ip(2), 0).unwrap();
        let c = t.admit(ip(3), 0).unwrap();
        a.touch(300);
        b.touch(100);
        c.touch(200);
        let d = t.admit(ip(4), 400).unwrap();
        assert!(d.evicted_other);
        assert!(b.evict.is_cancelled(), "b had the oldest request");
        assert!(!a.evict.is_cancelled() && !c.evict.is_cancelled());
        assert_eq!(t.open(), 4);
        // b closes; full again: c is now the longest idle (200), not b a second time.
        drop(b);
        assert_eq!(t.lock().evicting, 0);
        let e = t.admit(ip(5), 500).unwrap();
        assert!(c.evict.is_cancelled() && !a.evict.is_cancelled());
        drop(c);
        assert_eq!(t.open(), 3);
        drop((a, d, e));
        assert_eq!(t.open(), 0);
    }

    #[test]
    fn evictions_in_progress_are_bounded() {
        // One tenth of the limit (at least one) may be closing at once; past that the node
        // refuses instead of evicting.
        let t = Connections::new(1, 1);
        let a = t.admit(ip(1), 0).unwrap();
        let b = t.admit(ip(2), 1).unwrap();
        assert!(a.evict.is_cancelled());
        assert_eq!(t.admit(ip(3), 2).unwrap_err(), Refused::NodeLimit);
        drop(a);
        let c = t.admit(ip(3), 3).unwrap();
        assert!(b.evict.is_cancelled() && !c.evict.is_cancelled());
        assert_eq!(t.open(), 2);
        drop((b, c));
    }
}
