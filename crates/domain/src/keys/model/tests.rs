//! A key's cases: when it is live, how its secret parses and hashes, what its debug output
//! hides, which ids and names it takes.

use super::*;
use proptest::prelude::*;

#[test]
fn a_key_is_live_until_revoked_or_expired() {
    let t0 = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    let (id, secret) = ApiKeySecret::generate(Environment::Production);
    let key = ApiKey {
        owner: id.clone(),
        id,
        name: None,
        plan: Plan::Free,
        scope: Scope::Write,
        environment: Environment::Production,
        digest: secret.digest(),
        created_at: t0,
        last_used_at: None,
        revoked_at: None,
        expires_at: None,
        rotated_to: None,
    };
    assert!(key.is_live(t0));
    let expiring =
        ApiKey { expires_at: Some(t0 + std::time::Duration::from_secs(60)), ..key.clone() };
    assert!(expiring.is_live(t0 + std::time::Duration::from_secs(59)));
    assert!(!expiring.is_live(t0 + std::time::Duration::from_secs(60)), "not at its expiry");
    let revoked = ApiKey { revoked_at: Some(t0), ..key };
    assert!(!revoked.is_live(t0));
}

#[test]
fn generated_keys_parse_back_with_their_id_and_digest() {
    for env in [Environment::Production, Environment::Staging] {
        let (id, secret) = ApiKeySecret::generate(env);
        assert!(secret.expose().starts_with(env.key_prefix()));
        let presented = PresentedKey::parse(secret.expose()).expect("a generated key parses");
        assert_eq!(presented.environment, env);
        assert_eq!(presented.id, id);
        assert!(presented.digest.matches(&secret.digest()));
    }
}

#[test]
fn malformed_keys_do_not_parse() {
    let (_, secret) = ApiKeySecret::generate(Environment::Production);
    let key = secret.expose();
    assert!(PresentedKey::parse(&key[..key.len() - 1]).is_none());
    assert!(PresentedKey::parse(&format!("{key}x")).is_none());
    assert!(PresentedKey::parse(&key.replace("as_live_", "as_prod_")).is_none());
    assert!(PresentedKey::parse("").is_none());
    assert!(PresentedKey::parse("as_live_").is_none());
}

#[test]
fn secrets_never_show_in_debug_output() {
    let (_, secret) = ApiKeySecret::generate(Environment::Production);
    assert!(!format!("{secret:?}").contains(&secret.expose()[8..]));
    assert!(!format!("{:?}", secret.digest()).contains('0'));
}

#[test]
fn key_ids_and_names_are_validated() {
    let id = KeyId::new("abcdef012345").expect("a key id");
    assert_eq!((id.as_str(), id.to_string()), ("abcdef012345", "abcdef012345".to_owned()));
    assert_eq!(format!("{id:?}"), r#"KeyId("abcdef012345")"#);
    assert!(KeyId::new("ABCDEF012345").is_err());
    assert!(KeyId::new("abc").is_err());
    assert!(KeyId::new("abcdef0123456").is_err());
    assert!(KeyId::new("abcdef0123é").is_err(), "12 bytes, not 12 letters and digits");
    assert!(KeyName::new("ci bot").is_ok());
    assert_eq!(KeyName::new(""), Err(KeyNameError::Empty));
    assert_eq!(KeyName::new(" "), Err(NameRuleError::Blank.into()));
    assert_eq!(KeyName::new("a\tb"), Err(NameRuleError::ControlCharacter.into()));
    assert_eq!(KeyName::new(&"k".repeat(101)), Err(KeyNameError::TooLong(101)));
    assert!(KeyName::new(&"k".repeat(100)).is_ok());
    assert_eq!(
        KeyName::new("\u{202e}tob ic").map_err(|e| e.to_string()),
        Err("key name must not contain bidirectional control characters (U+061C, U+200E, \
             U+200F, U+202A to U+202E, U+2066 to U+2069)"
            .to_owned())
    );
}

proptest! {
    #[test]
    fn digests_match_only_the_same_key(a in "\\PC{0,64}", b in "\\PC{0,64}") {
        prop_assert_eq!(KeyDigest::of(&a).matches(&KeyDigest::of(&b)), a == b);
    }

    #[test]
    fn arbitrary_strings_parse_only_if_shaped_like_keys(s in "\\PC{0,80}") {
        if let Some(p) = PresentedKey::parse(&s) {
            prop_assert!(s.starts_with(p.environment.key_prefix()));
            prop_assert_eq!(s.len(), 8 + 12 + 1 + 32);
        }
    }
}
