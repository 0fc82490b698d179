//! Idempotent retries (`docs/api.md#idempotent-retries`).
//!
//! A client that sends `createPet` or `placeOrder` with an `Idempotency-Key` can retry it
//! safely: the first request's outcome is stored with the pet or order it created, in the
//! same transaction, and kept for [`RETENTION`]; a retry with the same key and the same
//! request gets that outcome again and creates nothing. Keys are scoped to the API key's
//! rotation chain. The same key with another request is refused, as is a key whose first
//! request is still running.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::keys::model::KeyId;
use crate::orders::model::{Order, PlaceOrderError};
use crate::pets::model::Pet;

/// How long an outcome is kept: a retry within this time is answered from it.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// A client's idempotency key: 1 to 255 visible ASCII characters (`!` to `~`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(String);

/// Why a text is not an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdempotencyKeyError {
    /// The key is empty.
    #[error("Idempotency-Key must not be empty")]
    Empty,
    /// The key is longer than [`IdempotencyKey::MAX_LEN`].
    #[error("Idempotency-Key must be at most {max} characters long, got {0}", max = IdempotencyKey::MAX_LEN)]
    TooLong(usize),
    /// The key holds a character outside visible ASCII: a space, a control character, or
    /// anything beyond ASCII.
    #[error(
        "Idempotency-Key must hold visible ASCII characters only (no spaces or control characters)"
    )]
    Invisible,
}

impl IdempotencyKey {
    /// The longest key accepted.
    pub const MAX_LEN: usize = 255;

    /// A key from the text a client sent.
    ///
    /// # Errors
    ///
    /// [`IdempotencyKeyError`] when it is empty, too long, or not visible ASCII.
    pub fn new(text: &str) -> Result<Self, IdempotencyKeyError> {
        if text.is_empty() {
            return Err(IdempotencyKeyError::Empty);
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(IdempotencyKeyError::Invisible);
        }
        if text.len() > Self::MAX_LEN {
            return Err(IdempotencyKeyError::TooLong(text.len()));
        }
        Ok(Self(text.to_owned()))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a request was: a SHA-256 digest of its method, path and body. A retry must match it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a request.
    pub fn of(method: &str, path: &str, body: &[u8]) -> Self {
        let mut digest = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes()] {
            digest.update(u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
            digest.update(part);
        }
        digest.update(body);
        Self(digest.finalize().into())
    }

    /// A fingerprint as stored.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The digest's bytes.
    pub const fn to_bytes(self) -> [u8; 32] {
        self.0
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Fingerprint({:02x}{:02x}{:02x}{:02x}..)",
            self.0[0], self.0[1], self.0[2], self.0[3]
        )
    }
}

/// A response as stored, to be sent again to a retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// Its HTTP status.
    pub status: u16,
    /// Its body, JSON text.
    pub body: String,
    /// Its `Location` header, if it had one.
    pub location: Option<String>,
}

/// A write that carries an idempotency key: whose it is, the key, the request's fingerprint
/// and the time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotentWrite {
    /// The API key's rotation chain: keys are scoped to it.
    pub owner: KeyId,
    /// The client's key.
    pub idempotency_key: IdempotencyKey,
    /// The request.
    pub fingerprint: Fingerprint,
    /// When it arrived, to the second.
    pub at: DateTime<Utc>,
}

/// A stored outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// Whose key it is.
    pub owner: KeyId,
    /// The key.
    pub idempotency_key: IdempotencyKey,
    /// The first request's fingerprint.
    pub fingerprint: Fingerprint,
    /// The first request's response.
    pub response: StoredResponse,
    /// When the first request arrived.
    pub created_at: DateTime<Utc>,
}

/// A retry whose request differs from the first one with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("this Idempotency-Key was used with another request")]
pub struct KeyReused;

impl IdempotencyRecord {
    /// The record of `write`, answered with `response`.
    pub fn of(write: IdempotentWrite, response: StoredResponse) -> Self {
        let IdempotentWrite { owner, idempotency_key, fingerprint, at } = write;
        Self { owner, idempotency_key, fingerprint, response, created_at: at }
    }

    /// Whether it is past [`RETENTION`] at `now`: then it answers nothing.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        chrono::Duration::from_std(RETENTION)
            .is_ok_and(|retention| now >= self.created_at + retention)
    }

    /// The response a retry with `fingerprint` gets.
    ///
    /// # Errors
    ///
    /// [`KeyReused`] when the retry is another request.
    pub fn replay(&self, fingerprint: Fingerprint) -> Result<&StoredResponse, KeyReused> {
        if self.fingerprint == fingerprint { Ok(&self.response) } else { Err(KeyReused) }
    }
}

/// How a keyed write found its key in the store: unused, so the write did its work, stored
/// with the record of its response; or used before, so it did nothing and returns the key's
/// unexpired record.
#[derive(Debug)]
pub enum KeyUse<T> {
    /// The key's first use: the work, done now; the record is stored with it.
    First(T),
    /// The key was used before: its stored record, and nothing new.
    Again(IdempotencyRecord),
}

/// Renders the response of a created pet, inside the transaction that stores it.
pub type RenderPet = Box<dyn FnOnce(&Pet) -> StoredResponse + Send>;

/// Renders the response of an order's placing, or of its refusal when the operation refused
/// it (an animal not available, or missing); `None` for an outcome not to store (a store
/// failure).
pub type RenderOrder =
    Box<dyn FnOnce(&Result<Order, PlaceOrderError>) -> Option<StoredResponse> + Send>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters() {
        assert!(IdempotencyKey::new("a").is_ok());
        assert!(IdempotencyKey::new(&"k".repeat(255)).is_ok());
        assert!(IdempotencyKey::new("8e03978e-40d5-43e8-bc93-6894a57f9324").is_ok());
        assert_eq!(IdempotencyKey::new(""), Err(IdempotencyKeyError::Empty));
        assert_eq!(IdempotencyKey::new(&"k".repeat(256)), Err(IdempotencyKeyError::TooLong(256)));
        for bad in ["a b", "a\tb", "a\u{0}b", "clé", "a\nb"] {
            assert_eq!(IdempotencyKey::new(bad), Err(IdempotencyKeyError::Invisible), "{bad:?}");
        }
    }

    #[test]
    fn a_fingerprint_tells_method_path_and_body_apart() {
        let base = Fingerprint::of("POST", "/v1/pets", b"{}");
        assert_eq!(base, Fingerprint::of("POST", "/v1/pets", b"{}"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/pets", b"{ }"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/store/orders", b"{}"));
        assert_ne!(
            Fingerprint::of("POST", "/v1/pets", b""),
            Fingerprint::of("POST", "/v1/pet", b"s")
        );
    }

    #[test]
    fn a_record_replays_its_own_request_for_a_day() {
        let at = DateTime::from_timestamp(1_900_000_000, 0).unwrap();
        let fingerprint = Fingerprint::of("POST", "/v1/pets", b"{}");
        let write = IdempotentWrite {
            owner: KeyId::new("owner0000000").unwrap(),
            idempotency_key: IdempotencyKey::new("k1").unwrap(),
            fingerprint,
            at,
        };
        let response = StoredResponse { status: 201, body: "{}".into(), location: None };
        let record = IdempotencyRecord::of(write, response.clone());
        assert_eq!(record.replay(fingerprint), Ok(&response));
        assert_eq!(record.replay(Fingerprint::of("POST", "/v1/pets", b"[]")), Err(KeyReused));
        assert!(!record.is_expired(at + chrono::Duration::seconds(86_399)));
        assert!(record.is_expired(at + chrono::Duration::seconds(86_400)));
    }
}
