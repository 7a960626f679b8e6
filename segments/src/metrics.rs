//! Prometheus metrics of the storage layer, registered once in the default registry
//! (exported by the gateway's `/metrics`). Labels have bounded values only.

use std::sync::LazyLock;

use prometheus::{
    Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, register_histogram,
    register_histogram_vec, register_int_counter, register_int_counter_vec, register_int_gauge,
    register_int_gauge_vec,
};

/// Object store calls by operation and result (`ok`, `error`, `retry`).
pub static OBJECT_STORE_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_segments_object_store_requests_total",
        "Object store requests by operation and result",
        &["op", "result"]
    )
    .expect("metric registers once")
});

/// Object store call latency by operation.
pub static OBJECT_STORE_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    register_histogram_vec!(
        "stratus_segments_object_store_seconds",
        "Object store request latency",
        &["op"]
    )
    .expect("metric registers once")
});

/// Bytes moved to and from the object store by operation.
pub static OBJECT_STORE_BYTES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_segments_object_store_bytes_total",
        "Bytes written to or read from the object store",
        &["op"]
    )
    .expect("metric registers once")
});

/// Cache lookups by cache (`tail`, `footer`, `block`, `recent_index`) and result (`hit`, `miss`).
pub static CACHE_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_segments_cache_requests_total",
        "Cache lookups by cache and result",
        &["cache", "result"]
    )
    .expect("metric registers once")
});

/// Time from seal to meta commit of a segment.
pub static COMMIT_SECONDS: LazyLock<Histogram> = LazyLock::new(|| {
    register_histogram!(
        "stratus_segments_commit_seconds",
        "Time from seal to meta commit of a segment"
    )
    .expect("metric registers once")
});

/// Segments committed.
pub static SEGMENTS_COMMITTED: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "stratus_segments_committed_total",
        "Segments committed in meta"
    )
    .expect("metric registers once")
});

/// Segments whose upload or commit failed.
pub static SEGMENTS_FAILED: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "stratus_segments_failed_total",
        "Segments that failed to commit"
    )
    .expect("metric registers once")
});

/// Bytes appended but not yet durable.
pub static BUFFERED_BYTES: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "stratus_segments_buffered_bytes",
        "Bytes appended, not yet durable"
    )
    .expect("metric registers once")
});

/// Segment uploads in flight (the writer's upload queue depth).
pub static UPLOADS_IN_FLIGHT: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "stratus_segments_uploads_in_flight",
        "Segment uploads started and not yet finished"
    )
    .expect("metric registers once")
});

/// Configured capacity of each cache (`tail`, `footer`, `block`), bytes. Set by
/// [`crate::cache::Cache::publish_metrics`].
pub static CACHE_CAPACITY_BYTES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "stratus_segments_cache_capacity_bytes",
        "Configured capacity of each cache",
        &["cache"]
    )
    .expect("metric registers once")
});

/// Current weighted size of each cache, bytes. Set by
/// [`crate::cache::Cache::publish_metrics`].
pub static CACHE_WEIGHTED_BYTES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "stratus_segments_cache_weighted_bytes",
        "Current weighted size of each cache",
        &["cache"]
    )
    .expect("metric registers once")
});

/// Entries in each cache. Set by [`crate::cache::Cache::publish_metrics`].
pub static CACHE_ENTRIES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "stratus_segments_cache_entries",
        "Entries in each cache",
        &["cache"]
    )
    .expect("metric registers once")
});

/// Counts a cache lookup.
pub(crate) fn cache_lookup(cache: &str, hit: bool) {
    CACHE_REQUESTS
        .with_label_values(&[cache, if hit { "hit" } else { "miss" }])
        .inc();
}
