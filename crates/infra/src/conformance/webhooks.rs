//! The contract of [`WebhookEndpoints`] and [`WebhookDeliveries`]: an owner keeps at most 16
//! endpoints, sees only its own, and changes or removes them; each event is queued, in its
//! own transaction, for every enabled endpoint that wants it and whose owner sees it, and
//! for none registered after it; the owners with deliveries due are counted, leased or not,
//! disabled endpoints aside; a claimed delivery is not claimed again while its lease
//! lasts, nor once delivered or given up; a failed one is due again at its next attempt; an
//! endpoint failing for long enough is disabled, and enabling it resumes what waits.

use std::time::Duration;

use chrono::{DateTime, TimeZone as _, Utc};

use animal_store_domain::{
    AttemptId, Attempted, ClaimLimits, CreateEndpointError, Due, EndpointId, EndpointPatch,
    EndpointStatus, EventLog, EventSelection, EventType, KeyId, MAX_ENDPOINTS, NewEndpoint,
    NewOrder, OrderRepository, Outcome, PetRepository, PetStatus, WebhookDeliveries,
    WebhookEndpoints, WebhookSecret, WebhookUrl,
};

use super::new_pet;

/// The stores of one database, each starting empty.
pub struct WebhookStores<'a> {
    /// Where pets are added: their events are queued.
    pub pets: &'a dyn PetRepository,
    /// Where orders are placed: their events go to their owner's endpoints only.
    pub orders: &'a dyn OrderRepository,
    /// Where the events are.
    pub events: &'a dyn EventLog,
    /// The endpoints.
    pub endpoints: &'a dyn WebhookEndpoints,
    /// Their deliveries.
    pub deliveries: &'a dyn WebhookDeliveries,
}

const LEASE: chrono::Duration = chrono::Duration::seconds(60);

fn owner(name: &str) -> KeyId {
    KeyId::new(name).expect("a key id")
}

/// A time far in the future, when everything queued is due.
pub(super) fn later(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(4_000_000_000 + seconds, 0).single().expect("an instant")
}

pub(super) fn endpoint(owner_name: &str, path: &str, events: &[&str]) -> NewEndpoint {
    NewEndpoint {
        owner: owner(owner_name),
        url: WebhookUrl::parse(&format!("https://hooks.example.com/{path}"), false)
            .expect("an address"),
        events: EventSelection::parse(events.iter().copied()).expect("event types"),
        secret: WebhookSecret::generate(),
        at: Utc.timestamp_opt(1_900_000_000, 0).single().expect("an instant"),
    }
}

async fn claim(stores: &WebhookStores<'_>, at: DateTime<Utc>, count: usize) -> Vec<Due> {
    fanned_out(stores.deliveries).await;
    stores.deliveries.claim(at, at + LEASE, &limits(count)).await.expect("claim")
}

/// Queues the deliveries of every event recorded so far, as the worker does after their
/// commit.
pub(super) async fn fanned_out(deliveries: &dyn WebhookDeliveries) {
    while deliveries.fan_out(3).await.expect("fan out") > 0 {}
}

/// Claims of up to `count` deliveries, as many of one endpoint's and of one owner's.
pub(super) fn limits(count: usize) -> ClaimLimits {
    ClaimLimits { count, per_endpoint: count, per_owner: count, ..ClaimLimits::default() }
}

/// Checks the webhooks of `stores`.
pub async fn webhooks(stores: &WebhookStores<'_>) {
    let (alice, bob) = registered(stores).await;
    queued(stores, alice, bob).await;
    attempts(stores, alice).await;
    disabling(stores, bob).await;
}

/// Endpoints are stored as given, each owner sees its own, at most 16; a change and a
/// removal touch the owner's endpoint only.
async fn registered(stores: &WebhookStores<'_>) -> (EndpointId, EndpointId) {
    let e = stores.endpoints;
    let alice = e.create(endpoint("alice0000000", "a", &["*"])).await.expect("register");
    let bob =
        e.create(endpoint("bob000000000", "b", &["pet.created", "order.placed"])).await.expect("b");
    assert_eq!(e.get(&alice.owner, alice.id).await.expect("get"), Some(alice.clone()));
    assert_eq!(e.get(&bob.owner, alice.id).await.expect("get"), None, "not another owner's");
    assert_eq!(e.list(&alice.owner).await.expect("list"), vec![alice.clone()]);
    for n in 1..MAX_ENDPOINTS {
        e.create(endpoint("carol0000000", &format!("c{n}"), &["*"])).await.expect("under 16");
    }
    let spare = e.create(endpoint("carol0000000", "c16", &["pet.deleted"])).await.expect("16th");
    let over = e.create(endpoint("carol0000000", "c17", &["*"])).await;
    assert!(matches!(over, Err(CreateEndpointError::TooMany)), "a seventeenth is refused");
    let carol = owner("carol0000000");
    assert_eq!(e.list(&carol).await.expect("list").len(), MAX_ENDPOINTS, "nothing stored");
    assert!(!e.delete(&bob.owner, spare.id).await.expect("delete"), "not another owner's");
    assert!(e.delete(&carol, spare.id).await.expect("delete"));
    assert_eq!(e.get(&carol, spare.id).await.expect("get"), None);
    let patch = EndpointPatch {
        url: Some(WebhookUrl::parse("https://hooks.example.com/a2", false).expect("an address")),
        ..EndpointPatch::default()
    };
    let changed = e.update(&alice.owner, alice.id, patch.clone()).await.expect("update");
    assert_eq!(changed.as_ref().map(|c| c.url.as_str()), Some("https://hooks.example.com/a2"));
    assert_eq!(e.update(&bob.owner, alice.id, patch).await.expect("update"), None);
    assert_eq!(e.get(&alice.owner, alice.id).await.expect("get"), changed, "as stored");
    for c in e.list(&carol).await.expect("list") {
        let off =
            EndpointPatch { status: Some(EndpointStatus::Disabled), ..EndpointPatch::default() };
        e.update(&carol, c.id, off).await.expect("disable");
    }
    (alice.id, bob.id)
}

/// Each event goes to the enabled endpoints that want it and whose owner sees it.
async fn queued(stores: &WebhookStores<'_>, alice: EndpointId, bob: EndpointId) {
    let rex = stores.pets.create(new_pet("Rex", 1, PetStatus::Available)).await.expect("add");
    let order = NewOrder { pet_id: rex.id, owner: owner("alice0000000"), at: later(-100) };
    stores.orders.place(order).await.expect("place");
    fanned_out(stores.deliveries).await;
    let owners_due = |at| stores.deliveries.owners_due(at);
    assert_eq!(owners_due(later(0)).await.expect("owners"), 2, "alice and bob; not carol");
    let before = Utc.timestamp_opt(0, 0).single().expect("an instant");
    assert_eq!(owners_due(before).await.expect("owners"), 0, "nothing due before it was queued");
    let due = claim(stores, later(0), 100).await;
    assert_eq!(owners_due(later(0)).await.expect("owners"), 2, "leased deliveries count");
    let mut found: Vec<(EndpointId, EventType)> =
        due.iter().map(|d| (d.endpoint.id, d.event.kind)).collect();
    found.sort_unstable();
    let mut expected = vec![
        (alice, EventType::PetCreated),
        (alice, EventType::OrderPlaced),
        (alice, EventType::PetUpdated),
        (bob, EventType::PetCreated),
    ];
    expected.sort_unstable();
    assert_eq!(found, expected, "Bob gets the pet's event, not Alice's order's; disabled get none");
    assert!(due.iter().all(|d| d.attempt == 1), "first attempts");
    assert!(claim(stores, later(1), 100).await.is_empty(), "leased: not claimed again");
    let record: Vec<Attempted> =
        due.iter().map(|d| d.attempted(later(2), Outcome::Status(204), None)).collect();
    stores.deliveries.record(record, Duration::from_secs(3600)).await.expect("record");
    assert!(claim(stores, later(3600), 100).await.is_empty(), "delivered: never again");
    let backlog = stores.deliveries.backlog().await.expect("backlog");
    assert_eq!(backlog.pending, 0);
}

/// A failed attempt is due again at its next attempt, listed newest first; given up, never.
async fn attempts(stores: &WebhookStores<'_>, alice: EndpointId) {
    let max = stores.pets.create(new_pet("Max", 2, PetStatus::Sold)).await.expect("add");
    let (due, others): (Vec<Due>, Vec<Due>) =
        claim(stores, later(10), 100).await.into_iter().partition(|d| d.endpoint.id == alice);
    assert_eq!((due.len(), others.len()), (1, 1), "Alice's endpoint and Bob's");
    let delivered = others.iter().map(|d| d.attempted(later(11), Outcome::Status(200), None));
    stores.deliveries.record(delivered.collect(), Duration::from_secs(3600)).await.expect("record");
    assert_eq!(due[0].event.object, animal_store_domain::EventObject::Pet(max));
    let first = due[0].attempted(later(11), Outcome::Status(500), Some(later(20)));
    stores.deliveries.record(vec![first], Duration::from_secs(3600)).await.expect("record");
    assert!(
        claim(stores, later(19), 100).await.iter().all(|d| d.endpoint.id != alice),
        "not due before its next attempt"
    );
    let again: Vec<Due> = claim(stores, later(20), 100)
        .await
        .into_iter()
        .filter(|d| d.endpoint.id == alice)
        .collect();
    assert_eq!((again.len(), again[0].attempt), (1, 2), "due again, as the second attempt");
    let second = again[0].attempted(later(21), Outcome::Timeout, None);
    stores.deliveries.record(vec![second], Duration::from_secs(3600)).await.expect("record");
    assert!(claim(stores, later(100_000), 100).await.iter().all(|d| d.endpoint.id != alice));
    let alice_owner = owner("alice0000000");
    let listed = stores
        .deliveries
        .attempts(&alice_owner, alice, None, 100)
        .await
        .expect("list")
        .expect("own");
    assert_eq!(listed.len(), 5, "three deliveries, then two attempts of one");
    assert_eq!(
        (listed[0].outcome, listed[0].attempt, listed[0].next_attempt_at),
        (Outcome::Timeout, 2, None)
    );
    assert_eq!(
        (listed[1].outcome, listed[1].next_attempt_at),
        (Outcome::Status(500), Some(later(20)))
    );
    assert!(listed.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let older = stores
        .deliveries
        .attempts(&alice_owner, alice, Some(listed[1].id), 2)
        .await
        .expect("list")
        .expect("own");
    assert_eq!(older, listed[2..4].to_vec(), "before an id, at most count");
    let bob = owner("bob000000000");
    assert_eq!(stores.deliveries.attempts(&bob, alice, None, 10).await.expect("list"), None);
    let none = stores.deliveries.attempts(&alice_owner, alice, Some(AttemptId::new(1)), 10).await;
    assert_eq!(none.expect("list"), Some(Vec::new()));
}

/// An endpoint whose attempts all failed for long enough is disabled; what waits stays
/// queued and is claimed once it is enabled again; removing it drops what waits.
async fn disabling(stores: &WebhookStores<'_>, bob: EndpointId) {
    let bob_owner = owner("bob000000000");
    stores.pets.create(new_pet("Luna", 3, PetStatus::Available)).await.expect("add");
    let due: Vec<Due> =
        claim(stores, later(30), 100).await.into_iter().filter(|d| d.endpoint.id == bob).collect();
    assert_eq!(due.len(), 1);
    let hour = Duration::from_secs(3600);
    let failed = due[0].attempted(later(31), Outcome::ConnectionError, Some(later(40)));
    stores.deliveries.record(vec![failed], hour).await.expect("record");
    let again: Vec<Due> =
        claim(stores, later(40), 100).await.into_iter().filter(|d| d.endpoint.id == bob).collect();
    let late = again[0].attempted(later(31 + 3600), Outcome::Status(503), Some(later(8000)));
    stores.deliveries.record(vec![late], hour).await.expect("record");
    let disabled = stores.endpoints.get(&bob_owner, bob).await.expect("get").expect("kept");
    assert_eq!(disabled.status, EndpointStatus::Disabled, "failing for an hour: disabled");
    assert!(claim(stores, later(9000), 100).await.iter().all(|d| d.endpoint.id != bob));
    stores.pets.create(new_pet("Nala", 3, PetStatus::Available)).await.expect("add");
    fanned_out(stores.deliveries).await;
    let on = EndpointPatch { status: Some(EndpointStatus::Enabled), ..EndpointPatch::default() };
    stores.endpoints.update(&bob_owner, bob, on).await.expect("enable");
    let resumed: Vec<Due> = claim(stores, later(9000), 100)
        .await
        .into_iter()
        .filter(|d| d.endpoint.id == bob)
        .collect();
    assert_eq!(resumed.len(), 1, "what waited resumes; an event made while disabled is not queued");
    assert_eq!(resumed[0].attempt, 3);
    let failed = resumed[0].attempted(later(9001), Outcome::Status(500), Some(later(9010)));
    stores.deliveries.record(vec![failed], hour).await.expect("record");
    let kept = stores.endpoints.get(&bob_owner, bob).await.expect("get").expect("kept");
    assert_eq!(kept.status, EndpointStatus::Enabled, "enabled again, its failing hour starts over");
    assert!(stores.deliveries.backlog().await.expect("backlog").pending >= 1);
    assert!(stores.endpoints.delete(&bob_owner, bob).await.expect("delete"));
    assert!(claim(stores, later(20_000), 100).await.iter().all(|d| d.endpoint.id != bob));
    assert_eq!(stores.deliveries.attempts(&bob_owner, bob, None, 10).await.expect("list"), None);
    // Sweeping the events drops their deliveries.
    let swept = stores.events.sweep(later(100_000), 10_000).await.expect("sweep");
    assert!(swept > 0);
    assert_eq!(stores.deliveries.backlog().await.expect("backlog").pending, 0);
}
