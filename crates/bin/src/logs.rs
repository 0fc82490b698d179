//! The log on stderr: one line per event, in text or JSON (`docs/operations.md#logs`),
//! through tracing-subscriber's `fmt`, written by tracing-appender's writer thread so that
//! no runtime thread waits on stderr.

use std::io::{self, IsTerminal as _};
use std::sync::{Mutex, PoisonError};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};

use crate::cli::LogFormat;

/// The filter when `RUST_LOG` sets none.
const DEFAULT_FILTER: &str = "info,sea_orm_migration=warn";

/// The most bytes one `write` to a pipe takes whole, between other writers' lines.
const PIPE_BUF: usize = 4096;

/// The most lines queued for the writer thread. Its queue is allocated whole at start: the
/// library's 128,000 cost a start 2 ms of CPU, for a flood that 16,384 lines absorb too.
const QUEUED_LINES: usize = 16_384;

/// The writer thread's guard: dropping it writes every line still queued.
static WRITER: Mutex<Option<WorkerGuard>> = Mutex::new(None);

/// Starts the log in `format`, filtered by `RUST_LOG` or else by `DEFAULT_FILTER`.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    // Lossy: under a flood of lines that stderr cannot take, lines are dropped rather than
    // requests held up (the queue keeps `QUEUED_LINES`). The writer thread writes the lines it
    // finds queued together, up to a pipe's atomic write (`PIPE_BUF`), and flushes once the
    // queue is empty: whole lines, one `write` for many.
    let stderr = io::BufWriter::with_capacity(PIPE_BUF, io::stderr());
    let (writer, guard) = NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("log-writer")
        .finish(stderr);
    *WRITER.lock().unwrap_or_else(PoisonError::into_inner) = Some(guard);
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(io::stderr().is_terminal());
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

/// Writes every line still queued, before the process exits.
pub fn finish() {
    drop(WRITER.lock().unwrap_or_else(PoisonError::into_inner).take());
}
