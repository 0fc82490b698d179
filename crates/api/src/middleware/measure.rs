//! Layer 9: the request metrics, around everything else, so that every response counts
//! with the status the client sees.

use std::sync::Arc;
use std::time::Instant;

use metrics::gauge;
use poem::{Endpoint, Request, Response};

use super::{respond, routes};
use crate::telemetry::{ACTIVE_REQUESTS, method_label, record_request};

/// Layer 9: counts the request as active while it runs, then records its duration by
/// method, route template and status.
pub async fn record_metrics<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let method = method_label(req.method());
    let route = routes(&req)
        .and_then(|routes| routes.find(req.uri().path()).map(|route| route.template().to_owned()));
    let started = Instant::now();
    let active = Active::new(gauge!(ACTIVE_REQUESTS, "http_request_method" => method));
    let response = respond(ep.as_ref(), req).await;
    drop(active);
    record_request(method, route.as_deref(), response.status(), started.elapsed());
    Ok(response)
}

/// One active request, counted until dropped: a request whose client hangs up counts down
/// too.
struct Active(metrics::Gauge);

impl Active {
    fn new(gauge: metrics::Gauge) -> Self {
        gauge.increment(1.0);
        Self(gauge)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}
