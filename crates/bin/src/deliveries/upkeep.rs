//! The worker's upkeep beside its deliveries: the endpoints of ended rotation chains
//! closed, each endpoint's backlog bounded, the backlog's gauges, and the metrics.

use std::time::Duration;

use animal_store_domain::Deliverer;

/// How often the worker ends the endpoints whose key's rotation chain ended (see
/// [`Deliverer::close`]): within a second, as a key's own refusal.
pub(super) const CLOSE_EVERY: Duration = Duration::from_secs(1);
/// The most deliveries that wait for one endpoint; beyond, the soonest due are dropped.
pub(super) const MAX_WAITING: usize = 10_000;
/// How many deliveries one write drops at most.
pub(super) const DROP_BATCH: usize = 500;
/// How often a busy worker refreshes the backlog's gauges, at most.
pub(super) const BACKLOG_EVERY: Duration = Duration::from_secs(5);

/// How long the worker waits before it refreshes the backlog's gauges again, after a read
/// of the backlog that took `took`: [`BACKLOG_EVERY`], or a hundred times as long as the
/// read when that is longer. The read counts the deliveries waiting, a scan of their table;
/// under a backlog of millions, the gauges move less often and cost the database at most a
/// hundredth of one connection's time.
pub(super) fn backlog_interval(took: Duration) -> Duration {
    Ord::max(BACKLOG_EVERY, took.saturating_mul(100))
}

/// Deliveries by outcome (`delivered`, `http_error`, `timeout`, `connection_error`,
/// `refused_address`).
pub(super) const DELIVERIES_METRIC: &str = "animal_store_webhook_deliveries_total";
/// Deliveries dropped without an attempt, by reason: `endpoint_disabled` (its key's rotation chain
/// ended, or an operator disabled it) or `backlog_full`.
pub(super) const DROPPED_METRIC: &str = "animal_store_webhook_deliveries_dropped_total";
/// Endpoints the service disabled because their key's rotation chain ended.
pub(super) const ENDED_METRIC: &str = "animal_store_webhook_endpoints_ended_total";
/// Deliveries waiting: neither delivered nor given up.
pub(super) const PENDING_METRIC: &str = "animal_store_webhook_deliveries_pending";
/// How long the oldest waiting delivery has waited, in seconds.
pub(super) const OLDEST_METRIC: &str = "animal_store_webhook_oldest_pending_seconds";

/// Describes the worker's metrics to the recorder.
pub fn describe_metrics() {
    metrics::describe_counter!(DELIVERIES_METRIC, "Webhook delivery attempts, by outcome.");
    metrics::describe_counter!(
        DROPPED_METRIC,
        "Webhook deliveries dropped without an attempt, by reason."
    );
    metrics::describe_counter!(
        ENDED_METRIC,
        "Webhook endpoints disabled because their key's rotation chain has no live key left."
    );
    metrics::describe_gauge!(PENDING_METRIC, "Webhook deliveries waiting to be delivered.");
    metrics::describe_gauge!(
        OLDEST_METRIC,
        metrics::Unit::Seconds,
        "How long the oldest waiting webhook delivery has waited."
    );
}

/// Ends the endpoints of ended rotation chains, drops what waits for endpoints disabled for
/// good, and counts it.
pub(super) async fn close(deliverer: &Deliverer) {
    match deliverer.close(DROP_BATCH).await {
        Ok(closed) => {
            if closed.endpoints > 0 {
                tracing::info!(
                    endpoints = closed.endpoints,
                    "disabled the webhook endpoints of rotation chains with no live key left"
                );
                metrics::counter!(ENDED_METRIC).increment(closed.endpoints);
            }
            count_dropped("endpoint_disabled", closed.dropped);
        }
        Err(err) => tracing::warn!(error = %err, "ending webhook deliveries failed"),
    }
}

/// Holds each endpoint's backlog to [`MAX_WAITING`], and counts what it dropped.
pub(super) async fn trim(deliverer: &Deliverer) {
    match deliverer.trim(MAX_WAITING, DROP_BATCH).await {
        Ok(0) => {}
        Ok(dropped) => {
            tracing::warn!(dropped, "dropped webhook deliveries beyond an endpoint's backlog");
            count_dropped("backlog_full", u64::try_from(dropped).unwrap_or(u64::MAX));
        }
        Err(err) => tracing::warn!(error = %err, "trimming webhook backlogs failed"),
    }
}

/// Counts `dropped` deliveries dropped for `reason`.
fn count_dropped(reason: &'static str, dropped: u64) {
    if dropped > 0 {
        metrics::counter!(DELIVERIES_METRIC, "outcome" => "dropped").increment(dropped);
        metrics::counter!(DROPPED_METRIC, "reason" => reason).increment(dropped);
    }
}

/// Sets the backlog's gauges.
pub(super) async fn report_backlog(deliverer: &Deliverer) {
    match deliverer.backlog().await {
        Ok(backlog) => {
            #[expect(clippy::cast_precision_loss, reason = "a gauge")]
            metrics::gauge!(PENDING_METRIC).set(backlog.pending as f64);
            let waited = backlog
                .oldest
                .map(|oldest| (chrono::Utc::now() - oldest).num_milliseconds().max(0));
            #[expect(clippy::cast_precision_loss, reason = "a gauge")]
            metrics::gauge!(OLDEST_METRIC).set(waited.unwrap_or(0) as f64 / 1000.0);
        }
        Err(err) => tracing::warn!(error = %err, "reading the webhook backlog failed"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_backlog_is_read_at_most_a_hundredth_of_the_time() {
        use std::time::Duration;
        assert_eq!(super::backlog_interval(Duration::from_millis(2)), super::BACKLOG_EVERY);
        assert_eq!(super::backlog_interval(Duration::from_millis(50)), super::BACKLOG_EVERY);
        assert_eq!(super::backlog_interval(Duration::from_millis(80)), Duration::from_secs(8));
        assert_eq!(super::backlog_interval(Duration::MAX), Duration::MAX);
    }
}
