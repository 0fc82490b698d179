//! The options of `memory://` (`memory://?latency-ms=50&fail-every=10`): the faults a harness
//! provokes by name, from any language (docs/testing.md, "Fault injection for client teams").
//! Each counts its own operations, which the table of docs/testing.md names and a test here
//! checks against the document.

use std::time::Duration;

use crate::answer_faults::AnswerFaults;
use animal_store_infra::faults::Faults;

/// The options `memory://` takes, each `NAME=N`.
pub const MEMORY_OPTIONS: [&str; 7] = [
    "latency-ms",
    "fail-every",
    "internal-error-every",
    "key-store-unavailable-every",
    "drop-answer-every",
    "stored-then-unavailable-every",
    "latency-after-store-ms",
];

/// What `memory://`'s options ask for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MemoryOptions {
    /// The faults of the stores (`latency-ms`, `fail-every`, `internal-error-every`); `None`
    /// for none.
    pub faults: Option<Faults>,
    /// Every Nth check of a key fails as an unreachable key store would
    /// (`key-store-unavailable-every`).
    pub key_checks_fail_every: Option<u64>,
    /// What becomes of the answers of stored writes (`drop-answer-every`,
    /// `stored-then-unavailable-every`, `latency-after-store-ms`).
    pub answers: AnswerFaults,
}

/// Reads the options of a `memory://` URL.
///
/// # Errors
///
/// One line naming the mistake: a path, an unknown option, or a value that is not a whole
/// number (of 1 or more, for the counts).
pub fn memory_options(url: &str) -> anyhow::Result<MemoryOptions> {
    let options = url.strip_prefix("memory://").unwrap_or_default();
    if options.is_empty() {
        return Ok(MemoryOptions::default());
    }
    let Some(options) = options.strip_prefix('?') else {
        anyhow::bail!(
            "memory:// takes no path, only options: memory://?latency-ms=50&fail-every=10"
        );
    };
    let mut faults = Faults::default();
    let mut read = MemoryOptions::default();
    for option in options.split('&').filter(|o| !o.is_empty()) {
        let (name, value) = option.split_once('=').unwrap_or((option, ""));
        let number = || {
            value.parse::<u64>().map_err(|_| {
                anyhow::anyhow!(
                    "memory:// option {name}: expected a whole number of 0 or more, got {value:?}"
                )
            })
        };
        let every = || match number()? {
            0 => anyhow::bail!("memory:// option {name}: expected 1 or more, got 0"),
            n => Ok(Some(n)),
        };
        match name {
            "latency-ms" => faults.latency = Duration::from_millis(number()?),
            "fail-every" => faults.fail_every = every()?,
            "internal-error-every" => faults.backend_every = every()?,
            "key-store-unavailable-every" => read.key_checks_fail_every = every()?,
            "drop-answer-every" => read.answers.drop_every = every()?,
            "stored-then-unavailable-every" => read.answers.unavailable_every = every()?,
            "latency-after-store-ms" => read.answers.delay = Duration::from_millis(number()?),
            other => anyhow::bail!(
                "unknown memory:// option {other:?}: expected one of {}",
                MEMORY_OPTIONS.join(", ")
            ),
        }
    }
    read.faults = (faults != Faults::default()).then_some(faults);
    Ok(read)
}

#[cfg(test)]
mod tests;
