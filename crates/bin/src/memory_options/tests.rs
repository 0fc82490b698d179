//! The options of `memory://`: read, refused with one line, named in `--help` and in
//! docs/testing.md, and each fault's operations checked against the document.

use std::collections::BTreeSet;

use super::*;

/// The table of faults in docs/testing.md.
const TESTING: &str = include_str!("../../../../docs/testing.md");

#[test]
fn every_memory_option_is_in_the_help_and_in_the_table_of_faults() {
    use clap::CommandFactory as _;
    let help = crate::cli::Cli::command().render_long_help().to_string();
    for option in MEMORY_OPTIONS {
        assert!(help.contains(&format!("{option}=N")), "{option} is missing from --help");
        assert!(
            TESTING.contains(&format!("| `{option}=N`")),
            "{option} is missing from docs/testing.md's table of faults"
        );
        assert!(memory_options(&format!("memory://?{option}=1")).is_ok(), "{option} is read");
    }
}

#[test]
fn memory_options_are_read_and_mistakes_named() {
    assert_eq!(memory_options("memory://").unwrap(), MemoryOptions::default());
    let options = memory_options("memory://?latency-ms=50&fail-every=10").unwrap();
    let faults = options.faults.unwrap();
    assert_eq!((faults.latency.as_millis(), faults.fail_every), (50, Some(10)));
    let url = "memory://?internal-error-every=4&key-store-unavailable-every=5\
               &drop-answer-every=3&stored-then-unavailable-every=2&latency-after-store-ms=7";
    let read = memory_options(url).unwrap();
    assert_eq!(read.faults.and_then(|faults| faults.backend_every), Some(4));
    assert_eq!(read.key_checks_fail_every, Some(5));
    let answers = AnswerFaults {
        drop_every: Some(3),
        unavailable_every: Some(2),
        delay: Duration::from_millis(7),
    };
    assert_eq!(read.answers, answers);
    for (url, message) in [
        ("memory://?latency-ms=-5", "latency-ms"),
        ("memory://?fail-every=0", "fail-every"),
        ("memory://?drop-answer-every=0", "drop-answer-every"),
        ("memory://?internal-error-every=x", "internal-error-every"),
        ("memory://?speed=1", "unknown memory:// option \"speed\""),
        ("memory://x", "no path"),
    ] {
        let err = memory_options(url).unwrap_err().to_string();
        assert!(err.contains(message), "{url}: {err}");
    }
}

/// The operations of the document: (method, operation id, tag).
fn operations() -> Vec<(String, String, String)> {
    let text = animal_store_api::openapi_document(&animal_store_api::ApiConfig::default());
    let document: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let paths = document["paths"].as_object().expect("paths");
    let mut found = Vec::new();
    for methods in paths.values() {
        for (method, operation) in methods.as_object().expect("methods") {
            if let Some(id) = operation["operationId"].as_str() {
                let tag = operation["tags"][0].as_str().unwrap_or_default().to_owned();
                found.push((method.clone(), id.to_owned(), tag));
            }
        }
    }
    found
}

/// The operation ids (`listPets`, not `fail-every` nor `2xx`) in backquotes on the line of
/// docs/testing.md that starts with `start`.
fn listed(start: &str) -> BTreeSet<String> {
    let line = TESTING
        .lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("docs/testing.md has no line starting {start:?}"));
    let operation_id = |text: &&str| {
        text.starts_with(|c: char| c.is_ascii_lowercase())
            && text.chars().all(|c| c.is_ascii_alphanumeric())
    };
    line.split('`').skip(1).step_by(2).filter(operation_id).map(str::to_owned).collect()
}

#[test]
fn each_fault_names_the_operations_it_counts_as_the_document_has_them() {
    let operations = operations();
    let ids = |keep: &dyn Fn(&str, &str) -> bool| -> BTreeSet<String> {
        operations
            .iter()
            .filter(|(method, _, tag)| keep(method, tag))
            .map(|(_, id, _)| id.clone())
            .collect()
    };
    // The stores the data faults wrap: the animals, the orders and the events.
    let data = ids(&|_, tag| matches!(tag, "animals" | "store" | "events"));
    let writes = ids(&|method, _| !matches!(method, "get" | "head" | "options"));
    let every = ids(&|_, _| true);
    assert_eq!(listed("- Data operations:"), data, "the data operations");
    assert_eq!(listed("- Writes:"), writes, "the writes");
    let keyed = listed("- Operations with a key:");
    assert_eq!(keyed, every, "every operation of the document takes a key");
}
