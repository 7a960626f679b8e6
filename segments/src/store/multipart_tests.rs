//! Multipart `put_create`: parts, the create-only pre-check, the read-back of an existing
//! key, retries of a failed upload, on `InMemory` and `LocalFileSystem`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};

use super::*;
use crate::testkit::fast_store_config;

/// Counts single PUTs, multipart uploads, parts and completions; can fail the next parts.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ObjectStore>,
    single_puts: AtomicU64,
    uploads: AtomicU64,
    parts: Arc<AtomicU64>,
    completions: Arc<AtomicU64>,
    aborts: Arc<AtomicU64>,
    fail_parts: Arc<AtomicU32>,
    ambiguous_completes: Arc<AtomicU32>,
}

impl Counting {
    fn new(inner: Arc<dyn ObjectStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            single_puts: AtomicU64::new(0),
            uploads: AtomicU64::new(0),
            parts: Arc::new(AtomicU64::new(0)),
            completions: Arc::new(AtomicU64::new(0)),
            aborts: Arc::new(AtomicU64::new(0)),
            fail_parts: Arc::new(AtomicU32::new(0)),
            ambiguous_completes: Arc::new(AtomicU32::new(0)),
        })
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::SeqCst)
    }
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    parts: Arc<AtomicU64>,
    completions: Arc<AtomicU64>,
    aborts: Arc<AtomicU64>,
    fail_parts: Arc<AtomicU32>,
    ambiguous_completes: Arc<AtomicU32>,
}

fn take(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "counting",
        source: format!("injected {what} fault").into(),
    }
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.parts.fetch_add(1, Ordering::SeqCst);
        if take(&self.fail_parts) {
            return Box::pin(futures::future::ready(Err(injected("part"))));
        }
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.completions.fetch_add(1, Ordering::SeqCst);
        let r = self.inner.complete().await?;
        if take(&self.ambiguous_completes) {
            return Err(injected("ambiguous completion"));
        }
        Ok(r)
    }

    async fn abort(&mut self) -> Result<()> {
        self.aborts.fetch_add(1, Ordering::SeqCst);
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.single_puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.uploads.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountingUpload {
            inner,
            parts: self.parts.clone(),
            completions: self.completions.clone(),
            aborts: self.aborts.clone(),
            fail_parts: self.fail_parts.clone(),
            ambiguous_completes: self.ambiguous_completes.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Threshold 1 MiB; parts are raised to the 5 MiB minimum.
fn multipart_config() -> StoreConfig {
    StoreConfig {
        multipart_threshold: 1 << 20,
        multipart_part_size: 1 << 20,
        multipart_concurrency: 2,
        ..fast_store_config()
    }
}

/// `len` bytes that differ from position to position (a misplaced part shows).
fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 16) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test]
async fn large_objects_go_up_in_parts_of_at_least_five_mib() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    let body = pattern(12 * 1024 * 1024 + 7, 1);
    s.put_create("segments/n/i/1.seg", body.clone())
        .await
        .unwrap();
    assert_eq!(Counting::get(&c.single_puts), 0);
    assert_eq!(Counting::get(&c.uploads), 1);
    assert_eq!(Counting::get(&c.parts), 3, "5 MiB + 5 MiB + the rest");
    assert_eq!(Counting::get(&c.completions), 1);
    assert_eq!(s.get("segments/n/i/1.seg").await.unwrap(), body);
}

#[tokio::test]
async fn objects_at_or_under_the_threshold_are_one_create_only_put() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    s.put_create("k", pattern(1 << 20, 2)).await.unwrap();
    assert_eq!(Counting::get(&c.single_puts), 1);
    assert_eq!(Counting::get(&c.uploads), 0);
    // The same key again with other bytes: refused by the create-only PUT.
    assert!(s.put_create("k", pattern(1 << 20, 3)).await.is_err());
    assert_eq!(s.get("k").await.unwrap(), pattern(1 << 20, 2));
}

#[tokio::test]
async fn multipart_to_an_existing_key_reads_it_back_and_never_overwrites() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    let ours = pattern(6 << 20, 4);
    s.put_create("k", ours.clone()).await.unwrap();
    // Same bytes: an earlier attempt of ours landed; success without a second upload.
    s.put_create("k", ours.clone()).await.unwrap();
    assert_eq!(Counting::get(&c.uploads), 1);
    // Different bytes: an error naming AlreadyExists, and the object is untouched.
    let e = s.put_create("k", pattern(6 << 20, 5)).await.unwrap_err();
    let SegmentError::ObjectStore { op, source, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(*op, "put");
    assert!(
        matches!(**source, object_store::Error::AlreadyExists { .. }),
        "{e}"
    );
    assert_eq!(Counting::get(&c.uploads), 1);
    assert_eq!(s.get("k").await.unwrap(), ours);
}

#[tokio::test]
async fn a_failed_part_aborts_the_upload_and_the_whole_upload_is_retried() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    c.fail_parts.store(1, Ordering::SeqCst);
    let body = pattern(11 << 20, 6);
    s.put_create("k", body.clone()).await.unwrap();
    assert_eq!(Counting::get(&c.uploads), 2);
    assert_eq!(Counting::get(&c.aborts), 1);
    assert_eq!(Counting::get(&c.completions), 1);
    assert_eq!(s.get("k").await.unwrap(), body);
}

#[tokio::test]
async fn an_ambiguous_completion_is_resolved_by_reading_the_object_back() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    c.ambiguous_completes.store(1, Ordering::SeqCst);
    let body = pattern(7 << 20, 10);
    s.put_create("k", body.clone()).await.unwrap();
    assert_eq!(
        Counting::get(&c.uploads),
        1,
        "the retry found the object and uploaded nothing"
    );
    assert_eq!(s.get("k").await.unwrap(), body);
}

#[tokio::test]
async fn multipart_gives_up_after_max_attempts_and_leaves_no_object() {
    let c = Counting::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(c.clone(), multipart_config());
    c.fail_parts.store(100, Ordering::SeqCst);
    let e = s.put_create("k", pattern(6 << 20, 7)).await.unwrap_err();
    assert!(
        matches!(e, SegmentError::ObjectStore { op: "put", .. }),
        "{e}"
    );
    assert_eq!(
        Counting::get(&c.uploads),
        3,
        "fast_store_config: 3 attempts"
    );
    assert_eq!(Counting::get(&c.aborts), 3);
    assert_eq!(Counting::get(&c.completions), 0);
    assert!(is_not_found(&s.get("k").await.unwrap_err()));
}

#[tokio::test]
async fn local_filesystem_multipart_round_trips_and_keeps_create_only() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let c = Counting::new(fs);
    let s = SegmentStore::new(c.clone(), multipart_config());
    let body = pattern(10 * 1024 * 1024 + 1, 8);
    s.put_create("segments/n/i/00000000000000000001.seg", body.clone())
        .await
        .unwrap();
    assert_eq!(Counting::get(&c.parts), 3);
    assert_eq!(
        s.get("segments/n/i/00000000000000000001.seg")
            .await
            .unwrap(),
        body
    );
    assert_eq!(
        s.get_range(
            "segments/n/i/00000000000000000001.seg",
            5 << 20..(5 << 20) + 3
        )
        .await
        .unwrap(),
        body.slice(5 << 20..(5 << 20) + 3)
    );
    assert!(
        s.put_create("segments/n/i/00000000000000000001.seg", pattern(6 << 20, 9))
            .await
            .is_err()
    );
    assert_eq!(
        s.get("segments/n/i/00000000000000000001.seg")
            .await
            .unwrap(),
        body
    );
    let listed = s.list("segments/n").await.unwrap();
    assert_eq!(listed.len(), 1, "no staging files left: {listed:?}");
    assert_eq!(listed[0].size, body.len() as u64);
}
