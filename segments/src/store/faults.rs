//! A fault-injecting, request-counting [`ObjectStore`] wrapper for tests (here and in the
//! gateway): fail the next puts or gets, make a put ambiguous (performed, then reported
//! failed), truncate or corrupt what the next gets return (the call itself succeeds, as a
//! silently damaged response would), hold puts behind a gate, add latency, and count
//! requests by kind. HEAD requests are counted as gets but never damaged.
#![allow(clippy::disallowed_methods)] // test seam: latency uses Tokio's pausable timer

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use parking_lot::Mutex;
use tokio::sync::watch;

/// Faults to inject; counts of upcoming calls to affect.
#[derive(Debug, Default)]
struct Plan {
    fail_puts: u32,
    ambiguous_puts: u32,
    fail_gets: u32,
    spare_gets: u32,
    truncate_gets: u32,
    corrupt_gets: u32,
    put_latency: Duration,
    get_latency: Duration,
}

/// Request counters.
#[derive(Debug, Default)]
pub struct Counts {
    /// PUT attempts (including failed ones).
    pub puts: AtomicU64,
    /// GETs, ranged or whole (HEAD included).
    pub gets: AtomicU64,
    /// DELETEs.
    pub deletes: AtomicU64,
    /// LISTs.
    pub lists: AtomicU64,
}

/// The wrapper.
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    plan: Mutex<Plan>,
    /// Puts wait while this is false.
    gate: watch::Sender<bool>,
    counts: Counts,
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("injected {what} fault").into(),
    }
}

impl FaultyStore {
    /// Wraps `inner` with no faults.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            plan: Mutex::default(),
            gate: watch::channel(true).0,
            counts: Counts::default(),
        })
    }

    /// The next `n` puts fail without writing.
    pub fn fail_puts(&self, n: u32) {
        self.plan.lock().fail_puts = n;
    }

    /// The next `n` puts write the object and then report a transient error.
    pub fn ambiguous_puts(&self, n: u32) {
        self.plan.lock().ambiguous_puts = n;
    }

    /// The next `n` gets fail.
    pub fn fail_gets(&self, n: u32) {
        self.plan.lock().fail_gets = n;
    }

    /// The next `n` gets (not HEADs) succeed but return only the first half of the bytes
    /// asked for (an empty answer stays empty), with the range still claiming the full
    /// length.
    pub fn truncate_gets(&self, n: u32) {
        self.plan.lock().truncate_gets = n;
    }

    /// The next `n` gets (not HEADs) succeed but return the bytes with one byte flipped
    /// (the middle one).
    pub fn corrupt_gets(&self, n: u32) {
        self.plan.lock().corrupt_gets = n;
    }

    /// The next `n` gets are spared by [`FaultyStore::truncate_gets`] and
    /// [`FaultyStore::corrupt_gets`] (to damage, say, the second get of a read).
    pub fn spare_gets(&self, n: u32) {
        self.plan.lock().spare_gets = n;
    }

    /// Clears every pending fault, the latencies and the put gate.
    pub fn clear_faults(&self) {
        *self.plan.lock() = Plan::default();
        self.release_puts();
    }

    /// Adds latency to every put.
    pub fn set_put_latency(&self, d: Duration) {
        self.plan.lock().put_latency = d;
    }

    /// Adds latency to every get.
    pub fn set_get_latency(&self, d: Duration) {
        self.plan.lock().get_latency = d;
    }

    /// Holds every put (before it is performed) until [`FaultyStore::release_puts`].
    pub fn hold_puts(&self) {
        self.gate.send_replace(false);
    }

    /// Lets held and later puts proceed.
    pub fn release_puts(&self) {
        self.gate.send_replace(true);
    }

    /// Request counters.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// PUTs so far.
    pub fn puts(&self) -> u64 {
        self.counts.puts.load(Ordering::SeqCst)
    }

    /// GETs so far.
    pub fn gets(&self) -> u64 {
        self.counts.gets.load(Ordering::SeqCst)
    }

    /// Resets the counters.
    pub fn reset_counts(&self) {
        for c in [
            &self.counts.puts,
            &self.counts.gets,
            &self.counts.deletes,
            &self.counts.lists,
        ] {
            c.store(0, Ordering::SeqCst);
        }
    }

    fn take(counter: &mut u32) -> bool {
        if *counter > 0 {
            *counter -= 1;
            true
        } else {
            false
        }
    }
}

/// How a get's bytes are damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Truncate,
    Corrupt,
}

impl Damage {
    fn apply(self, bytes: Bytes) -> Bytes {
        match self {
            Self::Truncate => bytes.slice(..bytes.len() / 2),
            Self::Corrupt => {
                let mut v = bytes.to_vec();
                let mid = v.len() / 2;
                if let Some(b) = v.get_mut(mid) {
                    *b ^= 0x5a;
                }
                Bytes::from(v)
            }
        }
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.counts.puts.fetch_add(1, Ordering::SeqCst);
        let mut gate = self.gate.subscribe();
        // The sender lives as long as `self`.
        let _ = gate.wait_for(|open| *open).await;
        let (latency, fail, ambiguous) = {
            let mut p = self.plan.lock();
            let fail = Self::take(&mut p.fail_puts);
            let ambiguous = !fail && Self::take(&mut p.ambiguous_puts);
            (p.put_latency, fail, ambiguous)
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if fail {
            return Err(injected("put"));
        }
        let r = self.inner.put_opts(location, payload, opts).await?;
        if ambiguous {
            return Err(injected("ambiguous put"));
        }
        Ok(r)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.counts.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.counts.gets.fetch_add(1, Ordering::SeqCst);
        let head = options.head;
        let (latency, fail, damage) = {
            let mut p = self.plan.lock();
            let fail = Self::take(&mut p.fail_gets);
            let damage = if fail || head || Self::take(&mut p.spare_gets) {
                None
            } else if Self::take(&mut p.truncate_gets) {
                Some(Damage::Truncate)
            } else if Self::take(&mut p.corrupt_gets) {
                Some(Damage::Corrupt)
            } else {
                None
            };
            (p.get_latency, fail, damage)
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if fail {
            return Err(injected("get"));
        }
        let r = self.inner.get_opts(location, options).await?;
        let Some(damage) = damage else {
            return Ok(r);
        };
        let (meta, range, attributes, extensions) = (
            r.meta.clone(),
            r.range.clone(),
            r.attributes.clone(),
            r.extensions.clone(),
        );
        let bytes = damage.apply(r.bytes().await?);
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
            meta,
            range,
            attributes,
            extensions,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.counts.deletes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counts.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.counts.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    use super::*;

    async fn store_with(bytes: &'static [u8]) -> Arc<FaultyStore> {
        let s = FaultyStore::new(Arc::new(InMemory::new()));
        s.put(&Path::from("k"), PutPayload::from_static(bytes))
            .await
            .unwrap();
        s
    }

    #[tokio::test]
    async fn truncated_gets_return_short_bytes_once() {
        let s = store_with(b"0123456789").await;
        s.truncate_gets(1);
        let short = s.get_range(&Path::from("k"), 2..10).await.unwrap();
        assert_eq!(&short[..], b"2345");
        let full = s.get_range(&Path::from("k"), 2..10).await.unwrap();
        assert_eq!(&full[..], b"23456789");
    }

    #[tokio::test]
    async fn corrupted_gets_flip_one_byte_and_heads_are_spared() {
        let s = store_with(b"abcdef").await;
        s.corrupt_gets(1);
        assert_eq!(s.head(&Path::from("k")).await.unwrap().size, 6);
        let bad = s
            .get(&Path::from("k"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(bad.len(), 6);
        assert_ne!(&bad[..], b"abcdef");
        assert_eq!(&bad[..3], b"abc");
        let good = s
            .get(&Path::from("k"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&good[..], b"abcdef");
    }

    #[tokio::test]
    async fn spared_gets_come_before_the_damaged_ones() {
        let s = store_with(b"abcd").await;
        s.spare_gets(1);
        s.truncate_gets(1);
        assert_eq!(s.get_range(&Path::from("k"), 0..4).await.unwrap().len(), 4);
        assert_eq!(s.get_range(&Path::from("k"), 0..4).await.unwrap().len(), 2);
        assert_eq!(s.get_range(&Path::from("k"), 0..4).await.unwrap().len(), 4);
    }

    #[tokio::test]
    async fn clear_faults_drops_pending_faults() {
        let s = store_with(b"xy").await;
        s.fail_gets(3);
        s.fail_puts(3);
        s.clear_faults();
        assert!(s.get(&Path::from("k")).await.is_ok());
        assert!(
            s.put(&Path::from("k2"), PutPayload::from_static(b"z"))
                .await
                .is_ok()
        );
    }
}
