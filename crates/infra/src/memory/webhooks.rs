//! Webhook endpoints and deliveries in memory, behind the pets' lock with the events they
//! carry: an event is queued for its endpoints the moment it is recorded.

use std::collections::BTreeMap;
use std::time::Duration;

use animal_store_domain::{
    Attempt, AttemptId, Attempted, Backlog, ClaimLimits, Closed, CreateEndpointError, DeliveryId,
    DisabledReason, Due, Endpoint, EndpointId, EndpointPatch, EndpointStatus, Event, EventId,
    KeyId, MAX_ENDPOINTS, NewEndpoint, Outcome, RepositoryError, WebhookDeliveries,
    WebhookEndpoints,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::MemoryPetRepository;

/// An endpoint, and since when every attempt to it has failed.
#[derive(Debug, Clone)]
pub(super) struct Registered {
    pub(super) endpoint: Endpoint,
    failing_since: Option<DateTime<Utc>>,
}

/// An event queued for an endpoint, until it is delivered or given up.
#[derive(Debug, Clone)]
pub(super) struct Queued {
    pub(super) endpoint: EndpointId,
    pub(super) event: EventId,
    pub(super) attempts: u32,
    pub(super) next_attempt_at: Option<DateTime<Utc>>,
    leased_until: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

/// The endpoints, their deliveries and the attempts made.
#[derive(Debug, Default)]
pub(super) struct Webhooks {
    pub(super) endpoints: BTreeMap<EndpointId, Registered>,
    last_endpoint: i64,
    pub(super) deliveries: BTreeMap<DeliveryId, Queued>,
    last_delivery: i64,
    pub(super) attempts: BTreeMap<AttemptId, (EndpointId, Attempt)>,
    pub(super) last_attempt: i64,
}

impl Webhooks {
    /// Queues `event` for every enabled endpoint whose owner sees it and that wants it.
    pub(super) fn queue(&mut self, event: &Event) {
        let wanted: Vec<EndpointId> = self
            .endpoints
            .values()
            .filter(|r| r.endpoint.status == EndpointStatus::Enabled)
            .filter(|r| {
                event.is_seen_by(&r.endpoint.owner) && r.endpoint.events.includes(event.kind)
            })
            .map(|r| r.endpoint.id)
            .collect();
        for endpoint in wanted {
            self.last_delivery += 1;
            let queued = Queued {
                endpoint,
                event: event.id,
                attempts: 0,
                next_attempt_at: Some(event.created_at),
                leased_until: None,
                created_at: event.created_at,
            };
            self.deliveries.insert(DeliveryId::new(self.last_delivery), queued);
        }
    }

    /// Forgets the deliveries of the events `ids`, swept.
    pub(super) fn forget(&mut self, ids: &[EventId]) {
        self.deliveries.retain(|_, queued| !ids.contains(&queued.event));
    }

    fn owned(&self, owner: &KeyId, id: EndpointId) -> Option<&Registered> {
        self.endpoints.get(&id).filter(|r| r.endpoint.owner == *owner)
    }
}

#[async_trait]
impl WebhookEndpoints for MemoryPetRepository {
    async fn create(&self, new: NewEndpoint) -> Result<Endpoint, CreateEndpointError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        if hooks.endpoints.values().filter(|r| r.endpoint.owner == new.owner).count()
            >= MAX_ENDPOINTS
        {
            return Err(CreateEndpointError::TooMany);
        }
        hooks.last_endpoint += 1;
        let id = EndpointId::new(hooks.last_endpoint);
        let endpoint = new.registered(id);
        hooks.endpoints.insert(id, Registered { endpoint: endpoint.clone(), failing_since: None });
        Ok(endpoint)
    }

    async fn list(&self, owner: &KeyId) -> Result<Vec<Endpoint>, RepositoryError> {
        let mut locked = self.shelf();
        let endpoints = locked.webhooks().endpoints.values();
        Ok(endpoints.filter(|r| r.endpoint.owner == *owner).map(|r| r.endpoint.clone()).collect())
    }

    async fn get(
        &self,
        owner: &KeyId,
        id: EndpointId,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        Ok(self.shelf().webhooks().owned(owner, id).map(|r| r.endpoint.clone()))
    }

    async fn update(
        &self,
        owner: &KeyId,
        id: EndpointId,
        patch: EndpointPatch,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        let Some(registered) = hooks.endpoints.get_mut(&id).filter(|r| r.endpoint.owner == *owner)
        else {
            return Ok(None);
        };
        let after = patch.apply(&registered.endpoint);
        if registered.endpoint.status == EndpointStatus::Disabled
            && after.status == EndpointStatus::Enabled
        {
            registered.failing_since = None;
        }
        registered.endpoint = after.clone();
        Ok(Some(after))
    }

    async fn delete(&self, owner: &KeyId, id: EndpointId) -> Result<bool, RepositoryError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        if hooks.owned(owner, id).is_none() {
            return Ok(false);
        }
        hooks.endpoints.remove(&id);
        hooks.deliveries.retain(|_, queued| queued.endpoint != id);
        hooks.attempts.retain(|_, (endpoint, _)| *endpoint != id);
        Ok(true)
    }

    async fn survey(
        &self,
        owner: Option<&KeyId>,
    ) -> Result<Vec<(Endpoint, Option<Outcome>)>, RepositoryError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        let last = |id: EndpointId| {
            let mut attempts = hooks.attempts.values().rev();
            attempts.find(|(of, _)| *of == id).map(|(_, attempt)| attempt.outcome)
        };
        Ok(hooks
            .endpoints
            .values()
            .filter(|r| owner.is_none_or(|owner| r.endpoint.owner == *owner))
            .map(|r| (r.endpoint.clone(), last(r.endpoint.id)))
            .collect())
    }

    async fn disable(
        &self,
        id: EndpointId,
        reason: DisabledReason,
    ) -> Result<Option<Endpoint>, RepositoryError> {
        let mut locked = self.shelf();
        let Some(registered) = locked.webhooks().endpoints.get_mut(&id) else {
            return Ok(None);
        };
        disable(&mut registered.endpoint, reason);
        Ok(Some(registered.endpoint.clone()))
    }
}

/// Disables `endpoint` for `reason`, unless it is disabled for good already.
pub(super) fn disable(endpoint: &mut Endpoint, reason: DisabledReason) {
    if !endpoint.disabled_reason.is_some_and(DisabledReason::is_final) {
        endpoint.status = EndpointStatus::Disabled;
        endpoint.disabled_reason = Some(reason);
    }
}

#[async_trait]
impl WebhookDeliveries for MemoryPetRepository {
    async fn claim(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limits: &ClaimLimits,
    ) -> Result<Vec<Due>, RepositoryError> {
        let mut locked = self.shelf();
        let (events, hooks) = locked.events_and_webhooks();
        let mut due: Vec<(DeliveryId, DateTime<Utc>)> = hooks
            .deliveries
            .iter()
            .filter(|(_, q)| q.next_attempt_at.is_some_and(|at| at <= now))
            .filter(|(_, q)| q.leased_until.is_none_or(|until| until <= now))
            .filter(|(_, q)| {
                hooks
                    .endpoints
                    .get(&q.endpoint)
                    .is_some_and(|r| r.endpoint.status == EndpointStatus::Enabled)
            })
            .map(|(id, q)| (*id, q.next_attempt_at.unwrap_or(now)))
            .collect();
        due.sort_by_key(|(id, at)| (*at, *id));
        let mut room = limits.clone();
        let mut claimed = Vec::new();
        for (id, _) in due {
            if claimed.len() == limits.count {
                break;
            }
            let Some(queued) = hooks.deliveries.get_mut(&id) else { continue };
            let (Some(registered), Some(event)) =
                (hooks.endpoints.get(&queued.endpoint), events.get(&queued.event))
            else {
                continue;
            };
            if !room.take(queued.endpoint, &registered.endpoint.owner) {
                continue;
            }
            queued.leased_until = Some(until);
            claimed.push(Due {
                delivery: id,
                attempt: queued.attempts + 1,
                endpoint: registered.endpoint.clone(),
                event: event.clone(),
            });
        }
        Ok(claimed)
    }

    async fn record(
        &self,
        attempts: Vec<Attempted>,
        disable_after: Duration,
    ) -> Result<(), RepositoryError> {
        let disable_after =
            chrono::Duration::from_std(disable_after).unwrap_or(chrono::Duration::MAX);
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        for a in attempts {
            hooks.last_attempt += 1;
            let id = AttemptId::new(hooks.last_attempt);
            let attempt = Attempt {
                id,
                event: a.event,
                attempt: a.attempt,
                at: a.at,
                outcome: a.outcome,
                next_attempt_at: a.next_attempt_at,
            };
            hooks.attempts.insert(id, (a.endpoint, attempt));
            if a.outcome.delivered() || a.next_attempt_at.is_none() {
                // Done: the attempts keep what came of it.
                hooks.deliveries.remove(&a.delivery);
            } else if let Some(queued) = hooks.deliveries.get_mut(&a.delivery) {
                queued.attempts = a.attempt;
                queued.leased_until = None;
                queued.next_attempt_at = a.next_attempt_at;
            }
            if let Some(registered) = hooks.endpoints.get_mut(&a.endpoint) {
                if a.outcome.delivered() {
                    registered.failing_since = None;
                } else {
                    let since = *registered.failing_since.get_or_insert(a.at);
                    if since <= a.at - disable_after
                        && registered.endpoint.status == EndpointStatus::Enabled
                    {
                        disable(&mut registered.endpoint, DisabledReason::Failing);
                    }
                }
            }
        }
        Ok(())
    }

    async fn attempts(
        &self,
        owner: &KeyId,
        endpoint: EndpointId,
        before: Option<AttemptId>,
        count: usize,
    ) -> Result<Option<Vec<Attempt>>, RepositoryError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        if hooks.owned(owner, endpoint).is_none() {
            return Ok(None);
        }
        let upto = before.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        Ok(Some(
            hooks
                .attempts
                .range((std::ops::Bound::Unbounded, upto))
                .rev()
                .filter(|(_, (of, _))| *of == endpoint)
                .take(count)
                .map(|(_, (_, attempt))| attempt.clone())
                .collect(),
        ))
    }

    async fn release_leases(&self) -> Result<u64, RepositoryError> {
        let mut locked = self.shelf();
        let leased =
            locked.webhooks().deliveries.values_mut().filter_map(|q| q.leased_until.take());
        Ok(u64::try_from(leased.count()).unwrap_or(u64::MAX))
    }

    async fn close(&self, now: DateTime<Utc>, batch: usize) -> Result<Closed, RepositoryError> {
        let live = |owner: &KeyId| self.keys.line_is_live(owner, now.into());
        Ok(self.shelf().webhooks().close(&live, now, batch))
    }

    async fn trim(
        &self,
        now: DateTime<Utc>,
        max_waiting: usize,
        batch: usize,
    ) -> Result<usize, RepositoryError> {
        Ok(self.shelf().webhooks().trim(now, max_waiting, batch))
    }

    async fn sweep(&self, before: DateTime<Utc>, batch: usize) -> Result<usize, RepositoryError> {
        Ok(self.shelf().webhooks().sweep(before, batch))
    }

    /// Nothing waits: the memory store queues an event's deliveries as it records it, under
    /// the one lock, which costs no database write.
    async fn fan_out(&self, _batch: usize) -> Result<usize, RepositoryError> {
        Ok(0)
    }

    async fn owners_due(&self, now: DateTime<Utc>) -> Result<usize, RepositoryError> {
        let mut locked = self.shelf();
        let hooks = locked.webhooks();
        let owners: std::collections::HashSet<&KeyId> = hooks
            .deliveries
            .values()
            .filter(|queued| queued.next_attempt_at.is_some_and(|at| at <= now))
            .filter_map(|queued| hooks.endpoints.get(&queued.endpoint))
            .filter(|registered| registered.endpoint.status == EndpointStatus::Enabled)
            .map(|registered| &registered.endpoint.owner)
            .collect();
        Ok(owners.len())
    }

    async fn backlog(&self) -> Result<Backlog, RepositoryError> {
        let mut locked = self.shelf();
        let pending = locked.webhooks().deliveries.values();
        Ok(pending.fold(Backlog::default(), |backlog, queued| Backlog {
            pending: backlog.pending + 1,
            oldest: Some(backlog.oldest.map_or(queued.created_at, |at| at.min(queued.created_at))),
        }))
    }
}
