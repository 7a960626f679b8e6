//! Real time for the bench tool: it paces and measures against the wall clock by design,
//! so this one module may use Tokio's timers directly (the server uses an injected Clock).
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

/// Sleeps until `t` (returns at once when `t` has passed).
pub(crate) async fn sleep_until(t: Instant) {
    tokio::time::sleep_until(t.into()).await;
}

/// Sleeps for `d`.
pub(crate) async fn sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

/// The time base of one run: every timestamp the tool puts in a message body is nanoseconds
/// since this instant, so producers and pullers of one process compare them directly.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch {
    start: Instant,
    /// Identifies this run's messages among others in the same topic.
    pub(crate) run_id: u64,
}

impl Epoch {
    /// A new time base with a random run id.
    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            run_id: rand::random::<u64>() | 1,
        }
    }

    /// A new time base for the messages of an earlier run.
    pub(crate) fn with_run_id(run_id: u64) -> Self {
        Self {
            start: Instant::now(),
            run_id,
        }
    }

    /// Nanoseconds since the start.
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Bytes at the start of a body that carry the run id and the send time.
pub(crate) const STAMP_LEN: usize = 16;

/// Writes the run id and `sent_ns` into the first [`STAMP_LEN`] bytes of `body` (when it is
/// long enough).
pub(crate) fn write_stamp(body: &mut [u8], epoch: &Epoch, sent_ns: u64) {
    if let Some(head) = body.get_mut(..STAMP_LEN) {
        head[..8].copy_from_slice(&epoch.run_id.to_be_bytes());
        head[8..].copy_from_slice(&sent_ns.to_be_bytes());
    }
}

/// The send time stamped in `body` by this run, if any.
pub(crate) fn read_stamp(body: &[u8], epoch: &Epoch) -> Option<u64> {
    let head = body.get(..STAMP_LEN)?;
    let run = u64::from_be_bytes(head[..8].try_into().ok()?);
    if run != epoch.run_id {
        return None;
    }
    Some(u64::from_be_bytes(head[8..].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_only_for_their_run() {
        let a = Epoch::new();
        let b = Epoch::new();
        let mut body = vec![b'x'; 32];
        write_stamp(&mut body, &a, 12_345);
        assert_eq!(read_stamp(&body, &a), Some(12_345));
        assert_eq!(read_stamp(&body, &b), None);
        let mut short = vec![b'x'; 8];
        write_stamp(&mut short, &a, 1);
        assert_eq!(read_stamp(&short, &a), None);
    }
}
