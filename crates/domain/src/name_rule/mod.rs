//! The one rule for names people type: pet names ([`PetName`](crate::PetName)) and key names
//! ([`KeyName`](crate::KeyName)) both go through [`check_name`].
//!
//! A name is shown to people who did not type it, so it must show what it is and read as it
//! displays. Every character is judged by Unicode's own tables (`icu_properties`), and the
//! rule has three parts, checked in this order; the first part a name breaks is the
//! [`NameRuleError`] it gets:
//!
//! 1. Every code point must be an ordinary character: no control characters, no
//!    bidirectional controls (the "Trojan Source" characters), no line or paragraph
//!    separators, no interlinear annotation characters, nothing unassigned, private-use
//!    or a noncharacter, and none of Unicode's default-ignorable code points (U+200B ZERO
//!    WIDTH SPACE, U+FEFF, U+00AD SOFT HYPHEN...), which make `Re\u{200b}x` look like
//!    `Rex`, but for those that scripts and emoji need (see below). The first
//!    such code point in the name gives the reason.
//! 2. The combining marks must sit on something: a name does not start with one, and no
//!    base carries more than [`MAX_MARKS_IN_A_ROW`] of them (the limit of Unicode's
//!    stream-safe text format, UAX #15).
//! 3. Something must show: a name of whitespace only is blank, and a name must hold a
//!    visible base character, not only whitespace, default-ignorable code points (zero-width
//!    characters, variation selectors...), combining marks and characters that draw nothing
//!    ([`BLANK_LOOKING`]).
//!
//! The default-ignorable code points that real text needs are kept: variation selectors
//! (U+FE0F of `❤\u{fe0f}`), U+200C ZERO WIDTH NON-JOINER and U+200D ZERO WIDTH JOINER where
//! RFC 5892's contextual rules allow them (Persian's `می\u{200c}خواهم`, after a virama),
//! U+200D between the emoji of an emoji ZWJ sequence (`👨\u{200d}👩\u{200d}👧`, UTS #51),
//! and the tags of an emoji tag sequence (the flag of Scotland).
//! Lengths are not part of the rule: each name type has its own.

use std::ops::RangeInclusive;

use icu_properties::props::{
    BidiControl, BinaryProperty, CanonicalCombiningClass, DefaultIgnorableCodePoint,
    EnumeratedProperty, ExtendedPictographic, GeneralCategory, GeneralCategoryGroup, JoiningType,
    NoncharacterCodePoint, WhiteSpace,
};
use thiserror::Error;

/// The most combining marks one base may carry in a row: the limit of Unicode's stream-safe
/// text format (UAX #15), which no real text needs to pass.
pub const MAX_MARKS_IN_A_ROW: usize = 30;

/// U+FFF9 INTERLINEAR ANNOTATION ANCHOR to U+FFFB INTERLINEAR ANNOTATION TERMINATOR: markup
/// inside plain text, which each program shows its own way or not at all.
pub const INTERLINEAR_ANNOTATIONS: RangeInclusive<char> = '\u{fff9}'..='\u{fffb}';

/// Characters that draw nothing and have been used to make names that look empty: U+2800
/// BRAILLE PATTERN BLANK, which Unicode classes as an ordinary symbol, and the Hangul
/// fillers (U+115F, U+1160, U+3164, U+FFA0), which it also lists as default-ignorable.
pub const BLANK_LOOKING: [char; 5] = ['\u{2800}', '\u{115f}', '\u{1160}', '\u{3164}', '\u{ffa0}'];

/// The part of the rule for names a name breaks. Each message starts with "name", so the
/// type that wraps it can name its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NameRuleError {
    /// The name contains a control character (a newline, a tab, NUL...).
    #[error("name must not contain control characters")]
    ControlCharacter,
    /// The name contains a bidirectional control (U+202E RIGHT-TO-LEFT OVERRIDE...), which
    /// makes text display in another order than it reads.
    #[error(
        "name must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069)"
    )]
    BidiControl,
    /// The name contains U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR, which break
    /// it over several lines wherever it is shown.
    #[error("name must not contain a line or paragraph separator (U+2028, U+2029)")]
    LineOrParagraphSeparator,
    /// The name contains one of [`INTERLINEAR_ANNOTATIONS`].
    #[error("name must not contain interlinear annotation characters (U+FFF9 to U+FFFB)")]
    InterlinearAnnotation,
    /// The name contains a code point that is no character anyone can read: unassigned
    /// (general category Cn; U+0378...), private-use (Co; U+E000...) or a noncharacter
    /// (U+FDD0 to U+FDEF, U+FFFE, U+FFFF...). It carries the first one.
    #[error(
        "name must not contain a code point that is unassigned, private-use or a noncharacter (found U+{code:04X})",
        code = u32::from(*.0)
    )]
    UnassignedCodePoint(char),
    /// The name contains a default-ignorable code point, which shows nothing (U+200B ZERO
    /// WIDTH SPACE, U+2060 WORD JOINER, U+FEFF, U+00AD SOFT HYPHEN...), where no script or
    /// emoji sequence needs it. It carries the first one.
    #[error(
        "name must not contain an invisible character (found U+{code:04X}); U+200C and U+200D only where a script or an emoji sequence joins with them",
        code = u32::from(*.0)
    )]
    InvisibleCharacter(char),
    /// The name is made of whitespace only.
    #[error("name must not be blank")]
    Blank,
    /// The name starts with a combining mark (general category Mn, Mc or Me: U+0301
    /// COMBINING ACUTE ACCENT...), which has no character to sit on.
    #[error("name must not start with a combining mark")]
    LeadingCombiningMark,
    /// The name has more than [`MAX_MARKS_IN_A_ROW`] combining marks in a row, which pile
    /// up over the lines around it.
    #[error("name must not have more than {MAX_MARKS_IN_A_ROW} combining marks in a row")]
    TooManyCombiningMarks,
    /// The name holds no character that shows: only whitespace, invisible characters
    /// (U+200B ZERO WIDTH SPACE...), combining marks and [`BLANK_LOOKING`] ones.
    #[error("name must contain a visible character")]
    Invisible,
}

/// Checks `name` against the rule for names people type (see the module's documentation).
///
/// # Errors
///
/// [`NameRuleError`] names the first part of the rule `name` breaks.
pub fn check_name(name: &str) -> Result<(), NameRuleError> {
    let chars: Vec<char> = name.chars().collect();
    let reason = chars.iter().enumerate().find_map(|(at, &c)| {
        refused(c).or_else(|| {
            (DefaultIgnorableCodePoint::for_char(c) && !is_needed_ignorable(&chars, at))
                .then_some(NameRuleError::InvisibleCharacter(c))
        })
    });
    if let Some(reason) = reason {
        return Err(reason);
    }
    if name.chars().all(WhiteSpace::for_char) {
        return Err(NameRuleError::Blank);
    }
    if name.chars().next().is_some_and(is_mark) {
        return Err(NameRuleError::LeadingCombiningMark);
    }
    let mut marks_in_a_row = 0;
    for c in name.chars() {
        marks_in_a_row = if is_mark(c) { marks_in_a_row + 1 } else { 0 };
        if marks_in_a_row > MAX_MARKS_IN_A_ROW {
            return Err(NameRuleError::TooManyCombiningMarks);
        }
    }
    if !name.chars().any(is_visible_base) {
        return Err(NameRuleError::Invisible);
    }
    Ok(())
}

/// Why `c` may not appear in a name at all, if it may not.
fn refused(c: char) -> Option<NameRuleError> {
    let category = GeneralCategory::for_char(c);
    if c.is_control() {
        Some(NameRuleError::ControlCharacter)
    } else if BidiControl::for_char(c) {
        Some(NameRuleError::BidiControl)
    } else if matches!(
        category,
        GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator
    ) {
        Some(NameRuleError::LineOrParagraphSeparator)
    } else if INTERLINEAR_ANNOTATIONS.contains(&c) {
        Some(NameRuleError::InterlinearAnnotation)
    } else if matches!(category, GeneralCategory::Unassigned | GeneralCategory::PrivateUse)
        || NoncharacterCodePoint::for_char(c)
    {
        Some(NameRuleError::UnassignedCodePoint(c))
    } else {
        None
    }
}

/// Whether the default-ignorable code point at `at` in `name` is one that text needs there:
/// a variation selector; U+200C ZERO WIDTH NON-JOINER or U+200D ZERO WIDTH JOINER after a
/// virama, or U+200C between letters that join (RFC 5892, Appendix A.1 and A.2); U+200D
/// between two emoji (UTS #51's ZWJ sequences); a tag of an emoji tag sequence (UTS #51).
fn is_needed_ignorable(name: &[char], at: usize) -> bool {
    let c = name[at];
    let before = &name[..at];
    let after = &name[at + 1..];
    let after_virama = before
        .last()
        .is_some_and(|&b| CanonicalCombiningClass::for_char(b) == CanonicalCombiningClass::Virama);
    match c {
        '\u{fe00}'..='\u{fe0f}'
        | '\u{e0100}'..='\u{e01ef}'
        | '\u{180b}'..='\u{180d}'
        | '\u{180f}' => true,
        '\u{200c}' => after_virama || joins_across(before, after),
        '\u{200d}' => {
            after_virama || (emoji_before(before) && after.first().is_some_and(|&a| is_emoji(a)))
        }
        TAGS_START..=TAG_CANCEL => is_in_tag_sequence(c, before, after),
        _ => false,
    }
}

/// The tags of an emoji tag sequence (U+E0020 to U+E007E), and the cancel tag that ends one.
const TAGS_START: char = '\u{e0020}';
const TAG_CANCEL: char = '\u{e007f}';

/// RFC 5892's rule for U+200C between letters: `(L|D) T* ZWNJ T* (R|D)` in joining types.
fn joins_across(before: &[char], after: &[char]) -> bool {
    let not_transparent = |&&c: &&char| JoiningType::for_char(c) != JoiningType::Transparent;
    let left = before.iter().rev().find(not_transparent).map(|&c| JoiningType::for_char(c));
    let right = after.iter().find(not_transparent).map(|&c| JoiningType::for_char(c));
    matches!(left, Some(JoiningType::LeftJoining | JoiningType::DualJoining))
        && matches!(right, Some(JoiningType::RightJoining | JoiningType::DualJoining))
}

/// Whether `before` ends in an emoji, with its presentation selector, skin tone or tags.
fn emoji_before(before: &[char]) -> bool {
    let is_decoration =
        |c: &&char| matches!(**c, '\u{fe0f}' | '\u{1f3fb}'..='\u{1f3ff}' | TAGS_START..=TAG_CANCEL);
    before.iter().rev().find(|c| !is_decoration(c)).is_some_and(|&c| is_emoji(c))
}

fn is_emoji(c: char) -> bool {
    ExtendedPictographic::for_char(c)
}

/// Whether the tag `tag` sits in an emoji tag sequence: an emoji, tags, the cancel tag.
fn is_in_tag_sequence(tag: char, before: &[char], after: &[char]) -> bool {
    let is_tag = |c: &&char| (TAGS_START..TAG_CANCEL).contains(*c);
    let tags_before = before.iter().rev().take_while(is_tag).count();
    let base = before.iter().rev().nth(tags_before);
    let ended = if tag == TAG_CANCEL {
        tags_before > 0
    } else {
        after.iter().find(|c| !is_tag(c)) == Some(&TAG_CANCEL)
    };
    base.is_some_and(|&b| is_emoji(b)) && ended
}

/// Whether `c` is a combining mark: general category Mn, Mc or Me.
fn is_mark(c: char) -> bool {
    GeneralCategoryGroup::Mark.contains(GeneralCategory::for_char(c))
}

/// Whether `c` shows on its own: not whitespace, not one of Unicode's default-ignorable
/// code points (zero-width characters, fillers, variation selectors...), not a combining
/// mark and not one of [`BLANK_LOOKING`].
fn is_visible_base(c: char) -> bool {
    !WhiteSpace::for_char(c)
        && !DefaultIgnorableCodePoint::for_char(c)
        && !is_mark(c)
        && !BLANK_LOOKING.contains(&c)
}

#[cfg(test)]
mod tests;
