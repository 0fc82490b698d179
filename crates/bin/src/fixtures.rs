//! `--fixtures FILE`: keys and pets a `memory://` run starts with, so that a harness in any
//! language gets a known state, and a restart gives it back.
//!
//! ```json
//! {"keys": [{"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100}],
//!  "pets": [{"name": "Rex", "categoryId": 1, "status": "available"}]}
//! ```
//!
//! Every entry is checked before the server listens, by the rules the API applies: a pet the
//! API would refuse is refused here, with the same message.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::SystemTime;

use animal_store_domain::{KeyName, KeyService, NewPet, PetRepository, Plan};
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyEntry {
    name: String,
    plan: String,
    per_minute: Option<u32>,
    per_day: Option<u32>,
}

/// Checked fixtures, ready to load.
pub struct Fixtures {
    keys: Vec<(KeyName, Plan)>,
    pets: Vec<NewPet>,
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
            keys.push((name, plan));
        }
        let pets = file
            .pets
            .into_iter()
            .enumerate()
            .map(|(i, pet)| {
                animal_store_api::parse_new_pet(pet, now)
                    .map_err(|e| anyhow!(at(format!("pets[{i}]: {e}"))))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { keys, pets })
    }

    /// Issues the keys and adds the pets, in file order; returns each key by its name.
    ///
    /// # Errors
    ///
    /// When a store fails.
    pub async fn load(
        self,
        keys: &KeyService,
        pets: &dyn PetRepository,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let mut issued = Vec::with_capacity(self.keys.len());
        for (name, plan) in self.keys {
            let label = name.as_str().to_owned();
            let key = keys.issue(Some(name), plan).await.context("cannot issue a fixtures key")?;
            issued.push((label, key.secret.expose().to_owned()));
        }
        for pet in self.pets {
            pets.create(pet).await.context("cannot add a fixtures pet")?;
        }
        Ok(issued)
    }
}
