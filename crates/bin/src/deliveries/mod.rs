//! The delivery worker each instance runs beside its server: it queues the deliveries of
//! the events written since it last looked ([`FAN_OUT_BATCH`] events a write, after their
//! commit, so that a write costs the same however many endpoints want its event), claims
//! the deliveries due, makes their attempts concurrently, and records what came of them
//! (`docs/webhooks.md`).
//!
//! Up to [`IN_FLIGHT`] attempts at once, shared equally among the owners with deliveries
//! due: each of N such owners holds at most an (N+1)th, so owners whose receivers hang hold
//! at most N/(N+1) of them, and another owner's deliveries go on. At most [`PER_ENDPOINT`]
//! attempts of one endpoint's, and one while its attempts time out, until one is delivered:
//! an endpoint that hangs leaves its owner's share to its others. Each [`CLOSE_EVERY`], the
//! worker ends the endpoints whose key's rotation chain ended and drops what waits for
//! endpoints disabled for good; each endpoint's backlog is held to
//! [`MAX_WAITING`](upkeep::MAX_WAITING), what is beyond it dropped (both recorded as
//! `dropped` attempts and counted in [`DROPPED_METRIC`](upkeep::DROPPED_METRIC)). Claims and
//! records are writes, and the writer is shared with the requests: the worker claims for a
//! batch of room ([`CLAIM_BATCH`] attempts ended, or [`IDLE`] passed; one claim each
//! [`CLAIM_EVERY`] at most), and records outcomes in batches: once [`RECORD_BATCH`] have ended,
//! once the first of them ended [`RECORD_EVERY`] ago, or at once when no attempt is left in
//! flight. Idle, it looks for due deliveries every [`IDLE`].
//!
//! The worker runs on a thread of its own, at the lowest CPU priority ([`NICENESS`]): when
//! the cores are busy, requests go first and deliveries take what is left, so that an
//! endpoint's deliveries never slow the API down; they catch up when the load falls.

use std::time::Duration;

use anyhow::Context as _;

use animal_store_domain::{Attempted, ClaimLimits, Deliverer, KeyId};
use tokio::task::JoinSet;

mod upkeep;

pub use upkeep::describe_metrics;
use upkeep::{
    BACKLOG_EVERY, CLOSE_EVERY, DELIVERIES_METRIC, backlog_interval, close, report_backlog, trim,
};

/// The most events whose deliveries one write of the worker queues (fewer when they would
/// be more than 1,024 deliveries); it writes again at once while more wait, up to
/// [`FAN_OUT_WRITES`] times a turn.
pub const FAN_OUT_BATCH: usize = 1024;
/// The most fan-out writes in one turn of the worker, so that claims and records go on
/// while a backlog of events is fanned out.
pub const FAN_OUT_WRITES: usize = 2;

/// The most attempts in flight at once.
pub const IN_FLIGHT: usize = 64;
/// The most attempts in flight to one endpoint.
pub const PER_ENDPOINT: usize = 8;
/// How long a claim holds a delivery: longer than an attempt may take (10 s), so that only
/// an instance that died mid-attempt lets another attempt it again.
pub const LEASE: Duration = Duration::from_secs(60);
/// How often an idle worker looks for due deliveries.
pub const IDLE: Duration = Duration::from_millis(100);
/// How many attempts end, while others are in flight, before the worker claims more.
pub const CLAIM_BATCH: usize = 16;
/// How long the worker waits, once an attempt ends, for others to end with it (no longer once
/// none is left in flight), so that attempts ending together are counted in one turn.
pub const GATHER: Duration = Duration::from_millis(5);
/// The least time between two claims: attempts that all end at once (a receiver that fails
/// fast, or 800 that refuse connections) turn the worker no faster than 500 claims a second.
/// While requests write, the worker's share of the database bounds its writes further.
pub const CLAIM_EVERY: Duration = Duration::from_millis(2);
/// How long a stopping worker waits for the outcomes it still holds to be recorded.
pub const RECORD_AT_STOP: Duration = Duration::from_secs(5);
/// How many ended attempts the worker records in one write, at most.
pub const RECORD_BATCH: usize = 64;
/// How long an ended attempt waits for others to be recorded with it, while attempts are in
/// flight: a delivery made is recorded within this time (within a lease, so that a crash in
/// between makes it again, never loses it).
pub const RECORD_EVERY: Duration = Duration::from_millis(50);

/// The niceness of the worker's thread: 19, the lowest priority, below the server's other
/// threads (which run at the niceness the server was started with, 0 by default).
pub const NICENESS: u8 = 19;

/// The worker's thread, until it is stopped.
pub struct Worker {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Worker {
    /// Starts the deliveries of `deliverer` on a thread of its own, with a runtime of its
    /// own, at the priority [`NICENESS`] lower.
    ///
    /// # Errors
    ///
    /// When the thread or its runtime cannot be started.
    pub fn start(deliverer: Deliverer) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the webhook deliveries' runtime")?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("webhook-deliveries".to_owned())
            .spawn(move || {
                lower_priority();
                runtime.block_on(async {
                    let mut done = Vec::new();
                    tokio::select! {
                        () = run(&deliverer, &mut done) => {}
                        _ = stopped => {}
                    }
                    // Deliveries made and not yet recorded: recorded now, so that a stop does
                    // not make them again at the next start.
                    if !done.is_empty() {
                        let recorded = record(&deliverer, done);
                        if tokio::time::timeout(RECORD_AT_STOP, recorded).await.is_err() {
                            tracing::warn!("recording webhook attempts at stop timed out");
                        }
                    }
                });
            })
            .context("cannot start the webhook deliveries' thread")?;
        Ok(Self { stop, thread })
    }

    /// Stops the worker: the outcomes of the attempts ended are recorded, the attempts in
    /// flight are dropped (their leases run out, or the next start releases them), and waits
    /// for its thread to end.
    pub fn stop(self) {
        let _ = self.stop.send(());
        if self.thread.join().is_err() {
            tracing::error!("the webhook deliveries' thread ended abnormally");
        }
    }
}

/// Lowers the calling thread's CPU priority to niceness [`NICENESS`] (Linux sets it per
/// thread). `thread-priority` maps its scale of 0..=99 onto niceness 19..=-20, rounding
/// toward the lower priority: the value for [`NICENESS`] is worked back from that mapping,
/// and a test reads the niceness the thread gets.
fn lower_priority() {
    use thread_priority::{ThreadPriority, ThreadPriorityValue, set_current_thread_priority};
    let scale = 99_u16.saturating_sub((u16::from(NICENESS) + 20) * 99 / 39 + 1);
    let lowered = u8::try_from(scale)
        .map_err(|e| e.to_string())
        .and_then(ThreadPriorityValue::try_from)
        .and_then(|value| {
            set_current_thread_priority(ThreadPriority::Crossplatform(value))
                .map_err(|e| e.to_string())
        });
    if let Err(err) = lowered {
        tracing::warn!(error = %err, "cannot lower the priority of the webhook deliveries' thread");
    }
}

/// Runs the deliveries of `deliverer` until its future is dropped, keeping in `done` the
/// outcomes that wait to be recorded.
async fn run(deliverer: &Deliverer, done: &mut Vec<Attempted>) {
    match deliverer.release_leases().await {
        Ok(0) => {}
        Ok(released) => {
            tracing::info!(released, "resuming the webhook deliveries a stopped instance held");
        }
        Err(err) => {
            tracing::warn!(error = %err, "releasing the leases of webhook deliveries failed");
        }
    }
    let mut attempts: JoinSet<(Attempted, KeyId)> = JoinSet::new();
    // The attempts in flight, by endpoint and by owner, and the room they leave: each claim
    // shares the slots among the owners with deliveries due.
    let mut in_flight = ClaimLimits {
        count: IN_FLIGHT,
        per_endpoint: PER_ENDPOINT,
        slots: IN_FLIGHT,
        ..ClaimLimits::default()
    };
    // When the backlog's gauges are next refreshed, and the backlogs trimmed.
    let mut backlog_at = tokio::time::Instant::now() + BACKLOG_EVERY;
    let mut trim_at = tokio::time::Instant::now();
    // When the endpoints of ended rotation chains are next closed.
    let mut close_at = tokio::time::Instant::now();
    // Attempts ended since the last claim, and when it was: a claim is a write, made for a
    // batch of room rather than for each attempt that ends.
    let (mut ended_since_claim, mut claimed_at) = (usize::MAX, tokio::time::Instant::now());
    // When the first of the outcomes waiting to be recorded came.
    let mut first_ended_at: Option<tokio::time::Instant> = None;
    loop {
        if tokio::time::Instant::now() >= close_at {
            close(deliverer).await;
            close_at = tokio::time::Instant::now() + CLOSE_EVERY;
        }
        if tokio::time::Instant::now() >= trim_at {
            let started = tokio::time::Instant::now();
            trim(deliverer).await;
            trim_at = started + backlog_interval(started.elapsed());
        }
        fan_out(deliverer).await;
        let free = IN_FLIGHT - attempts.len();
        let worth_it =
            attempts.is_empty() || ended_since_claim >= CLAIM_BATCH || claimed_at.elapsed() >= IDLE;
        if free > 0 && worth_it {
            // However fast the attempts end, the claims keep their pace.
            tokio::time::sleep_until(claimed_at + CLAIM_EVERY).await;
            (ended_since_claim, claimed_at) = (0, tokio::time::Instant::now());
            in_flight.count = free;
            match deliverer.claim(&in_flight, LEASE).await {
                Ok(due) => {
                    for due in due {
                        let owner = due.endpoint.owner.clone();
                        in_flight.hold(due.endpoint.id, &owner);
                        let deliverer = deliverer.clone();
                        attempts.spawn(async move { (deliverer.attempt(&due).await, owner) });
                    }
                }
                Err(err) => tracing::warn!(error = %err, "claiming webhook deliveries failed"),
            }
        }
        if attempts.is_empty() {
            // Nothing in flight, and nothing more to claim: what waits is recorded now.
            if !done.is_empty() {
                first_ended_at = None;
                record(deliverer, std::mem::take(done)).await;
            }
            tokio::time::sleep(IDLE).await;
            continue;
        }
        // Refreshed only while attempts are in flight: an idle worker leaves the gauges be.
        if tokio::time::Instant::now() >= backlog_at {
            let started = tokio::time::Instant::now();
            report_backlog(deliverer).await;
            backlog_at = started + backlog_interval(started.elapsed());
        }
        // Wait for an attempt to end, no longer than the outcomes waiting may wait.
        let waited = done.len();
        let until = first_ended_at.map_or(IDLE, |at| RECORD_EVERY.saturating_sub(at.elapsed()));
        if let Ok(Some(ended)) = tokio::time::timeout(until, attempts.join_next()).await {
            take(ended, done, &mut in_flight);
            // The others that end within the gathering time end with it: one turn for all.
            let gathered = tokio::time::Instant::now() + GATHER;
            while done.len() < RECORD_BATCH {
                match tokio::time::timeout_at(gathered, attempts.join_next()).await {
                    Ok(Some(ended)) => take(ended, done, &mut in_flight),
                    _ => break,
                }
            }
        }
        while done.len() < RECORD_BATCH {
            let Some(ended) = attempts.try_join_next() else { break };
            take(ended, done, &mut in_flight);
        }
        ended_since_claim = ended_since_claim.saturating_add(done.len() - waited);
        if first_ended_at.is_none() && !done.is_empty() {
            first_ended_at = Some(tokio::time::Instant::now());
        }
        let due = first_ended_at.is_some_and(|at| at.elapsed() >= RECORD_EVERY);
        if done.len() >= RECORD_BATCH || due {
            first_ended_at = None;
            record(deliverer, std::mem::take(done)).await;
        }
    }
}

/// Queues the deliveries of the events written since the last fan-out, a batch a write.
async fn fan_out(deliverer: &Deliverer) {
    for _ in 0..FAN_OUT_WRITES {
        match deliverer.fan_out(FAN_OUT_BATCH).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(error = %err, "queueing the deliveries of new events failed");
                return;
            }
        }
    }
}

/// Records the outcomes of ended attempts in one write, and counts them by outcome.
async fn record(deliverer: &Deliverer, recording: Vec<Attempted>) {
    for attempt in &recording {
        metrics::counter!(DELIVERIES_METRIC, "outcome" => attempt.outcome.kind()).increment(1);
    }
    if let Err(err) = deliverer.record(recording).await {
        // The leases run out, and the deliveries are attempted again.
        tracing::warn!(error = %err, "recording webhook attempts failed");
    }
}

/// Counts an ended attempt off its endpoint and owner, notes whether its endpoint times
/// out, and keeps its outcome for the next record.
fn take(
    ended: Result<(Attempted, KeyId), tokio::task::JoinError>,
    done: &mut Vec<Attempted>,
    in_flight: &mut ClaimLimits,
) {
    match ended {
        Ok((attempted, owner)) => {
            in_flight.ended(&attempted, &owner);
            done.push(attempted);
        }
        // A panic, logged by the panic hook; the lease runs out and it is attempted again.
        Err(err) => tracing::error!(error = %err, "a webhook attempt ended abnormally"),
    }
}

#[cfg(test)]
mod tests {
    /// The niceness of the calling thread, as Linux reports it.
    fn niceness() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("the thread's stat");
        // Fields after the command name, which ends with the last ')': nice is field 19.
        let fields: Vec<&str> =
            stat.rsplit_once(')').expect("a name").1.split_whitespace().collect();
        fields[16].parse().expect("a niceness")
    }

    #[test]
    fn the_worker_thread_runs_at_the_lowest_priority() {
        std::thread::spawn(|| {
            let before = niceness();
            super::lower_priority();
            assert_eq!(niceness(), before.max(i32::from(super::NICENESS)));
        })
        .join()
        .expect("the thread");
    }
}
