//! The request metrics, around everything else, so that every response counts
//! with the status the client sees.

use std::sync::Arc;
use std::time::Instant;

use poem::{Request, Response};

use super::{Next, resolved, respond};
use crate::telemetry::{RequestMetrics, method_label};

/// Counts the request as active while it runs, then records its duration by
/// method, route template and status.
pub async fn record_metrics(next: Next, req: Request) -> poem::Result<Response> {
    let Some(metrics) = req.data::<Arc<RequestMetrics>>().cloned() else {
        return Ok(respond(&next, req).await);
    };
    let method = method_label(req.method());
    let resolved = resolved(&req);
    let route = resolved.as_ref().and_then(|r| Some((r.index()?, r.route()?.template())));
    let started = Instant::now();
    let active = Active::new(metrics.active(method));
    let response = respond(&next, req).await;
    drop(active);
    metrics.record(method, route, response.status(), started.elapsed());
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
