//! `--fixtures FILE`: keys, pets and orders a `memory://` run starts with, so that a harness
//! in any language gets a known state, and a restart gives it back.
//!
//! ```json
//! {"keys": [{"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100},
//!           {"name": "storefront", "plan": "pro", "scope": "read"},
//!           {"name": "leaving", "plan": "free", "expiresAt": 1900000060}],
//!  "pets": [{"name": "Rex", "categoryId": 1, "status": "available"}],
//!  "orders": [{"key": "tester", "petId": 1, "status": "approved"}]}
//! ```
//!
//! Every entry is checked before the server listens, by the rules the API applies: a pet the
//! API would refuse is refused here, with the same message. The pets get the ids 1, 2, 3...
//! in file order, and an order names its pet by that id and its owner by a fixture key's
//! name; it is placed and moved as placeOrder and updateOrder would, so its pet follows. A
//! key's `expiresAt` and `revokedAt` are Unix seconds on the service's clock (the clock
//! file's, for a harness that moves it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use animal_store_domain::{
    KeyName, KeyService, NewPet, OrderService, OrderStatus, PetId, PetRepository, PetStatus, Plan,
    Scope,
};
use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use serde_json::Value;

/// The name, in the ready file, of the key `memory://` issues for every run: no fixture key
/// may take it.
pub const DEMO_KEY: &str = "demo";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    keys: Vec<KeyEntry>,
    #[serde(default)]
    pets: Vec<Value>,
    #[serde(default)]
    orders: Vec<OrderEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OrderEntry {
    key: String,
    pet_id: i64,
    status: Option<String>,
}

/// A checked fixture order.
struct FixtureOrder {
    /// The name of the fixture key that owns it.
    key: String,
    pet: PetId,
    status: OrderStatus,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyEntry {
    name: String,
    plan: String,
    /// `read` or `write`; `write` when left out.
    scope: Option<String>,
    per_minute: Option<u32>,
    per_day: Option<u32>,
    /// Unix seconds: when it stops working; after the time at start.
    expires_at: Option<u64>,
    /// Unix seconds: when it is revoked, at start or later.
    revoked_at: Option<u64>,
}

/// A checked fixture key.
struct FixtureKey {
    name: KeyName,
    plan: Plan,
    scope: Scope,
    /// How long after the start it expires.
    expires_in: Option<Duration>,
    revoked_at: Option<SystemTime>,
}

/// Checked fixtures, ready to load.
pub struct Fixtures {
    keys: Vec<FixtureKey>,
    pets: Vec<NewPet>,
    orders: Vec<FixtureOrder>,
}

impl Fixtures {
    /// Reads and checks `path`; `now` is the time pets are checked at.
    ///
    /// # Errors
    ///
    /// One line naming the file and the entry at fault.
    pub fn read(path: &Path, now: SystemTime) -> anyhow::Result<Self> {
        let at = |what: String| format!("fixtures {}: {what}", path.display());
        let text =
            std::fs::read_to_string(path).with_context(|| at("cannot be read".to_owned()))?;
        let file: File = serde_json::from_str(&text)
            .map_err(|e| anyhow!(at(format!("not the expected JSON: {e}"))))?;
        let mut names = BTreeSet::new();
        let mut keys = Vec::with_capacity(file.keys.len());
        for (i, entry) in file.keys.into_iter().enumerate() {
            let name =
                KeyName::new(&entry.name).map_err(|e| anyhow!(at(format!("keys[{i}]: {e}"))))?;
            if entry.name == DEMO_KEY {
                bail!(at(format!(
                    "keys[{i}]: the name {DEMO_KEY:?} is the ready file's for the key memory:// issues itself; name the key otherwise"
                )));
            }
            if !names.insert(entry.name.clone()) {
                bail!(at(format!("keys[{i}]: the name {:?} is used twice", entry.name)));
            }
            let plan = Plan::new(&entry.plan, entry.per_minute, entry.per_day)
                .map_err(|e| anyhow!(at(format!("keys[{i}] ({}): {e}", entry.name))))?;
            let scope = entry.scope.as_deref().map_or(Ok(Scope::Write), str::parse);
            let scope =
                scope.map_err(|e| anyhow!(at(format!("keys[{i}] ({}): {e}", entry.name))))?;
            let instant = |seconds: u64| UNIX_EPOCH + Duration::from_secs(seconds);
            let expires_in = entry
                .expires_at
                .map(|seconds| {
                    let left = instant(seconds).duration_since(now).ok().filter(|d| !d.is_zero());
                    left.ok_or_else(|| {
                        let start = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
                        anyhow!(at(format!(
                            "keys[{i}] ({}): expiresAt must be after the time at start ({start})",
                            entry.name
                        )))
                    })
                })
                .transpose()?;
            let revoked_at = entry.revoked_at.map(instant);
            keys.push(FixtureKey { name, plan, scope, expires_in, revoked_at });
        }
        let pets = file
            .pets
            .into_iter()
            .enumerate()
            .map(|(i, pet)| {
                animal_store_api::parse_new_pet(pet, now)
                    .map_err(|e| anyhow!(at(format!("pets[{i}]: {e}"))))
            })
            .collect::<anyhow::Result<Vec<NewPet>>>()?;
        let mut ordered = BTreeSet::new();
        let mut orders = Vec::with_capacity(file.orders.len());
        for (i, entry) in file.orders.into_iter().enumerate() {
            let at = |what: String| at(format!("orders[{i}]: {what}"));
            if !names.contains(&entry.key) {
                bail!(at(format!("no fixture key is named {:?}", entry.key)));
            }
            let pet = usize::try_from(entry.pet_id)
                .ok()
                .and_then(|id| id.checked_sub(1))
                .and_then(|index| pets.get(index))
                .ok_or_else(|| {
                    anyhow!(at(format!(
                        "no fixture pet has the id {} (the pets are 1 to {}, in file order)",
                        entry.pet_id,
                        pets.len()
                    )))
                })?;
            if pet.status != PetStatus::Available {
                bail!(at(format!(
                    "pet {} is {}: an order needs an available pet",
                    entry.pet_id, pet.status
                )));
            }
            if !ordered.insert(entry.pet_id) {
                bail!(at(format!("pet {} has an order already", entry.pet_id)));
            }
            let status = match entry.status.as_deref() {
                None => OrderStatus::Placed,
                Some(text) => text.parse().map_err(|e| anyhow!(at(format!("{e}"))))?,
            };
            orders.push(FixtureOrder { key: entry.key, pet: PetId::new(entry.pet_id), status });
        }
        Ok(Self { keys, pets, orders })
    }

    /// Issues the keys, adds the pets and places and moves the orders, in file order;
    /// returns each key by its name.
    ///
    /// # Errors
    ///
    /// When a store fails.
    pub async fn load(
        self,
        keys: &KeyService,
        pets: &dyn PetRepository,
        orders: &OrderService,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let mut issued = Vec::with_capacity(self.keys.len());
        let mut owners = BTreeMap::new();
        for FixtureKey { name, plan, scope, expires_in, revoked_at } in self.keys {
            let label = name.as_str().to_owned();
            let key = keys.issue_as(Some(name), plan, scope, expires_in).await;
            let key = key.context("cannot issue a fixtures key")?;
            if let Some(at) = revoked_at {
                keys.revoke_at(&key.key.id, at).await.context("cannot revoke a fixtures key")?;
            }
            owners.insert(label.clone(), key.key.owner.clone());
            issued.push((label, key.secret.expose().to_owned()));
        }
        for pet in self.pets {
            pets.create(pet).await.context("cannot add a fixtures pet")?;
        }
        for FixtureOrder { key, pet, status } in self.orders {
            let owner = owners.get(&key).context("a fixture order's key was not issued")?;
            let order = orders.place(owner, pet).await.context("cannot place a fixtures order")?;
            for step in path_to(status) {
                orders
                    .update(owner, order.id, *step)
                    .await
                    .context("cannot move a fixtures order")?;
            }
        }
        Ok(issued)
    }
}

/// The moves that take a placed order to `status`, as a client would make them.
fn path_to(status: OrderStatus) -> &'static [OrderStatus] {
    match status {
        OrderStatus::Placed => &[],
        OrderStatus::Approved => &[OrderStatus::Approved],
        OrderStatus::Delivered => &[OrderStatus::Approved, OrderStatus::Delivered],
        OrderStatus::Cancelled => &[OrderStatus::Cancelled],
    }
}
