//! The metrics of the API (`docs/operations.md#metrics`), recorded through the `metrics`
//! facade: the binary installs a Prometheus recorder and serves it at `GET /metrics`;
//! without a recorder, recording costs nothing.
//!
//! Names follow OpenTelemetry's HTTP semantic conventions. No label ever holds a key, a key
//! id, a raw path or an address: a route is its template, a method outside the standard
//! ones is `_OTHER`, and a request that matches no route has no `http_route` label. The
//! number of series is therefore fixed, whatever clients send.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram,
    gauge, histogram,
};
use poem::http::{Method, StatusCode};

/// Where the metrics are served, outside `/v1`.
pub const PATH: &str = "/metrics";

/// The histogram of request durations, by method, route and status.
pub const REQUEST_DURATION: &str = "http_server_request_duration_seconds";
/// The gauge of requests being handled, by method.
pub const ACTIVE_REQUESTS: &str = "http_server_active_requests";
/// The counter of rate-limit decisions, by outcome.
pub const RATE_LIMIT_DECISIONS: &str = "animal_store_rate_limit_decisions_total";
/// The counter of connections refused at the connection cap.
pub const CONNECTIONS_REFUSED: &str = "animal_store_connections_refused_total";
/// The counter of pauses of the accept loop for want of file descriptors.
pub const ACCEPT_BACKOFFS: &str = "animal_store_accept_backoffs_total";
/// The gauge of subjects whose rate-limit counters are kept.
pub const RATE_LIMITER_SUBJECTS: &str = "animal_store_rate_limiter_subjects";

/// The buckets of [`REQUEST_DURATION`], in seconds: OpenTelemetry's advice for HTTP servers.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];

/// What serves `GET /metrics`: the binary's recorder, rendered in the Prometheus text
/// format.
pub trait MetricsExporter: Send + Sync {
    /// The exposition, after bringing the gauges read at scrape time up to date.
    fn render(&self) -> String;
}

/// What a rate-limit decision came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The request went through.
    Admitted,
    /// A key over its quota.
    Limited,
    /// A suspended key.
    Suspended,
    /// A client address over its quota for requests without a valid key.
    AddressLimited,
    /// Refused because the shared counters could not be reached (`--limiter-failure closed`).
    StoreUnavailable,
    /// Answered 503 because the key store could not tell whether the key is valid: counted
    /// against nothing.
    KeyStoreUnavailable,
}

impl Outcome {
    /// How many outcomes there are: each one's [`Outcome::index`] is below it.
    const COUNT: usize = 6;

    /// The outcome's place among the [`Outcome::COUNT`].
    fn index(self) -> usize {
        match self {
            Self::Admitted => 0,
            Self::Limited => 1,
            Self::Suspended => 2,
            Self::AddressLimited => 3,
            Self::StoreUnavailable => 4,
            Self::KeyStoreUnavailable => 5,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Admitted => "admitted",
            Self::Limited => "limited",
            Self::Suspended => "suspended",
            Self::AddressLimited => "address_limited",
            Self::StoreUnavailable => "store_unavailable",
            Self::KeyStoreUnavailable => "key_store_unavailable",
        }
    }
}

/// Describes the metrics to the recorder: their help text and units.
pub fn describe() {
    describe_histogram!(REQUEST_DURATION, Unit::Seconds, "Duration of HTTP server requests.");
    describe_gauge!(ACTIVE_REQUESTS, "Number of active HTTP server requests.");
    describe_counter!(RATE_LIMIT_DECISIONS, "Rate-limit decisions, by outcome.");
    describe_gauge!(RATE_LIMITER_SUBJECTS, "Subjects whose rate-limit counters are kept.");
    describe_counter!(CONNECTIONS_REFUSED, "Connections refused at the connection cap.");
    describe_counter!(
        ACCEPT_BACKOFFS,
        "Pauses of 100 ms of the accept loop, out of file descriptors or memory."
    );
}

/// The `http_request_method` label: the method, or `_OTHER` for one outside the standard
/// set, so that clients cannot make up series.
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

/// A duration series: method, route (its position in the route table), status.
type SeriesKey = (&'static str, Option<usize>, u16);

/// The request metrics of one app: each histogram (one per method, route and status) and
/// gauge (one per method) registered with the recorder on first use, then found again
/// without building its labels. The set is bounded (standard methods, the route table's
/// routes, statuses), so it never grows with what clients send.
#[derive(Default)]
pub struct RequestMetrics {
    histograms: RwLock<HashMap<SeriesKey, Histogram>>,
    active: RwLock<HashMap<&'static str, Gauge>>,
    /// The counter of each rate-limit decision's outcome, by [`Outcome`]'s position.
    decisions: [OnceLock<Counter>; Outcome::COUNT],
}

impl RequestMetrics {
    /// Counts a rate-limit decision.
    pub fn decided(&self, outcome: Outcome) {
        self.decisions[outcome.index()]
            .get_or_init(|| counter!(RATE_LIMIT_DECISIONS, "outcome" => outcome.label()))
            .increment(1);
    }

    /// The gauge of active requests of `method`.
    pub fn active(&self, method: &'static str) -> Gauge {
        let found = self.active.read().unwrap_or_else(PoisonError::into_inner).get(method).cloned();
        found.unwrap_or_else(|| {
            let gauge = gauge!(ACTIVE_REQUESTS, "http_request_method" => method);
            let mut active = self.active.write().unwrap_or_else(PoisonError::into_inner);
            active.entry(method).or_insert(gauge).clone()
        })
    }

    /// Records one request's duration; `route` is the route's position in the route table
    /// and its template, `None` for a request that matched no route.
    pub fn record(
        &self,
        method: &'static str,
        route: Option<(usize, &str)>,
        status: StatusCode,
        duration: Duration,
    ) {
        let key = (method, route.map(|(index, _)| index), status.as_u16());
        let seconds = duration.as_secs_f64();
        let found =
            self.histograms.read().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
        let histogram = found.unwrap_or_else(|| {
            let histogram = register(method, route.map(|(_, template)| template), status);
            let mut histograms = self.histograms.write().unwrap_or_else(PoisonError::into_inner);
            histograms.entry(key).or_insert(histogram).clone()
        });
        histogram.record(seconds);
    }
}

/// The histogram of one method, route template and status.
fn register(method: &'static str, route: Option<&str>, status: StatusCode) -> Histogram {
    let status = status.as_u16().to_string();
    if let Some(route) = route {
        return histogram!(
            REQUEST_DURATION,
            "http_request_method" => method,
            "http_route" => route.to_owned(),
            "http_response_status_code" => status
        );
    }
    histogram!(REQUEST_DURATION, "http_request_method" => method, "http_response_status_code" => status)
}

/// The exporter of a server, shared by every request.
pub type SharedExporter = Arc<dyn MetricsExporter>;
