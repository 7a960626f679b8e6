//! [`SegmentStore`]: the only code that calls `object_store`.
//!
//! Every call has a per-attempt timeout and is retried with exponential backoff while the
//! error is transient. `AlreadyExists`, `Precondition` and `NotFound` are never retried
//! (they are answers, not failures). A create-only PUT that meets `AlreadyExists` is
//! ambiguous when an earlier attempt may have landed: the object is read back and compared
//! with what we meant to write, so an upload is never reported failed when it succeeded,
//! nor successful when someone else's bytes are there.
//!
//! Large objects (more than [`StoreConfig::multipart_threshold`] bytes) are uploaded in parts
//! (S3 multipart upload). `object_store` 0.14's multipart API takes no [`PutMode`]: its final
//! CompleteMultipartUpload overwrites. So a multipart `put_create` first HEADs the key and,
//! when it exists, resolves it exactly like `AlreadyExists` (read back and compare); only a
//! writer that creates the same key between that HEAD and the completion could be
//! overwritten. Segment keys are never reused (`paths.rs`: node, random incarnation,
//! sequence), so no such writer exists: create-only is a second line of defence there, and
//! the meta commit (fenced by epoch) stays the authority on which segments count.

pub mod faults;

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions, PutPayload};
use tracing::{debug, warn};

use crate::SegmentError;
use crate::clock::{Clock, SystemClock};
use crate::metrics;

/// Retry and timeout policy of object store calls.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Attempts per call, the first included (≥ 1).
    pub max_attempts: u32,
    /// Pause before the first retry; doubles per retry.
    pub initial_backoff: Duration,
    /// Longest pause between retries.
    pub max_backoff: Duration,
    /// Time limit of one attempt (of one request: a part, a completion).
    pub op_timeout: Duration,
    /// [`SegmentStore::put_create`] of more bytes than this uploads in parts (multipart).
    pub multipart_threshold: usize,
    /// Size of every part but the last; raised to [`MIN_PART_SIZE`] (S3's minimum).
    pub multipart_part_size: usize,
    /// Parts of one upload in flight at once (≥ 1).
    pub multipart_concurrency: usize,
}

/// S3's smallest part but the last (5 MiB).
pub const MIN_PART_SIZE: usize = 5 << 20;

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            op_timeout: Duration::from_secs(30),
            multipart_threshold: 16 << 20,
            multipart_part_size: 8 << 20,
            multipart_concurrency: 4,
        }
    }
}

/// An object as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    /// Key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification (upload) time, ms since the Unix epoch.
    pub last_modified_ms: i64,
}

/// Object storage for segments, with retries, timeouts and metrics.
#[derive(Debug, Clone)]
pub struct SegmentStore {
    inner: Arc<dyn ObjectStore>,
    config: StoreConfig,
    clock: Arc<dyn Clock>,
}

impl SegmentStore {
    /// Wraps `inner`; backoff pauses use the system clock (see [`SegmentStore::with_clock`]).
    pub fn new(inner: Arc<dyn ObjectStore>, config: StoreConfig) -> Self {
        Self {
            inner,
            config,
            clock: Arc::new(SystemClock),
        }
    }

    /// Uses `clock` for backoff pauses and timeouts.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The wrapped store.
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    /// Writes `bytes` at `key` unless the key exists (`PutMode::Create`); in parts above
    /// [`StoreConfig::multipart_threshold`] (see the module doc for that path's guarantee).
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] after the retries are exhausted, or when the key holds
    /// different bytes.
    pub async fn put_create(&self, key: &str, bytes: Bytes) -> Result<(), SegmentError> {
        if bytes.len() > self.config.multipart_threshold {
            return self.put_create_multipart(key, bytes).await;
        }
        let path = Path::from(key);
        let len = bytes.len() as u64;
        let mut attempt = 0u32;
        let mut backoff = self.config.initial_backoff;
        loop {
            attempt += 1;
            let payload = PutPayload::from(bytes.clone());
            let r = self
                .timed("put", || {
                    self.inner.put_opts(&path, payload, PutMode::Create.into())
                })
                .await;
            match r {
                Ok(_) => {
                    metrics::OBJECT_STORE_BYTES
                        .with_label_values(&["put"])
                        .inc_by(len);
                    return Ok(());
                }
                Err(object_store::Error::AlreadyExists { .. }) => {
                    return self.resolve_existing(key, &bytes, attempt).await;
                }
                Err(e) if is_retryable(&e) && attempt < self.config.max_attempts.max(1) => {
                    warn!(key, attempt, error = %e, "put failed, retrying");
                    metrics::OBJECT_STORE_REQUESTS
                        .with_label_values(&["put", "retry"])
                        .inc();
                    self.clock.sleep(backoff).await;
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
                Err(e) => return Err(object_error("put", key, e)),
            }
        }
    }

    /// The key exists: ours if an earlier attempt landed, someone else's otherwise.
    async fn resolve_existing(
        &self,
        key: &str,
        bytes: &Bytes,
        attempt: u32,
    ) -> Result<(), SegmentError> {
        let stored = self.get(key).await?;
        if stored == *bytes {
            debug!(key, attempt, "create-only put found its own object");
            metrics::OBJECT_STORE_BYTES
                .with_label_values(&["put"])
                .inc_by(bytes.len() as u64);
            return Ok(());
        }
        Err(SegmentError::ObjectStore {
            op: "put",
            key: key.to_owned(),
            source: Arc::new(object_store::Error::AlreadyExists {
                path: key.to_owned(),
                source: "the key holds different bytes".into(),
            }),
        })
    }

    /// Multipart `put_create`: HEAD (an existing key is resolved as `AlreadyExists`), then
    /// upload the parts and complete; a failed attempt is aborted and retried whole.
    async fn put_create_multipart(&self, key: &str, bytes: Bytes) -> Result<(), SegmentError> {
        let path = Path::from(key);
        let mut attempt = 0u32;
        let mut backoff = self.config.initial_backoff;
        loop {
            attempt += 1;
            let r = match self.timed("head", || self.inner.head(&path)).await {
                Ok(_) => return self.resolve_existing(key, &bytes, attempt).await,
                Err(object_store::Error::NotFound { .. }) => self.upload_parts(&path, &bytes).await,
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => {
                    metrics::OBJECT_STORE_BYTES
                        .with_label_values(&["put"])
                        .inc_by(bytes.len() as u64);
                    return Ok(());
                }
                Err(e) if is_retryable(&e) && attempt < self.config.max_attempts.max(1) => {
                    warn!(key, attempt, error = %e, "multipart put failed, retrying");
                    metrics::OBJECT_STORE_REQUESTS
                        .with_label_values(&["put_multipart", "retry"])
                        .inc();
                    self.clock.sleep(backoff).await;
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
                Err(e) => return Err(object_error("put", key, e)),
            }
        }
    }

    /// One multipart upload of `bytes`: parts of [`StoreConfig::multipart_part_size`] (at
    /// least [`MIN_PART_SIZE`]), a bounded number in flight, then the completion. On any
    /// failure the upload is aborted (best effort) and the first error returned.
    async fn upload_parts(&self, path: &Path, bytes: &Bytes) -> object_store::Result<()> {
        let mut upload = self
            .timed("put_multipart", || {
                self.inner
                    .put_multipart_opts(path, PutMultipartOptions::default())
            })
            .await?;
        let part_size = self.config.multipart_part_size.max(MIN_PART_SIZE);
        // `put_part` only numbers the part; the returned futures do the work when polled.
        let mut parts = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let end = (start + part_size).min(bytes.len());
            parts.push(upload.put_part(PutPayload::from(bytes.slice(start..end))));
            start = end;
        }
        let limit = self.config.multipart_concurrency.max(1);
        let mut waiting = parts.into_iter();
        let mut running = FuturesUnordered::new();
        let mut sent = Ok(());
        loop {
            while running.len() < limit {
                let Some(part) = waiting.next() else { break };
                running.push(self.timed("put_part", move || part));
            }
            match running.next().await {
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    sent = Err(e);
                    break;
                }
                None => break,
            }
        }
        drop(running);
        let r = match sent {
            Ok(()) => self.timed("complete_multipart", || upload.complete()).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) => {
                if let Err(abort) = self.timed("abort_multipart", || upload.abort()).await {
                    debug!(key = path.as_ref(), error = %abort, "abort of a failed multipart upload failed");
                }
                Err(e)
            }
        }
    }

    /// Reads a whole object.
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] (including not found) after retries.
    pub async fn get(&self, key: &str) -> Result<Bytes, SegmentError> {
        let path = Path::from(key);
        let bytes = self
            .retry("get", key, || async {
                self.inner.get(&path).await?.bytes().await
            })
            .await?;
        metrics::OBJECT_STORE_BYTES
            .with_label_values(&["get"])
            .inc_by(bytes.len() as u64);
        Ok(bytes)
    }

    /// Reads `range` of an object (shorter at the end of the object).
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] (including not found) after retries.
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, SegmentError> {
        let path = Path::from(key);
        let bytes = self
            .retry("get_range", key, || {
                self.inner.get_range(&path, range.clone())
            })
            .await?;
        metrics::OBJECT_STORE_BYTES
            .with_label_values(&["get_range"])
            .inc_by(bytes.len() as u64);
        Ok(bytes)
    }

    /// Deletes an object; deleting a missing object succeeds.
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] after retries.
    pub async fn delete(&self, key: &str) -> Result<(), SegmentError> {
        let path = Path::from(key);
        match self.retry("delete", key, || self.inner.delete(&path)).await {
            Err(SegmentError::ObjectStore { source, .. })
                if matches!(*source, object_store::Error::NotFound { .. }) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// Lists every object under `prefix` (path-segment prefix), sorted by key.
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] after retries.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ListedObject>, SegmentError> {
        let path = Path::from(prefix);
        let mut out: Vec<ListedObject> = self
            .retry("list", prefix, || async {
                self.inner
                    .list(Some(&path))
                    .map_ok(|m| ListedObject {
                        key: m.location.to_string(),
                        size: m.size,
                        last_modified_ms: m.last_modified.timestamp_millis(),
                    })
                    .try_collect::<Vec<_>>()
                    .await
            })
            .await?;
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    async fn retry<T, F, Fut>(
        &self,
        op: &'static str,
        key: &str,
        mut f: F,
    ) -> Result<T, SegmentError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = object_store::Result<T>>,
    {
        let mut attempt = 0u32;
        let mut backoff = self.config.initial_backoff;
        loop {
            attempt += 1;
            match self.timed(op, &mut f).await {
                Ok(v) => return Ok(v),
                Err(e) if is_retryable(&e) && attempt < self.config.max_attempts.max(1) => {
                    debug!(key, op, attempt, error = %e, "object store call failed, retrying");
                    metrics::OBJECT_STORE_REQUESTS
                        .with_label_values(&[op, "retry"])
                        .inc();
                    self.clock.sleep(backoff).await;
                    backoff = (backoff * 2).min(self.config.max_backoff);
                }
                Err(e) => return Err(object_error(op, key, e)),
            }
        }
    }

    /// One attempt with the per-attempt timeout and metrics.
    async fn timed<T, F, Fut>(&self, op: &'static str, f: F) -> object_store::Result<T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = object_store::Result<T>>,
    {
        let started = Instant::now();
        let timeout = self.clock.sleep(self.config.op_timeout);
        let r = tokio::select! {
            r = f() => r,
            () = timeout => Err(object_store::Error::Generic {
                store: "stratus",
                source: format!("{op} timed out after {:?}", self.config.op_timeout).into(),
            }),
        };
        metrics::OBJECT_STORE_SECONDS
            .with_label_values(&[op])
            .observe(started.elapsed().as_secs_f64());
        let result = if r.is_ok() { "ok" } else { "error" };
        metrics::OBJECT_STORE_REQUESTS
            .with_label_values(&[op, result])
            .inc();
        r
    }
}

/// Transient failures only: never `AlreadyExists`, `Precondition`, `NotFound` and the like.
fn is_retryable(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::Generic { .. } | object_store::Error::JoinError { .. }
    )
}

fn object_error(op: &'static str, key: &str, e: object_store::Error) -> SegmentError {
    SegmentError::ObjectStore {
        op,
        key: key.to_owned(),
        source: Arc::new(e),
    }
}

/// True when `e` says the object does not exist.
pub fn is_not_found(e: &SegmentError) -> bool {
    match e {
        SegmentError::ObjectStore { source, .. } => {
            matches!(**source, object_store::Error::NotFound { .. })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod multipart_tests;
