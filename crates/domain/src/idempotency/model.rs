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

/// The answer a keyed write's first request got, as the API encoded it (see
/// [`AnswerEncoder`](crate::idempotency::ports::AnswerEncoder)): bytes that the domain and the
/// stores keep and give back without reading them. A retry gets them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer(Vec<u8>);

impl StoredAnswer {
    /// An answer of `bytes`.
    pub const fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
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
    /// The first request's answer.
    pub answer: StoredAnswer,
    /// When the first request arrived.
    pub created_at: DateTime<Utc>,
}

/// A retry whose request differs from the first one with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("this Idempotency-Key was used with another request")]
pub struct KeyReused;

impl IdempotencyRecord {
    /// The record of `write`, answered with `answer`.
    pub fn of(write: IdempotentWrite, answer: StoredAnswer) -> Self {
        let IdempotentWrite { owner, idempotency_key, fingerprint, at } = write;
        Self { owner, idempotency_key, fingerprint, answer, created_at: at }
    }

    /// Whether it is past [`RETENTION`] at `now`: then it answers nothing.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        chrono::Duration::from_std(RETENTION)
            .is_ok_and(|retention| now >= self.created_at + retention)
    }

    /// The answer a retry with `fingerprint` gets.
    ///
    /// # Errors
    ///
    /// [`KeyReused`] when the retry is another request.
    pub fn replay(&self, fingerprint: Fingerprint) -> Result<&StoredAnswer, KeyReused> {
        if self.fingerprint == fingerprint { Ok(&self.answer) } else { Err(KeyReused) }
    }
}

/// How a keyed write found its key in the store: unused, so the write did its work, stored
/// with the record of its answer; or used before, so it did nothing and returns the key's
/// unexpired record.
#[derive(Debug)]
pub enum KeyUse<T> {
    /// The key's first use: the work, done now, with the answer stored for it.
    First(T),
    /// The key was used before: its stored record, and nothing new.
    Again(IdempotencyRecord),
}

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
        let answer = StoredAnswer::new(b"201 /v1/pets/1\n{}".to_vec());
        let record = IdempotencyRecord::of(write, answer.clone());
        assert_eq!(record.replay(fingerprint), Ok(&answer));
        assert_eq!(record.replay(Fingerprint::of("POST", "/v1/pets", b"[]")), Err(KeyReused));
        assert!(!record.is_expired(at + chrono::Duration::seconds(86_399)));
        assert!(record.is_expired(at + chrono::Duration::seconds(86_400)));
    }
}
