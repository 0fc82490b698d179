//! The contract of what ends deliveries without an attempt, and of fair claims: a claim
//! takes no more of one owner's than its room; a rotation chain with no live key left has its
//! endpoints disabled and what waits for them dropped (a rotation keeps the line live), as
//! does an operator's disabling, which its owner cannot undo; an endpoint's backlog is
//! bounded; attempts are swept by age.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use animal_store_domain::{
    ApiKeyStore, ClaimLimits, DisabledReason, Due, EndpointId, EndpointPatch, EndpointStatus,
    KeyId, Outcome, PetStatus, Plan, Rotation,
};

use super::webhooks::{WebhookStores, endpoint, later};
use super::{key, new_pet};

const LEASE: chrono::Duration = chrono::Duration::seconds(60);

/// Checks the ends of deliveries in `stores`, whose endpoints' owners are the lines of
/// `keys`; every store starts empty.
pub async fn delivery_ends(stores: &WebhookStores<'_>, keys: &dyn ApiKeyStore) {
    fair_claims(stores).await;
    ended_lines(stores, keys).await;
    bounded_backlogs(stores).await;
    swept_attempts(stores).await;
}

async fn register(stores: &WebhookStores<'_>, owner: &str, path: &str) -> EndpointId {
    stores.endpoints.create(endpoint(owner, path, &["*"])).await.expect("register").id
}

async fn claim(stores: &WebhookStores<'_>, at: DateTime<Utc>, limits: &ClaimLimits) -> Vec<Due> {
    super::webhooks::fanned_out(stores.deliveries).await;
    stores.deliveries.claim(at, at + LEASE, limits).await.expect("claim")
}

fn owner_of(due: &[Due], owner: &str) -> usize {
    due.iter().filter(|d| d.endpoint.owner.as_str() == owner).count()
}

/// A claim takes at most `per_owner` of an owner's, all its endpoints together, and none of
/// an owner whose room is taken already.
async fn fair_claims(stores: &WebhookStores<'_>) {
    let greedy = "greedy000000";
    for path in ["g1", "g2", "g3"] {
        register(stores, greedy, path).await;
    }
    let modest = register(stores, "modest000000", "m").await;
    for n in 0..6 {
        stores
            .pets
            .create(new_pet(&format!("Pet {n}"), 1, PetStatus::Available))
            .await
            .expect("add");
    }
    let limits =
        ClaimLimits { count: 100, per_endpoint: 4, per_owner: 5, ..ClaimLimits::default() };
    let due = claim(stores, later(0), &limits).await;
    assert_eq!((owner_of(&due, greedy), owner_of(&due, "modest000000")), (5, 4), "{due:?}");
    let full = ClaimLimits {
        owners: HashMap::from([(KeyId::new(greedy).expect("an id"), 5)]),
        ..limits.clone()
    };
    let more = claim(stores, later(100), &full).await;
    assert_eq!(owner_of(&more, greedy), 0, "an owner without room gets nothing");
    assert_eq!(owner_of(&more, "modest000000"), 4, "the others get theirs");
    // Done with: every endpoint removed, with what waits.
    for (owner, listed) in [(greedy, 3), ("modest000000", 1)] {
        let owner = KeyId::new(owner).expect("an id");
        let endpoints = stores.endpoints.list(&owner).await.expect("list");
        assert_eq!(endpoints.len(), listed);
        for e in endpoints {
            stores.endpoints.delete(&owner, e.id).await.expect("delete");
        }
    }
    assert!(modest.get() > 0);
}

/// A line with no live key left ends; a rotated line does not; an operator's disabling is
/// for good. What waits for an ended endpoint is dropped, and recorded so.
async fn ended_lines(stores: &WebhookStores<'_>, keys: &dyn ApiKeyStore) {
    let (live, _) = key(Plan::Free, None, 1_800_000_000);
    let (revoked, _) = key(Plan::Free, None, 1_800_000_001);
    let (rotated, _) = key(Plan::Free, None, 1_800_000_002);
    let (successor, _) = key(Plan::Free, None, 1_800_000_003);
    for k in [&live, &revoked, &rotated] {
        keys.create(k).await.expect("a key");
    }
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let successor = animal_store_domain::ApiKey { owner: rotated.id.clone(), ..successor };
    let grace = now - Duration::from_secs(1);
    let done = keys.rotate(&successor, &rotated.id, now - Duration::from_secs(10), grace).await;
    assert!(matches!(done.expect("rotate"), Rotation::Rotated(_)));
    keys.revoke(&revoked.id, now).await.expect("revoke");
    let ids: Vec<EndpointId> = [
        register(stores, live.id.as_str(), "live").await,
        register(stores, revoked.id.as_str(), "revoked").await,
        register(stores, rotated.id.as_str(), "rotated").await,
    ]
    .into();
    stores.pets.create(new_pet("Ended", 1, PetStatus::Available)).await.expect("add");
    super::webhooks::fanned_out(stores.deliveries).await;
    let at = DateTime::<Utc>::from(now);
    let closed = stores.deliveries.close(at, 100).await.expect("close");
    assert_eq!((closed.endpoints, closed.dropped), (1, 1), "the revoked line only");
    let ended = stores.endpoints.get(&revoked.id, ids[1]).await.expect("get").expect("kept");
    assert_eq!(
        (ended.status, ended.disabled_reason),
        (EndpointStatus::Disabled, Some(DisabledReason::KeyEnded))
    );
    let attempts = stores.deliveries.attempts(&revoked.id, ids[1], None, 10).await.expect("list");
    let attempts = attempts.expect("own");
    assert_eq!(attempts.len(), 1);
    assert_eq!((attempts[0].outcome, attempts[0].next_attempt_at), (Outcome::Dropped, None));
    let everyone =
        ClaimLimits { count: 100, per_endpoint: 100, per_owner: 100, ..ClaimLimits::default() };
    let due = claim(stores, later(200), &everyone).await;
    let mut claimed: Vec<EndpointId> = due.iter().map(|d| d.endpoint.id).collect();
    claimed.sort();
    assert_eq!(claimed, [ids[0], ids[2]], "the live and the rotated lines' deliveries");

    // An operator's disabling: for good, whoever owns it.
    stores.pets.create(new_pet("Waits", 1, PetStatus::Available)).await.expect("add");
    super::webhooks::fanned_out(stores.deliveries).await;
    let disabled =
        stores.endpoints.disable(ids[0], DisabledReason::Operator).await.expect("disable");
    assert_eq!(disabled.expect("found").disabled_reason, Some(DisabledReason::Operator));
    let closed = stores.deliveries.close(at, 100).await.expect("close");
    assert_eq!((closed.endpoints, closed.dropped), (0, 2), "what waits for it, leased or not");
    let on = EndpointPatch { status: Some(EndpointStatus::Enabled), ..EndpointPatch::default() };
    let kept = stores.endpoints.update(&live.id, ids[0], on).await.expect("update").expect("own");
    assert_eq!(kept.status, EndpointStatus::Disabled, "its owner cannot enable it again");
    let again = stores.endpoints.disable(ids[0], DisabledReason::Failing).await.expect("disable");
    assert_eq!(
        again.expect("found").disabled_reason,
        Some(DisabledReason::Operator),
        "first reason kept"
    );
    let surveyed = stores.endpoints.survey(Some(&revoked.id)).await.expect("survey");
    assert_eq!(surveyed.len(), 1);
    assert_eq!(surveyed[0].1, Some(Outcome::Dropped), "the last outcome");
    assert!(stores.endpoints.survey(None).await.expect("survey").len() >= 3);
    for (owner, id) in [(&live.id, ids[0]), (&revoked.id, ids[1]), (&rotated.id, ids[2])] {
        stores.endpoints.delete(owner, id).await.expect("delete");
    }
}

/// An endpoint's backlog beyond its bound is dropped, the soonest due first.
async fn bounded_backlogs(stores: &WebhookStores<'_>) {
    let owner = KeyId::new("backlog00000").expect("an id");
    let id = register(stores, owner.as_str(), "backlog").await;
    for n in 0..5 {
        stores
            .pets
            .create(new_pet(&format!("Queued {n}"), 1, PetStatus::Available))
            .await
            .expect("add");
    }
    super::webhooks::fanned_out(stores.deliveries).await;
    let at = later(300);
    let dropped = stores.deliveries.trim(at, 2, 2).await.expect("trim");
    assert_eq!(dropped, 2, "a batch at a time");
    assert_eq!(stores.deliveries.trim(at, 2, 100).await.expect("trim"), 1);
    assert_eq!(stores.deliveries.trim(at, 2, 100).await.expect("trim"), 0);
    let attempts = stores.deliveries.attempts(&owner, id, None, 10).await.expect("list");
    let attempts = attempts.expect("own");
    assert_eq!(attempts.len(), 3);
    assert!(attempts.iter().all(|a| a.outcome == Outcome::Dropped));
    let everyone =
        ClaimLimits { count: 100, per_endpoint: 100, per_owner: 100, ..ClaimLimits::default() };
    let due = claim(stores, later(400), &everyone).await;
    let names: Vec<String> = due
        .iter()
        .filter_map(|d| match &d.event.object {
            animal_store_domain::EventObject::Pet(pet) => Some(pet.name.as_str().to_owned()),
            animal_store_domain::EventObject::Order(_) => None,
        })
        .collect();
    assert_eq!(names, ["Queued 3", "Queued 4"], "the newest stay");
}

/// Attempts made before an instant are swept, a batch at a time, whatever their events.
async fn swept_attempts(stores: &WebhookStores<'_>) {
    let before = later(350);
    let mut swept = 0;
    loop {
        let pass = stores.deliveries.sweep(before, 2).await.expect("sweep");
        swept += pass;
        if pass < 2 {
            break;
        }
    }
    assert!(swept >= 3, "the dropped attempts, made before: {swept}");
    assert_eq!(stores.deliveries.sweep(before, 2).await.expect("sweep"), 0);
}
