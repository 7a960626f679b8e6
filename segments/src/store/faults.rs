//! A fault-injecting, request-counting [`ObjectStore`] wrapper for tests (here and in the
//! gateway): fail the next puts or gets, make a put ambiguous (performed, then reported
//! failed), hold puts behind a gate, add latency, and count requests by kind.
#![allow(clippy::disallowed_methods)] // test seam: latency uses Tokio's pausable timer

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use parking_lot::Mutex;
use tokio::sync::watch;

/// Faults to inject; counts of upcoming calls to affect.
#[derive(Debug, Default)]
struct Plan {
    fail_puts: u32,
    ambiguous_puts: u32,
    fail_gets: u32,
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
        let (latency, fail) = {
            let mut p = self.plan.lock();
            (p.get_latency, Self::take(&mut p.fail_gets))
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if fail {
            return Err(injected("get"));
        }
        self.inner.get_opts(location, options).await
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
