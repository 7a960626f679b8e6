//! Prometheus metrics of the gateway, registered once in the default registry and exported
//! with the storage layer's by `/metrics` (`metrics_http.rs`). Labels have bounded values
//! only: request- and response-code names (`UNKNOWN` for numbers the protocol crate does not
//! name), fixed result words. Never a topic, group, client id or key.

use std::sync::LazyLock;

use prometheus::{
    IntCounter, IntCounterVec, IntGauge, register_int_counter, register_int_counter_vec,
    register_int_gauge,
};
use stratus_compat::{RequestCode, ResponseCode};

/// Requests answered, by request code and response code.
pub(crate) static REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_requests_total",
        "Requests answered, by request code and response code",
        &["code", "result"]
    )
    .expect("metric registers once")
});

/// Kafka requests received, by API.
pub(crate) static KAFKA_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_kafka_requests_total",
        "Kafka requests received, by API",
        &["api"]
    )
    .expect("metric registers once")
});

/// Kafka records produced, by outcome: `acknowledged` (durable) or `failed`.
pub(crate) static KAFKA_RECORDS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_kafka_produced_records_total",
        "Kafka records produced: acknowledged (durable) or failed",
        &["result"]
    )
    .expect("metric registers once")
});

/// Send requests (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) by outcome:
/// `acknowledged` (answered SUCCESS: durable) or `failed` (any other answer).
pub(crate) static SENDS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_sends_total",
        "Send requests acknowledged (durable) or failed",
        &["result"]
    )
    .expect("metric registers once")
});

/// Client connections open, over every port.
pub(crate) static CONNECTIONS: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!("stratus_gateway_connections", "Client connections open")
        .expect("metric registers once")
});

/// Connections accepted and closed at once, by reason (`address_limit`: its client
/// address had `limits.max_connections_per_ip`; `node_limit`: the node was full and no
/// connection could be evicted).
pub(crate) static CONNECTIONS_REFUSED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_connections_refused_total",
        "Connections closed at once on accept, by the limit that refused them",
        &["reason"]
    )
    .expect("metric registers once")
});

/// Connections closed to make room for a new one (the node at `limits.max_connections`;
/// the one longest without a request goes).
pub(crate) static CONNECTIONS_EVICTED: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "stratus_gateway_connections_evicted_total",
        "Connections evicted (longest without a request) to admit a new one"
    )
    .expect("metric registers once")
});

/// Requests in progress on the node (set on scrape from the in-flight budget; parked
/// pulls are not counted while parked).
pub(crate) static REQUESTS_IN_FLIGHT: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "stratus_gateway_requests_in_flight",
        "Requests in progress (parked pulls excluded)"
    )
    .expect("metric registers once")
});

/// Pulls parked for long polling (set on scrape from the parked-pull budget).
pub(crate) static PARKED_PULLS: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "stratus_gateway_parked_pulls",
        "Pulls parked for long polling"
    )
    .expect("metric registers once")
});

/// Retention passes by result (`ok`, `error`).
pub(crate) static RETENTION_PASSES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_retention_passes_total",
        "Retention passes over one shard, by result",
        &["result"]
    )
    .expect("metric registers once")
});

/// Sections removed from meta by retention.
pub(crate) static RETENTION_SECTIONS: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "stratus_gateway_retention_sections_deleted_total",
        "Segment sections removed from meta by retention"
    )
    .expect("metric registers once")
});

/// Objects deleted from the object store, by reason (`retention`: released by a retention
/// pass; `orphan`: never committed, or released and not deleted before).
pub(crate) static OBJECTS_DELETED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "stratus_gateway_objects_deleted_total",
        "Segment objects deleted from the object store, by reason",
        &["reason"]
    )
    .expect("metric registers once")
});

/// Counts one answered request.
pub(crate) fn observe_response(request: RequestCode, response: i32) {
    let response = ResponseCode::from_i32(response);
    REQUESTS
        .with_label_values(&[request.name(), response.name()])
        .inc();
    if matches!(
        request,
        RequestCode::SendMessage | RequestCode::SendMessageV2 | RequestCode::SendBatchMessage
    ) {
        let result = if response == ResponseCode::Success {
            "acknowledged"
        } else {
            "failed"
        };
        SENDS.with_label_values(&[result]).inc();
    }
}

/// Counts an open connection for as long as it lives.
#[derive(Debug)]
pub(crate) struct ConnectionOpen(());

impl ConnectionOpen {
    pub(crate) fn new() -> Self {
        CONNECTIONS.inc();
        Self(())
    }
}

impl Drop for ConnectionOpen {
    fn drop(&mut self) {
        CONNECTIONS.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_counted_by_outcome_and_requests_by_code_names() {
        let acked = SENDS.with_label_values(&["acknowledged"]).get();
        let failed = SENDS.with_label_values(&["failed"]).get();
        observe_response(RequestCode::SendMessageV2, 0);
        observe_response(RequestCode::SendBatchMessage, 10);
        observe_response(RequestCode::PullMessage, 19);
        observe_response(RequestCode::from_i32(99_999), 99_999);
        assert_eq!(SENDS.with_label_values(&["acknowledged"]).get(), acked + 1);
        assert_eq!(SENDS.with_label_values(&["failed"]).get(), failed + 1);
        assert!(
            REQUESTS
                .with_label_values(&["SEND_BATCH_MESSAGE", "FLUSH_DISK_TIMEOUT"])
                .get()
                >= 1
        );
        assert!(REQUESTS.with_label_values(&["UNKNOWN", "UNKNOWN"]).get() >= 1);
    }

    #[test]
    fn a_connection_is_counted_while_open() {
        let guard = ConnectionOpen::new();
        assert!(CONNECTIONS.get() >= 1);
        drop(guard);
    }
}
