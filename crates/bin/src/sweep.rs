//! The sweep each instance runs in the background: it removes the idempotency records, and
//! the events and webhook attempts older than their retention (docs/webhooks.md,
//! "Retention"), once at start before the delivery worker claims, then every [`INTERVAL`].

use std::time::Duration;

use animal_store_domain::RepositoryError;

/// How often the idempotency records, and the events and webhook attempts older than their
/// retention, are removed.
pub const INTERVAL: Duration = Duration::from_secs(10 * 60);
/// The same on `memory://`, where a sweep costs little: a harness that moves the clock file
/// past a retention sees what it removes within a second.
pub const MEMORY_INTERVAL: Duration = Duration::from_secs(1);
/// How many records or events one sweep transaction removes at most: a short write, so that
/// the writes queued meanwhile wait little.
const BATCH: usize = 500;

/// Removes expired idempotency records, events and webhook attempts `every` ([`INTERVAL`] or
/// [`MEMORY_INTERVAL`]), after the [`once`] of the start, until aborted.
pub async fn repeat(
    idempotency: animal_store_domain::IdempotencyService,
    events: animal_store_domain::EventService,
    deliverer: animal_store_domain::Deliverer,
    every: Duration,
) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        ticks.tick().await;
        once(&idempotency, &events, &deliverer).await;
    }
}

/// Removes the expired idempotency records, events and webhook attempts, each in batches of
/// [`BATCH`] until none is left. Attempts are kept as long as events, swept by their own age
/// whatever number of events expire. A failure is logged: the next sweep tries again.
pub async fn once(
    idempotency: &animal_store_domain::IdempotencyService,
    events: &animal_store_domain::EventService,
    deliverer: &animal_store_domain::Deliverer,
) {
    report("idempotency records", idempotency.sweep(BATCH).await);
    report("events", events.sweep(BATCH).await);
    report("webhook attempts", deliverer.sweep(events.kept_since(), BATCH).await);
}

/// Logs what one part of a sweep removed (`removed expired events`, at `INFO`), or that it
/// failed (`removing expired events failed`, at `WARN`).
fn report(what: &str, swept: Result<usize, RepositoryError>) {
    match swept {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed expired {what}"),
        Err(err) => tracing::warn!(error = %err, "removing expired {what} failed"),
    }
}
