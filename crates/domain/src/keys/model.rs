//! API keys (`docs/api.md#authentication`, `docs/operations.md#api-keys`).
//!
//! A key reads `as_live_<id>_<secret>` in production and `as_test_<id>_<secret>` in staging.
//! The id is short, public and safe to show in listings and logs; the secret is 32 random
//! alphanumeric characters (about 190 bits). The store keeps only the SHA-256 digest of the
//! whole key, so a leaked database does not leak usable keys, and digests are compared in
//! constant time.

use std::fmt;
use std::str::FromStr;
use std::time::SystemTime;

use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use thiserror::Error;

use crate::keys::plan::Plan;
use crate::keys::scope::Scope;
use crate::name_rule::{NameRuleError, check_name};

/// Where a key is valid. A server runs in one environment and refuses keys of the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Environment {
    /// The production service; keys start with `as_live_`.
    #[default]
    Production,
    /// The staging service; keys start with `as_test_`.
    Staging,
}

impl Environment {
    /// The prefix every key of this environment starts with.
    pub const fn key_prefix(self) -> &'static str {
        match self {
            Self::Production => "as_live_",
            Self::Staging => "as_test_",
        }
    }

    /// The environment's name, as configured and stored.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Production => "production",
            Self::Staging => "staging",
        }
    }
}

/// An environment name other than `production` and `staging`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown environment {0:?}: expected production or staging")]
pub struct EnvironmentError(pub String);

impl FromStr for Environment {
    type Err = EnvironmentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "production" => Ok(Self::Production),
            "staging" => Ok(Self::Staging),
            other => Err(EnvironmentError(other.to_owned())),
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The public id of a key: 12 lowercase letters and digits, held in place: a key is cloned
/// on every request (from the key cache, onto the request), and its id and owner's then cost
/// no allocation.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId([u8; KeyId::LEN]);

/// A string that is not a key id.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0:?} is not a key id: expected 12 lowercase letters and digits")]
pub struct KeyIdError(pub String);

impl KeyId {
    const LEN: usize = 12;

    /// Parses a key id, as `keys revoke` receives it.
    ///
    /// # Errors
    ///
    /// [`KeyIdError`] when `id` is not 12 lowercase letters and digits.
    pub fn new(id: &str) -> Result<Self, KeyIdError> {
        match <[u8; Self::LEN]>::try_from(id.as_bytes()) {
            Ok(bytes) if bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) => {
                Ok(Self(bytes))
            }
            _ => Err(KeyIdError(id.to_owned())),
        }
    }

    fn generate(rng: &mut impl Rng) -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        Self(std::array::from_fn(|_| ALPHABET[rng.random_range(0..ALPHABET.len())]))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Always ASCII: `new` and `generate` make nothing else.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The id as its 12 bytes, for compact keys in memory.
    pub fn to_bytes(&self) -> [u8; 12] {
        self.0
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KeyId").field(&self.as_str()).finish()
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The SHA-256 digest of a whole key: all the store knows of the secret.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KeyDigest([u8; 32]);

impl KeyDigest {
    /// The digest of `key`, exactly as presented.
    pub fn of(key: &str) -> Self {
        Self(Sha256::digest(key.as_bytes()).into())
    }

    /// Rebuilds a digest from stored bytes; `None` unless there are exactly 32.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    /// The digest's bytes, for storage.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Compares two digests in time that does not depend on where they differ.
    pub fn matches(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyDigest(..)")
    }
}

/// A whole key, secret included. It exists only while a key is being issued; its `Debug`
/// hides the secret so it cannot end up in a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    const SECRET_LEN: usize = 32;

    /// A fresh random key for `environment`, and its id.
    pub fn generate(environment: Environment) -> (KeyId, Self) {
        let mut rng = rand::rng();
        let id = KeyId::generate(&mut rng);
        let secret: String =
            (&mut rng).sample_iter(Alphanumeric).take(Self::SECRET_LEN).map(char::from).collect();
        let key = format!("{}{id}_{secret}", environment.key_prefix());
        (id, Self(key))
    }

    /// The key as the client must send it. Show it once, never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The digest the store keeps.
    pub fn digest(&self) -> KeyDigest {
        KeyDigest::of(&self.0)
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeySecret(..)")
    }
}

/// The parts of a presented key that can be checked before asking the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedKey {
    /// The environment its prefix names.
    pub environment: Environment,
    /// The id it carries.
    pub id: KeyId,
    /// The digest of the whole key.
    pub digest: KeyDigest,
}

impl PresentedKey {
    /// Parses a key as a client sent it; `None` when it does not have the shape of a key.
    pub fn parse(key: &str) -> Option<Self> {
        let (environment, rest) = [Environment::Production, Environment::Staging]
            .into_iter()
            .find_map(|env| key.strip_prefix(env.key_prefix()).map(|rest| (env, rest)))?;
        let (id, secret) = rest.split_once('_')?;
        let well_formed = secret.len() == ApiKeySecret::SECRET_LEN
            && secret.bytes().all(|b| b.is_ascii_alphanumeric());
        if !well_formed {
            return None;
        }
        Some(Self { environment, id: KeyId::new(id).ok()?, digest: KeyDigest::of(key) })
    }
}

/// A key's optional human name: 1 to 100 characters that follow the rule for names people
/// type ([`check_name`]), the one pet names follow.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyName(String);

/// Why a string is not a valid [`KeyName`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyNameError {
    /// The name is the empty string.
    #[error("key name must not be empty")]
    Empty,
    /// The name has more than [`KeyName::MAX_CHARS`] characters.
    #[error("key name must be at most {max} characters long, got {0}", max = KeyName::MAX_CHARS)]
    TooLong(usize),
    /// The name breaks the rule for names people type: blank, invisible, a control or
    /// bidirectional control character... The reason says which part.
    #[error("key {0}")]
    Characters(#[from] NameRuleError),
}

impl KeyName {
    /// The longest name accepted, in Unicode scalar values (characters), not bytes.
    pub const MAX_CHARS: usize = 100;

    /// Validates a key name.
    ///
    /// # Errors
    ///
    /// [`KeyNameError`] names the rule the input breaks.
    pub fn new(name: &str) -> Result<Self, KeyNameError> {
        if name.is_empty() {
            return Err(KeyNameError::Empty);
        }
        let chars = name.chars().count();
        if chars > Self::MAX_CHARS {
            return Err(KeyNameError::TooLong(chars));
        }
        check_name(name)?;
        Ok(Self(name.to_owned()))
    }

    /// A name read back from a store. It met the rule in force when it was written, which
    /// may have been looser than today's: only its length is checked again, so that a
    /// stricter rule never makes a key issued before it unusable.
    ///
    /// # Errors
    ///
    /// [`KeyNameError::Empty`] or [`KeyNameError::TooLong`]: no rule ever allowed either.
    pub fn stored(name: &str) -> Result<Self, KeyNameError> {
        let chars = name.chars().count();
        match chars {
            0 => Err(KeyNameError::Empty),
            _ if chars > Self::MAX_CHARS => Err(KeyNameError::TooLong(chars)),
            _ => Ok(Self(name.to_owned())),
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An API key as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Its public id.
    pub id: KeyId,
    /// A name to tell keys apart, if one was given.
    pub name: Option<KeyName>,
    /// The plan that sets its quotas.
    pub plan: Plan,
    /// What it may do.
    pub scope: Scope,
    /// Where it is valid.
    pub environment: Environment,
    /// The digest of the whole key.
    pub digest: KeyDigest,
    /// When it was issued.
    pub created_at: SystemTime,
    /// When it last authenticated a request (kept to the minute, not to the request).
    pub last_used_at: Option<SystemTime>,
    /// When it was revoked (or is to be: a harness's fixture key); from then on it
    /// authenticates nothing.
    pub revoked_at: Option<SystemTime>,
    /// When it stops authenticating: issued to expire, or rotated out at the end of its
    /// grace period.
    pub expires_at: Option<SystemTime>,
    /// The key issued to replace it, when it was rotated.
    pub rotated_to: Option<KeyId>,
    /// Who the key acts for: the first key of its rotation chain, its own id unless it
    /// was issued by rotating another. Quotas are counted per owner, so a key and its
    /// successor share one, and orders and idempotency records belong to it. (The database
    /// keeps it in the column `lineage`.)
    pub owner: KeyId,
}

impl ApiKey {
    /// Whether it authenticates requests at `now`: neither revoked nor expired.
    pub fn is_live(&self, now: SystemTime) -> bool {
        self.revoked_at.is_none_or(|at| now < at) && self.expires_at.is_none_or(|at| now < at)
    }
}

#[cfg(test)]
mod tests;
