//! How a command that failed ends the process: one line on stderr, and its exit code.

use std::process::ExitCode;

/// How the process ends when a command fails.
pub(crate) enum Failure {
    /// The command could not start: exit code 2.
    Startup(anyhow::Error),
    /// The command started and then failed: exit code 1.
    Runtime(anyhow::Error),
}

/// Says why on stderr, and gives the exit code.
pub(crate) fn fail(failure: &Failure) -> ExitCode {
    let (err, code) = match failure {
        Failure::Startup(err) => (err, 2),
        Failure::Runtime(err) => (err, 1),
    };
    eprintln!("error: {}", one_line(err));
    ExitCode::from(code)
}

/// An error and its causes on one line, never a backtrace: each cause once (drivers often
/// repeat their source in their own message), and no password of any URL a cause quotes.
pub(crate) fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = animal_store_infra::redact::redact(&cause.to_string()).into_owned();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}
