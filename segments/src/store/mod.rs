//! [`SegmentStore`]: the only code that calls `object_store`.
//!
//! Every call has a per-attempt timeout and is retried with exponential backoff while the
//! error is transient. `AlreadyExists`, `Precondition` and `NotFound` are never retried
//! (they are answers, not failures). A create-only PUT that meets `AlreadyExists` is
//! ambiguous when an earlier attempt may have landed: the object is read back and compared
//! with what we meant to write, so an upload is never reported failed when it succeeded,
//! nor successful when someone else's bytes are there.

pub mod faults;

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload};
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
    /// Time limit of one attempt.
    pub op_timeout: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            op_timeout: Duration::from_secs(30),
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

    /// Writes `bytes` at `key` unless the key exists (`PutMode::Create`).
    ///
    /// # Errors
    /// [`SegmentError::ObjectStore`] after the retries are exhausted, or when the key holds
    /// different bytes.
    pub async fn put_create(&self, key: &str, bytes: Bytes) -> Result<(), SegmentError> {
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
                    // Ours if an earlier attempt landed; someone else's otherwise.
                    let stored = self.get(key).await?;
                    if stored == bytes {
                        debug!(key, attempt, "create-only put found its own object");
                        metrics::OBJECT_STORE_BYTES
                            .with_label_values(&["put"])
                            .inc_by(len);
                        return Ok(());
                    }
                    return Err(SegmentError::ObjectStore {
                        op: "put",
                        key: key.to_owned(),
                        source: Arc::new(object_store::Error::AlreadyExists {
                            path: key.to_owned(),
                            source: "the key holds different bytes".into(),
                        }),
                    });
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
