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
//!    separators, no interlinear annotation characters, and nothing unassigned, private-use
//!    or a noncharacter. The first such code point in the name gives the reason.
//! 2. The combining marks must sit on something: a name does not start with one, and no
//!    base carries more than [`MAX_MARKS_IN_A_ROW`] of them (the limit of Unicode's
//!    stream-safe text format, UAX #15).
//! 3. Something must show: a name of whitespace only is blank, and a name must hold a
//!    visible base character, not only whitespace, default-ignorable code points (zero-width
//!    characters, variation selectors...), combining marks and characters that draw nothing
//!    ([`BLANK_LOOKING`]).
//!
//! Joiners and variation selectors between visible characters are kept: Persian needs
//! U+200C ZERO WIDTH NON-JOINER, emoji sequences U+200D ZERO WIDTH JOINER and U+FE0F.
//! Lengths are not part of the rule: each name type has its own.

use std::ops::RangeInclusive;

use icu_properties::props::{
    BidiControl, BinaryProperty, DefaultIgnorableCodePoint, EnumeratedProperty, GeneralCategory,
    GeneralCategoryGroup, NoncharacterCodePoint, WhiteSpace,
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
    if let Some(reason) = name.chars().find_map(refused) {
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
