//! Pets and the values they are made of.
//!
//! Each value type has a single constructor that enforces its rule (`docs/api.md#newpet`):
//! a name is 1 to 100 characters that follow the rule for names people type
//! ([`crate::name_rule`]); a category id is a positive integer; a status is one of
//! `available`, `pending`, `sold` and defaults to `available`. Once built, a value is valid
//! for its whole life.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::excerpt::excerpt;
use crate::name_rule::{NameRuleError, check_name};

/// The identifier the store assigns to a pet when it is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PetId(i64);

impl PetId {
    /// Wraps an id as stored or as sent by a client. Any integer is a possible id; ids the
    /// store has never assigned simply find nothing.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for PetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The animals a listing reads by id: 1 to [`PetIds::MAX`] ids, kept in ascending order,
/// each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PetIds(Vec<PetId>);

/// Why a list of ids is not a valid [`PetIds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum PetIdsError {
    /// No id was given.
    #[error("id must be given at least once")]
    Empty,
    /// More than [`PetIds::MAX`] ids were given.
    #[error("id may be given at most {max} times, got {0}", max = PetIds::MAX)]
    TooMany(usize),
}

impl PetIds {
    /// The most ids one listing reads: a page's worth.
    pub const MAX: usize = 100;

    /// The ids, as a client gave them: in any order, repeats counted.
    ///
    /// # Errors
    ///
    /// [`PetIdsError`] when there are none, or more than [`Self::MAX`].
    pub fn new(ids: impl IntoIterator<Item = PetId>) -> Result<Self, PetIdsError> {
        let mut ids: Vec<PetId> = ids.into_iter().collect();
        match ids.len() {
            0 => return Err(PetIdsError::Empty),
            given if given > Self::MAX => return Err(PetIdsError::TooMany(given)),
            _ => {}
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(Self(ids))
    }

    /// The ids greater than `after` (all when `None`), ascending.
    pub fn after(&self, after: Option<PetId>) -> &[PetId] {
        let from = after.map_or(0, |after| self.0.partition_point(|id| *id <= after));
        &self.0[from..]
    }
}

/// A pet's name: 1 to 100 characters that follow the rule for names people type
/// ([`check_name`]): no control, bidirectional control or line-breaking characters, nothing
/// unassigned, combining marks on a base, and at least one character that shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PetName(String);

/// Why a string is not a valid [`PetName`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PetNameError {
    /// The name is the empty string.
    #[error("name must not be empty")]
    Empty,
    /// The name has more than [`PetName::MAX_CHARS`] characters.
    #[error("name must be at most {max} characters long, got {0}", max = PetName::MAX_CHARS)]
    TooLong(usize),
    /// The name breaks the rule for names people type: blank, invisible, a control or
    /// bidirectional control character... The reason says which part.
    #[error(transparent)]
    Characters(#[from] NameRuleError),
}

impl PetName {
    /// The longest name accepted, in Unicode scalar values (characters), not bytes.
    pub const MAX_CHARS: usize = 100;

    /// Validates a name.
    ///
    /// # Errors
    ///
    /// [`PetNameError`] names the rule the input breaks.
    pub fn new(name: &str) -> Result<Self, PetNameError> {
        if name.is_empty() {
            return Err(PetNameError::Empty);
        }
        let chars = name.chars().count();
        if chars > Self::MAX_CHARS {
            return Err(PetNameError::TooLong(chars));
        }
        check_name(name)?;
        Ok(Self(name.to_owned()))
    }

    /// A name read back from a store. It met the rule in force when it was written, which
    /// may have been looser than today's: only its length is checked again, so that a
    /// stricter rule never makes an animal stored before it unreadable.
    ///
    /// # Errors
    ///
    /// [`PetNameError::Empty`] or [`PetNameError::TooLong`]: no rule ever allowed either.
    pub fn stored(name: impl Into<String>) -> Result<Self, PetNameError> {
        let name = name.into();
        let chars = name.chars().count();
        match chars {
            0 => Err(PetNameError::Empty),
            _ if chars > Self::MAX_CHARS => Err(PetNameError::TooLong(chars)),
            _ => Ok(Self(name)),
        }
    }

    /// The name, without copying it.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The name as given by the client.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of the category a pet belongs to. Categories are not modelled: any positive id is
/// accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CategoryId(i64);

/// Why an integer is not a valid [`CategoryId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("categoryId must be an integer of at least {min}, got {0}", min = CategoryId::MIN)]
pub struct CategoryIdError(pub i64);

impl CategoryId {
    /// The smallest id accepted.
    pub const MIN: i64 = 1;

    /// Validates a category id.
    ///
    /// # Errors
    ///
    /// [`CategoryIdError`] when `id` is zero or negative.
    pub const fn new(id: i64) -> Result<Self, CategoryIdError> {
        if id >= Self::MIN { Ok(Self(id)) } else { Err(CategoryIdError(id)) }
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

/// Whether a pet can be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PetStatus {
    /// The pet is in the store and can be bought. The default for a new pet.
    #[default]
    Available,
    /// The pet is promised to a customer.
    Pending,
    /// The pet has left the store.
    Sold,
}

/// A string that is not one of the statuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("status must be one of {all}; got {0:?}", all = PetStatus::spellings())]
pub struct PetStatusError(pub String);

impl PetStatus {
    /// Every status, in the order the contract lists them.
    pub const ALL: [Self; 3] = [Self::Available, Self::Pending, Self::Sold];

    /// Every spelling, in order, for messages: `available, pending, sold`.
    pub fn spellings() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// The wire and storage spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Available => "available",
            Self::Pending => "pending",
            Self::Sold => "sold",
        }
    }
}

impl FromStr for PetStatus {
    type Err = PetStatusError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| PetStatusError(excerpt(s)))
    }
}

impl fmt::Display for PetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pet as a client asks to add it: every field already valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPet {
    /// The pet's name.
    pub name: PetName,
    /// The category it belongs to.
    pub category_id: CategoryId,
    /// Its status; [`PetStatus::Available`] when the client sent none.
    pub status: PetStatus,
}

/// A pet in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pet {
    /// The id the store assigned.
    pub id: PetId,
    /// The pet's name.
    pub name: PetName,
    /// The category it belongs to.
    pub category_id: CategoryId,
    /// Its status.
    pub status: PetStatus,
}

impl Pet {
    /// The pet that `new` becomes once the store has given it `id`.
    pub fn from_new(id: PetId, new: NewPet) -> Self {
        let NewPet { name, category_id, status } = new;
        Self { id, name, category_id, status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_to_a_hundred_kept_in_order_once() {
        let ids = PetIds::new([7, 3, 7, 5].map(PetId::new)).expect("ids");
        assert_eq!(ids.after(None), [3, 5, 7].map(PetId::new));
        assert_eq!(ids.after(Some(PetId::new(3))), [5, 7].map(PetId::new));
        assert_eq!(ids.after(Some(PetId::new(4))), [5, 7].map(PetId::new));
        assert!(ids.after(Some(PetId::new(7))).is_empty());
        assert_eq!(PetIds::new([]), Err(PetIdsError::Empty));
        assert!(PetIds::new((1..=100).map(PetId::new)).is_ok());
        assert_eq!(PetIds::new((1..=101).map(PetId::new)), Err(PetIdsError::TooMany(101)));
    }

    #[test]
    fn a_long_status_is_quoted_as_an_excerpt() {
        let long = "9".repeat(5_000);
        let quoted = format!("{}... (5000 characters)", "9".repeat(32));
        assert_eq!(long.parse::<PetStatus>(), Err(PetStatusError(quoted)));
    }

    #[test]
    fn a_name_must_show_and_read_as_it_displays() {
        for (invisible, first) in
            [("\u{200b}", '\u{200b}'), ("\u{3164}", '\u{3164}'), ("Re\u{200b}x", '\u{200b}')]
        {
            let refused = NameRuleError::InvisibleCharacter(first);
            assert_eq!(PetName::new(invisible), Err(refused.into()), "{invisible:?}");
        }
        assert_eq!(PetName::new("\u{2800}"), Err(NameRuleError::Invisible.into()));
        for bidi in ["\u{202e}gnp.exe", "\u{2066}x\u{2069}", "a\u{200f}b", "a\u{61c}"] {
            assert_eq!(PetName::new(bidi), Err(NameRuleError::BidiControl.into()), "{bidi:?}");
        }
        for fine in [
            "Rex",
            "Ça va",
            "ポチ",
            "Мурка",
            "شمس",
            "🐕",
            "👨\u{200d}👩\u{200d}👧",
            "Hund 🐶\u{fe0f}",
        ] {
            assert!(PetName::new(fine).is_ok(), "{fine:?}");
        }
    }
    use proptest::prelude::*;

    #[test]
    fn name_rules() {
        assert_eq!(PetName::new(""), Err(PetNameError::Empty));
        assert_eq!(PetName::new("   "), Err(NameRuleError::Blank.into()));
        assert_eq!(PetName::new("a\nb"), Err(NameRuleError::ControlCharacter.into()));
        assert_eq!(PetName::new("a\u{0}"), Err(NameRuleError::ControlCharacter.into()));
        assert_eq!(PetName::new(&"x".repeat(101)), Err(PetNameError::TooLong(101)));
        assert_eq!(PetName::new(&"é".repeat(100)).map(|n| n.as_str().chars().count()), Ok(100));
        assert_eq!(PetName::new(" Rex ").map(|n| n.to_string()), Ok(" Rex ".to_owned()));
    }

    #[test]
    fn category_rules() {
        assert_eq!(CategoryId::new(0), Err(CategoryIdError(0)));
        assert_eq!(CategoryId::new(-5), Err(CategoryIdError(-5)));
        assert_eq!(CategoryId::new(1).map(CategoryId::get), Ok(1));
        assert_eq!(CategoryId::new(i64::MAX).map(CategoryId::get), Ok(i64::MAX));
    }

    #[test]
    fn status_spelling_round_trips_and_defaults_to_available() {
        for status in PetStatus::ALL {
            assert_eq!(status.as_str().parse::<PetStatus>(), Ok(status));
        }
        assert_eq!(PetStatus::default(), PetStatus::Available);
        assert!("Available".parse::<PetStatus>().is_err());
        assert!("".parse::<PetStatus>().is_err());
    }

    proptest! {
        #[test]
        fn any_valid_name_is_kept_verbatim(name in "\\PC{1,100}") {
            prop_assume!(check_name(&name).is_ok());
            prop_assert_eq!(PetName::new(&name).map(|n| n.as_str().to_owned()), Ok(name));
        }

        #[test]
        fn a_name_with_a_control_character_is_refused(
            head in "[a-z]{0,40}", control in "\\p{Cc}", tail in "[a-z]{0,40}"
        ) {
            let name = format!("{head}{control}{tail}");
            prop_assert_eq!(PetName::new(&name), Err(NameRuleError::ControlCharacter.into()));
        }

        #[test]
        fn names_longer_than_100_characters_are_refused(name in "[a-zé]{101,300}") {
            prop_assert_eq!(PetName::new(&name), Err(PetNameError::TooLong(name.chars().count())));
        }

        #[test]
        fn whitespace_only_names_are_refused(name in "[ \u{a0}\u{2003}]{1,100}") {
            prop_assert_eq!(PetName::new(&name), Err(NameRuleError::Blank.into()));
        }

        #[test]
        fn category_ids_are_accepted_exactly_when_positive(id in any::<i64>()) {
            prop_assert_eq!(CategoryId::new(id).is_ok(), id >= 1);
        }


        #[test]
        fn unknown_status_strings_are_refused(s in "\\PC{0,20}") {
            prop_assume!(!["available", "pending", "sold"].contains(&s.as_str()));
            prop_assert!(s.parse::<PetStatus>().is_err());
        }
    }
}
