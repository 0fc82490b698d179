//! Where deliveries end in memory without being made, as in the SQL stores
//! (`crates/infra/src/sql/webhooks/ends.rs`): the endpoints of ended rotation chains, and those an
//! operator disabled, drop what waits for them; a backlog beyond its bound is dropped; and
//! attempts are swept by age. A dropped delivery is recorded as a `dropped` attempt.

use std::collections::HashMap;

use animal_store_domain::{
    Attempt, AttemptId, Closed, DeliveryId, DisabledReason, EndpointId, EndpointStatus, KeyId,
    Outcome,
};
use chrono::{DateTime, Utc};

use super::webhooks::{Webhooks, disable};

/// A waiting delivery, as a backlog orders them: when it is due, then its id.
type Waiting = (Option<DateTime<Utc>>, DeliveryId);

impl Webhooks {
    /// Drops the delivery `id`, recording it as an attempt made `at` whose outcome is
    /// [`Outcome::Dropped`].
    fn drop_delivery(&mut self, id: DeliveryId, at: DateTime<Utc>) {
        let Some(queued) = self.deliveries.remove(&id) else { return };
        self.last_attempt += 1;
        let attempt = Attempt {
            id: AttemptId::new(self.last_attempt),
            event: queued.event,
            attempt: queued.attempts + 1,
            at,
            outcome: Outcome::Dropped,
            next_attempt_at: None,
        };
        self.attempts.insert(attempt.id, (queued.endpoint, attempt));
    }

    /// See `WebhookDeliveries::close`; `live` tells whether an owner's line has a live key.
    pub(super) fn close(
        &mut self,
        live: &dyn Fn(&KeyId) -> bool,
        now: DateTime<Utc>,
        batch: usize,
    ) -> Closed {
        let mut closed = Closed::default();
        for registered in self.endpoints.values_mut() {
            let endpoint = &mut registered.endpoint;
            if endpoint.status == EndpointStatus::Enabled && !live(&endpoint.owner) {
                disable(endpoint, DisabledReason::KeyEnded);
                closed.endpoints += 1;
            }
        }
        let ended = |hooks: &Self, endpoint: EndpointId| {
            hooks
                .endpoints
                .get(&endpoint)
                .is_some_and(|r| r.endpoint.disabled_reason.is_some_and(DisabledReason::is_final))
        };
        let doomed: Vec<DeliveryId> = self
            .deliveries
            .iter()
            .filter(|(_, q)| ended(self, q.endpoint))
            .map(|(id, _)| *id)
            .take(batch)
            .collect();
        closed.dropped = u64::try_from(doomed.len()).unwrap_or(u64::MAX);
        for id in doomed {
            self.drop_delivery(id, now);
        }
        closed
    }

    /// See `WebhookDeliveries::trim`.
    pub(super) fn trim(&mut self, now: DateTime<Utc>, max_waiting: usize, batch: usize) -> usize {
        // Each endpoint's deliveries, soonest due first; those past its `max_waiting` last go.
        let mut waiting: HashMap<EndpointId, Vec<Waiting>> = HashMap::new();
        for (id, queued) in &self.deliveries {
            waiting.entry(queued.endpoint).or_default().push((queued.next_attempt_at, *id));
        }
        let overflow: Vec<DeliveryId> = waiting
            .into_values()
            .flat_map(|mut due| {
                due.sort_unstable();
                let excess = due.len().saturating_sub(max_waiting);
                due.into_iter().take(excess).map(|(_, id)| id)
            })
            .take(batch)
            .collect();
        let dropped = overflow.len();
        for id in overflow {
            self.drop_delivery(id, now);
        }
        dropped
    }

    /// See `WebhookDeliveries::sweep`.
    pub(super) fn sweep(&mut self, before: DateTime<Utc>, batch: usize) -> usize {
        let expired: Vec<AttemptId> = self
            .attempts
            .iter()
            .filter(|(_, (_, attempt))| attempt.at < before)
            .map(|(id, _)| *id)
            .take(batch)
            .collect();
        for id in &expired {
            self.attempts.remove(id);
        }
        expired.len()
    }
}
