//! The rule's cases: names it keeps and names it refuses, each with its reason.

use super::*;
use crate::{KeyName, KeyNameError, PetName, PetNameError};
use proptest::prelude::*;
use proptest::sample::{Index, select};

use NameRuleError::{
    BidiControl, Blank, ControlCharacter, InterlinearAnnotation, Invisible, InvisibleCharacter,
    LeadingCombiningMark, LineOrParagraphSeparator, TooManyCombiningMarks, UnassignedCodePoint,
};

/// Names that must be refused, each with the part of the rule it breaks.
fn refused_names() -> Vec<(String, NameRuleError)> {
    let mut names: Vec<(String, NameRuleError)> = [
        // Characters that draw nothing, alone or repeated.
        ("\u{2800}", Invisible),
        ("\u{2800}\u{2800}\u{2800}", Invisible),
        ("\u{115f}", InvisibleCharacter('\u{115f}')),
        ("\u{1160}", InvisibleCharacter('\u{1160}')),
        ("\u{3164}", InvisibleCharacter('\u{3164}')),
        ("\u{ffa0}", InvisibleCharacter('\u{ffa0}')),
        ("\u{3164} \u{2800}", InvisibleCharacter('\u{3164}')),
        ("\u{200b}", InvisibleCharacter('\u{200b}')),
        (" \u{200b} ", InvisibleCharacter('\u{200b}')),
        ("\u{200d}\u{200c}", InvisibleCharacter('\u{200d}')),
        ("\u{ad}", InvisibleCharacter('\u{ad}')),
        // Invisible characters inside a name, which would look like another name.
        ("Re\u{200b}x", InvisibleCharacter('\u{200b}')),
        ("\u{feff}Rex", InvisibleCharacter('\u{feff}')),
        ("Re\u{ad}x", InvisibleCharacter('\u{ad}')),
        ("Rex\u{2060}", InvisibleCharacter('\u{2060}')),
        ("R\u{34f}ex", InvisibleCharacter('\u{34f}')),
        ("Re\u{180e}x", InvisibleCharacter('\u{180e}')),
        ("Rex\u{e0001}", InvisibleCharacter('\u{e0001}')),
        // Joiners where no script or emoji sequence joins with them.
        ("Re\u{200d}x", InvisibleCharacter('\u{200d}')),
        ("Re\u{200c}x", InvisibleCharacter('\u{200c}')),
        ("\u{200d}😀", InvisibleCharacter('\u{200d}')),
        ("😀\u{200d}", InvisibleCharacter('\u{200d}')),
        ("😀\u{200d}x", InvisibleCharacter('\u{200d}')),
        // Tags outside an emoji tag sequence.
        ("Rex\u{e0067}\u{e007f}", InvisibleCharacter('\u{e0067}')),
        ("🏴\u{e0067}\u{e0062}", InvisibleCharacter('\u{e0067}')),
        (" \u{301}", Invisible),
        ("\u{2800}\u{301}\u{301}", Invisible),
        ("   ", Blank),
        ("\u{a0}\u{3000}", Blank),
        // Combining marks with nothing to sit on, or piled up.
        ("\u{301}", LeadingCombiningMark),
        ("\u{301}Rex", LeadingCombiningMark),
        ("\u{903}x", LeadingCombiningMark),
        ("\u{20dd}x", LeadingCombiningMark),
        ("\u{fe0f}", LeadingCombiningMark),
        // Line breaks and annotations.
        ("Rex\u{2028}Evil", LineOrParagraphSeparator),
        ("\u{2028}", LineOrParagraphSeparator),
        ("Rex\u{2029}", LineOrParagraphSeparator),
        ("a\u{fff9}b\u{fffa}c\u{fffb}", InterlinearAnnotation),
        ("\u{fffb}", InterlinearAnnotation),
        // Control characters and bidirectional controls.
        ("a\nb", ControlCharacter),
        ("\t", ControlCharacter),
        ("Rex\u{7f}", ControlCharacter),
        ("Rex\u{85}", ControlCharacter),
        ("\u{202e}gnp.exe", BidiControl),
        ("a\u{61c}", BidiControl),
        ("a\u{200e}b", BidiControl),
        ("a\u{200f}b", BidiControl),
        ("\u{2066}x\u{2069}", BidiControl),
    ]
    .into_iter()
    .map(|(name, reason)| (name.to_owned(), reason))
    .collect();
    for bidi in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
        names.push((format!("ci{bidi}bot"), BidiControl));
    }
    // Unassigned, private-use and noncharacters: the reason carries the code point.
    for (name, code_point) in [
        ("\u{378}", '\u{378}'),
        ("Rex\u{378}", '\u{378}'),
        ("\u{e000}", '\u{e000}'),
        ("Rex\u{f8ff}", '\u{f8ff}'),
        ("\u{f0000}", '\u{f0000}'),
        ("\u{fdd0}", '\u{fdd0}'),
        ("Rex\u{fdef}", '\u{fdef}'),
        ("\u{fffe}", '\u{fffe}'),
        ("Rex\u{ffff}", '\u{ffff}'),
        ("a\u{1fffe}", '\u{1fffe}'),
        ("a\u{10ffff}", '\u{10ffff}'),
    ] {
        names.push((name.to_owned(), UnassignedCodePoint(code_point)));
    }
    names.push((format!("a{}", "\u{301}".repeat(40)), TooManyCombiningMarks));
    names.push((format!("a{}", "\u{301}".repeat(MAX_MARKS_IN_A_ROW + 1)), TooManyCombiningMarks));
    names.push((format!("Zo{}x", "\u{308}\u{fe0f}".repeat(16)), TooManyCombiningMarks));
    names
}

/// Real names, which must be kept.
fn accepted_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "Zoë",
        "José",
        "Zoe\u{308}",
        "Jose\u{301}",
        "小白",
        "قطة",
        "שושי",
        "שָׁלוֹם",
        "मोती",
        "แมว",
        "초코",
        "نازنین",
        "می\u{200c}خواهم",
        "👨\u{200d}👩\u{200d}👧",
        "🏳\u{fe0f}\u{200d}🌈",
        "👩🏽\u{200d}💻",
        "🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}",
        "क्\u{200d}ष",
        "क्\u{200c}ष",
        "漢\u{e0100}",
        "🇫🇷",
        "❤\u{fe0f}",
        "1\u{fe0f}\u{20e3}",
        "Mr Whiskers",
        " Rex ",
        "BB-8",
        "Dr. Paws!",
        "ci bot #3 (staging)",
    ]
    .map(str::to_owned)
    .into();
    names.push(format!("a{}", "\u{301}".repeat(MAX_MARKS_IN_A_ROW)));
    names.push(format!("a{}b{}", "\u{301}".repeat(30), "\u{308}".repeat(30)));
    names
}

#[test]
fn refused_names_say_which_part_of_the_rule_they_break() {
    for (name, reason) in refused_names() {
        assert_eq!(check_name(&name), Err(reason), "{name:?}");
        assert_eq!(PetName::new(&name), Err(PetNameError::Characters(reason)), "{name:?}");
        assert_eq!(KeyName::new(&name), Err(KeyNameError::Characters(reason)), "{name:?}");
    }
}

#[test]
fn real_names_are_accepted_and_kept_as_typed() {
    for name in accepted_names() {
        assert_eq!(check_name(&name), Ok(()), "{name:?}");
        assert_eq!(PetName::new(&name).map(|n| n.as_str().to_owned()), Ok(name.clone()));
        assert_eq!(KeyName::new(&name).map(|n| n.as_str().to_owned()), Ok(name.clone()));
    }
}

#[test]
fn messages_name_the_part_of_the_rule_and_the_field() {
    fn message(name: &str) -> Result<(), String> {
        check_name(name).map_err(|e| e.to_string())
    }
    for (name, reason) in refused_names() {
        let message = reason.to_string();
        assert!(message.starts_with("name must "), "{name:?}: {message}");
        assert_eq!(PetNameError::Characters(reason).to_string(), message);
        assert_eq!(KeyNameError::Characters(reason).to_string(), format!("key {message}"));
    }
    assert_eq!(message("\u{2800}"), Err("name must contain a visible character".to_owned()));
    assert_eq!(
        message("Re\u{200b}x"),
        Err("name must not contain an invisible character (found U+200B); U+200C and U+200D \
             only where a script or an emoji sequence joins with them"
            .to_owned())
    );
    assert_eq!(message("\u{301}"), Err("name must not start with a combining mark".to_owned()));
    assert_eq!(
        message(&format!("a{}", "\u{301}".repeat(40))),
        Err("name must not have more than 30 combining marks in a row".to_owned())
    );
    assert_eq!(
        message("Rex\u{2028}Evil"),
        Err("name must not contain a line or paragraph separator (U+2028, U+2029)".to_owned())
    );
    assert_eq!(
        message("a\u{10ffff}"),
        Err("name must not contain a code point that is unassigned, private-use or a \
             noncharacter (found U+10FFFF)"
            .to_owned())
    );
    assert_eq!(
        message("\u{378}").unwrap_err(),
        "name must not contain a code point that is unassigned, private-use or a \
         noncharacter (found U+0378)"
    );
}

/// A character that shows on its own, from several scripts, digits, punctuation and
/// emoji.
fn base() -> impl Strategy<Value = char> {
    prop_oneof![
        proptest::char::range('a', 'z'),
        proptest::char::range('A', 'Z'),
        proptest::char::range('0', '9'),
        select(vec!['-', '\'', '.', '!', '&', '(', ')', '#', '·']),
        proptest::char::range('\u{430}', '\u{44f}'),
        proptest::char::range('\u{5d0}', '\u{5ea}'),
        proptest::char::range('\u{628}', '\u{63a}'),
        proptest::char::range('\u{915}', '\u{939}'),
        proptest::char::range('\u{e01}', '\u{e2e}'),
        proptest::char::range('\u{4e00}', '\u{9fff}'),
        proptest::char::range('\u{ac00}', '\u{d7a3}'),
        proptest::char::range('\u{1f600}', '\u{1f64f}'),
    ]
}

/// A combining mark real text puts on a base: accents, Hebrew and Arabic vowel points,
/// Devanagari and Thai vowel signs, an emoji variation selector, the keycap.
fn mark() -> impl Strategy<Value = char> {
    prop_oneof![
        // U+034F COMBINING GRAPHEME JOINER, a mark that shows nothing, aside.
        proptest::char::range('\u{300}', '\u{34e}'),
        proptest::char::range('\u{350}', '\u{36f}'),
        proptest::char::range('\u{5b0}', '\u{5bc}'),
        proptest::char::range('\u{64b}', '\u{652}'),
        proptest::char::range('\u{93e}', '\u{94c}'),
        proptest::char::range('\u{e34}', '\u{e3a}'),
        select(vec!['\u{e31}', '\u{fe0f}', '\u{20e3}']),
    ]
}

/// A base and the marks on it: usually a few, sometimes up to the limit.
fn cluster() -> impl Strategy<Value = String> {
    let marks = prop_oneof![
        4 => prop::collection::vec(mark(), 0..=2),
        1 => prop::collection::vec(mark(), 0..=MAX_MARKS_IN_A_ROW),
    ];
    (base(), marks).prop_map(|(base, marks)| std::iter::once(base).chain(marks).collect())
}

/// A name the rule accepts: clusters, with spaces between some of them.
fn valid_name() -> impl Strategy<Value = String> {
    let glue = select(vec!["", "", " "]);
    (cluster(), prop::collection::vec((glue, cluster()), 0..8)).prop_map(|(first, rest)| {
        rest.into_iter().fold(first, |name, (glue, cluster)| name + glue + &cluster)
    })
}

/// A code point no name may hold, and the reason it gives.
fn refused_code_point() -> impl Strategy<Value = (char, NameRuleError)> {
    let unassigned = |c: char| (c, UnassignedCodePoint(c));
    prop_oneof![
        proptest::char::range('\0', '\u{1f}').prop_map(|c| (c, ControlCharacter)),
        proptest::char::range('\u{7f}', '\u{9f}').prop_map(|c| (c, ControlCharacter)),
        select(
            ['\u{61c}', '\u{200e}', '\u{200f}']
                .into_iter()
                .chain('\u{202a}'..='\u{202e}')
                .chain('\u{2066}'..='\u{2069}')
                .collect::<Vec<_>>()
        )
        .prop_map(|c| (c, BidiControl)),
        select(vec!['\u{2028}', '\u{2029}']).prop_map(|c| (c, LineOrParagraphSeparator)),
        proptest::char::range('\u{fff9}', '\u{fffb}').prop_map(|c| (c, InterlinearAnnotation)),
        proptest::char::range('\u{fdd0}', '\u{fdef}').prop_map(unassigned),
        (0..=16_u32, 0xfffe..=0xffff_u32)
            .prop_filter_map("a noncharacter", |(plane, low)| char::from_u32(plane << 16 | low))
            .prop_map(unassigned),
        proptest::char::range('\u{e000}', '\u{f8ff}').prop_map(unassigned),
        proptest::char::range('\u{f0000}', '\u{ffffd}').prop_map(unassigned),
        proptest::char::range('\u{100000}', '\u{10fffd}').prop_map(unassigned),
        proptest::char::range('\u{40000}', '\u{4fffd}').prop_map(unassigned),
        select(vec!['\u{378}', '\u{379}', '\u{380}', '\u{38b}', '\u{38d}', '\u{3a2}'])
            .prop_map(unassigned),
        select(vec!['\u{200b}', '\u{2060}', '\u{feff}', '\u{ad}', '\u{34f}', '\u{115f}'])
            .prop_map(|c| (c, InvisibleCharacter(c))),
    ]
}

/// A character that shows nothing on its own: whitespace, a default-ignorable code
/// point, a combining mark or a blank-looking character.
fn invisible() -> impl Strategy<Value = char> {
    prop_oneof![
        select(vec![' ', '\u{a0}', '\u{2003}', '\u{3000}']),
        select(vec![
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{ad}',
            '\u{34f}',
            '\u{fe00}',
            '\u{fe0f}',
            '\u{e0061}',
        ]),
        mark(),
        select(BLANK_LOOKING.to_vec()),
    ]
}

/// Checks `name` with the rule and both name types, which must agree with `expected`
/// (names over the length limit aside).
fn all_agree(name: &str, expected: Result<(), NameRuleError>) -> Result<(), TestCaseError> {
    prop_assert_eq!(check_name(name), expected);
    if name.chars().count() <= PetName::MAX_CHARS {
        prop_assert_eq!(
            PetName::new(name).map(|n| n.as_str().to_owned()),
            expected.map(|()| name.to_owned()).map_err(PetNameError::Characters)
        );
    }
    if name.chars().count() <= KeyName::MAX_CHARS {
        prop_assert_eq!(
            KeyName::new(name).map(|n| n.as_str().to_owned()),
            expected.map(|()| name.to_owned()).map_err(KeyNameError::Characters)
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn names_of_visible_characters_with_their_marks_are_accepted(name in valid_name()) {
        all_agree(&name, Ok(()))?;
    }

    #[test]
    fn a_refused_code_point_anywhere_is_refused_for_what_it_is(
        name in valid_name(), (c, reason) in refused_code_point(), at in any::<Index>()
    ) {
        let at = at.index(name.chars().count() + 1);
        let name: String =
            name.chars().take(at).chain([c]).chain(name.chars().skip(at)).collect();
        all_agree(&name, Err(reason))?;
    }

    #[test]
    fn names_of_invisible_characters_and_marks_only_are_refused(
        name in prop::collection::vec(invisible(), 1..60).prop_map(String::from_iter)
    ) {
        let reason = check_name(&name).expect_err("nothing shows");
        prop_assert!(
            matches!(
                reason,
                Blank | LeadingCombiningMark | TooManyCombiningMarks | Invisible
                    | InvisibleCharacter(_)
            ),
            "{:?}: {:?}", name, reason
        );
        all_agree(&name, Err(reason))?;
    }

    #[test]
    fn a_base_carries_at_most_30_marks_in_a_row(
        head in valid_name(), base in base(), marks in prop::collection::vec(mark(), 0..=60)
    ) {
        let expected = if marks.len() <= MAX_MARKS_IN_A_ROW {
            Ok(())
        } else {
            Err(TooManyCombiningMarks)
        };
        let name: String = head.chars().chain([base]).chain(marks).collect();
        all_agree(&name, expected)?;
    }

    #[test]
    fn a_name_starting_with_a_mark_is_refused(mark in mark(), name in valid_name()) {
        all_agree(&format!("{mark}{name}"), Err(LeadingCombiningMark))?;
    }
}
