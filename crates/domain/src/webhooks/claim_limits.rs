//! How many deliveries a claim may take: the room the attempts in flight leave, by endpoint
//! and by owner, and each owner's share of an instance's slots
//! (`docs/webhooks.md#several-instances-and-at-least-once`).

use std::collections::{HashMap, HashSet};

use crate::keys::model::KeyId;
use crate::webhooks::delivery::{Attempted, Outcome};
use crate::webhooks::model::EndpointId;

/// What a claim may take: how many deliveries in all, how many of one endpoint's and of one
/// owner's, counting the attempts in flight already.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimLimits {
    /// The most deliveries to claim.
    pub count: usize,
    /// The most attempts of one endpoint's in flight.
    pub per_endpoint: usize,
    /// The most attempts of one owner's in flight, all its endpoints together; with
    /// [`ClaimLimits::slots`], each claim sets it to the owners' share.
    pub per_owner: usize,
    /// The attempts an instance has in flight at most. When not 0, [`Deliverer::claim`]
    /// shares them equally: each of the N owners with deliveries due gets at most a
    /// (N+1)th, so that N owners whose receivers hang hold at most N/(N+1) of them, and one
    /// more owner always finds room.
    ///
    /// [`Deliverer::claim`]: crate::Deliverer::claim
    pub slots: usize,
    /// The attempts in flight, by endpoint.
    pub endpoints: HashMap<EndpointId, usize>,
    /// The attempts in flight, by owner.
    pub owners: HashMap<KeyId, usize>,
    /// The endpoints whose last attempt timed out: one attempt in flight each, until one is
    /// delivered.
    pub timing_out: HashSet<EndpointId>,
}

impl ClaimLimits {
    /// How many more attempts of `endpoint`'s, owned by `owner`, a claim may take.
    pub fn room(&self, endpoint: EndpointId, owner: &KeyId) -> usize {
        let of = |map_count: Option<&usize>, limit: usize| {
            limit.saturating_sub(map_count.copied().unwrap_or(0))
        };
        of(self.endpoints.get(&endpoint), self.of_endpoint(endpoint))
            .min(of(self.owners.get(owner), self.per_owner))
    }

    /// The most attempts of `endpoint`'s in flight: 1 while it times out.
    fn of_endpoint(&self, endpoint: EndpointId) -> usize {
        if self.timing_out.contains(&endpoint) { 1 } else { self.per_endpoint }
    }

    /// Each owner's share of [`ClaimLimits::slots`] when `owners` have deliveries due.
    #[must_use]
    pub fn shared_among(&self, owners: usize) -> Self {
        let share = (self.slots / owners.saturating_add(1)).max(1);
        Self { per_owner: share, ..self.clone() }
    }

    /// Gives back the room `attempt`, of an endpoint owned by `owner`, took, and notes
    /// whether its endpoint times out.
    pub fn ended(&mut self, attempt: &Attempted, owner: &KeyId) {
        self.release(attempt.endpoint, owner);
        if attempt.outcome == Outcome::Timeout {
            self.timing_out.insert(attempt.endpoint);
        } else if attempt.outcome.delivered() {
            self.timing_out.remove(&attempt.endpoint);
        }
    }

    /// Takes `endpoint`'s room for one more attempt, owned by `owner`: whether there was.
    pub fn take(&mut self, endpoint: EndpointId, owner: &KeyId) -> bool {
        if self.room(endpoint, owner) == 0 {
            return false;
        }
        self.hold(endpoint, owner);
        true
    }

    /// Counts one more attempt of `endpoint`'s in flight, owned by `owner`, as a claim made
    /// within these limits gave it.
    pub fn hold(&mut self, endpoint: EndpointId, owner: &KeyId) {
        *self.endpoints.entry(endpoint).or_default() += 1;
        *self.owners.entry(owner.clone()).or_default() += 1;
    }

    /// Gives back the room an attempt of `endpoint`'s, owned by `owner`, took, once it ended.
    pub fn release(&mut self, endpoint: EndpointId, owner: &KeyId) {
        fn less<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
            if let Some(count) = map.get_mut(key) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    map.remove(key);
                }
            }
        }
        less(&mut self.endpoints, &endpoint);
        less(&mut self.owners, owner);
    }

    /// The endpoints that have no room left, whatever their owner.
    pub fn full_endpoints(&self) -> impl Iterator<Item = EndpointId> + '_ {
        self.endpoints.iter().filter(|(id, n)| **n >= self.of_endpoint(**id)).map(|(id, _)| *id)
    }

    /// The owners that have no room left.
    pub fn full_owners(&self) -> impl Iterator<Item = &KeyId> + '_ {
        self.owners.iter().filter(|(_, n)| **n >= self.per_owner).map(|(owner, _)| owner)
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::events::model::EventId;
    use crate::webhooks::delivery::DeliveryId;

    fn key(name: &str) -> KeyId {
        KeyId::new(name).expect("a key id")
    }

    #[test]
    fn n_owners_with_deliveries_due_leave_a_share_for_one_more() {
        let limits =
            ClaimLimits { count: 64, per_endpoint: 8, slots: 64, ..ClaimLimits::default() };
        assert_eq!(limits.shared_among(0).per_owner, 64);
        assert_eq!(limits.shared_among(1).per_owner, 32);
        assert_eq!(limits.shared_among(8).per_owner, 7, "8 x 7 = 56 of 64 held, 8 left");
        assert_eq!(limits.shared_among(1_000).per_owner, 1, "never none");
    }

    #[test]
    fn an_endpoint_that_times_out_holds_one_attempt_until_one_is_delivered() {
        let owner = key("alice0000000");
        let endpoint = EndpointId::new(7);
        let mut limits =
            ClaimLimits { count: 64, per_endpoint: 8, per_owner: 64, ..ClaimLimits::default() };
        assert!(limits.take(endpoint, &owner) && limits.take(endpoint, &owner));
        let attempt = |outcome| Attempted {
            delivery: DeliveryId::new(1),
            endpoint,
            event: EventId::new(1),
            attempt: 1,
            at: DateTime::<Utc>::MIN_UTC,
            outcome,
            next_attempt_at: None,
        };
        limits.ended(&attempt(Outcome::Timeout), &owner);
        assert_eq!(limits.room(endpoint, &owner), 0, "one still in flight");
        assert_eq!(limits.full_endpoints().collect::<Vec<_>>(), vec![endpoint]);
        limits.ended(&attempt(Outcome::Timeout), &owner);
        assert_eq!(limits.room(endpoint, &owner), 1);
        assert!(limits.take(endpoint, &owner));
        limits.ended(&attempt(Outcome::Status(204)), &owner);
        assert_eq!(limits.room(endpoint, &owner), 8, "delivered: its whole room again");
    }
}
