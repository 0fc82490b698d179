//! The log on stderr: one line per event, in text or JSON (`docs/operations.md#logs`).
//!
//! A served request writes one line, so the line's cost is part of every request's. Two
//! things keep it small without changing what is written:
//!
//! - **Text without colours** (stderr not a terminal) is written by [`Line`] and [`Fields`],
//!   which write exactly what tracing-subscriber's default format writes with no colours,
//!   the timestamp's date and time of day formatted once a second and integers without
//!   `core::fmt`. A terminal gets tracing-subscriber's own format, colours and all.
//! - **The runtime's threads write their `INFO` lines and below in batches**: each keeps its
//!   lines, up to [`BATCH`] bytes, until it is about to wait for work (the runtime's
//!   `on_thread_park`, [`flush_thread`]), writes a `WARN` or `ERROR` line, or stops; a
//!   thread of its own writes what they kept every [`FLUSH_EVERY`] ([`flush_all`]), so that
//!   a thread that stays busy holds no line longer. A thread's lines keep their order;
//!   every other thread, and every `WARN` and `ERROR` line, is written at once.
//!
//! No line or batch is cut by another's (see `batches::write_out`).

mod batches;
mod format;

use std::io::{self, IsTerminal as _};

pub use batches::{BATCH, FLUSH_EVERY, LineWriter, flush_all, flush_thread};
pub use format::{Fields, Line};

use crate::cli::LogFormat;

/// The filter when `RUST_LOG` sets none.
const DEFAULT_FILTER: &str = "info,sea_orm_migration=warn";

/// Starts the log in `format`, filtered by `RUST_LOG` or else by `DEFAULT_FILTER`.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(batches::Stderr);
    batches::start_flushing();
    match format {
        LogFormat::Text if io::stderr().is_terminal() => logs.with_ansi(true).init(),
        LogFormat::Text => logs.with_ansi(false).fmt_fields(Fields).event_format(Line).init(),
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

#[cfg(test)]
mod tests;
