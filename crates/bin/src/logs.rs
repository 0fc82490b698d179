//! The log on stderr: one line per event, in text or JSON (`docs/operations.md#logs`).
//!
//! A served request writes one line, so the line's cost is part of every request's. Two
//! things keep it small without changing what is written:
//!
//! - **Text without colours** (stderr not a terminal) is written by [`Line`] and [`Fields`],
//!   which write exactly what tracing-subscriber's default format writes with no colours,
//!   the timestamp's date and time of day formatted once a second and numbers without
//!   `core::fmt`. A terminal gets tracing-subscriber's own format, colours and all.
//! - **The runtime's threads write their `INFO` lines and below in batches** ([`Stderr`]):
//!   each keeps its lines until it is about to wait for work (the runtime's `on_thread_park`,
//!   [`flush_thread`]), holds [`BATCH`] bytes, writes a `WARN` or `ERROR` line, or stops. A
//!   line is thus written once its thread has nothing more to do at once, in one `write`
//!   with the lines beside it, and the order of a thread's lines is kept. Every other
//!   thread, and every `WARN` and `ERROR` line, is written at once.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, IsTerminal as _, Write as _};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_log::NormalizeEvent as _;
use tracing_subscriber::field::{RecordFields, VisitOutput as _};
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

use crate::cli::LogFormat;

/// The filter when `RUST_LOG` sets none.
const DEFAULT_FILTER: &str = "info,sea_orm_migration=warn";

/// The most a runtime thread keeps before it writes them: a pipe's atomic write
/// (`PIPE_BUF`), so that a batch reaches a pipe whole, between other writers' lines.
pub const BATCH: usize = 4096;

/// Starts the log in `format`, filtered by `RUST_LOG` or [`DEFAULT_FILTER`].
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(Stderr::get());
    match format {
        LogFormat::Text if io::stderr().is_terminal() => logs.with_ansi(true).init(),
        LogFormat::Text => logs.with_ansi(false).fmt_fields(Fields).event_format(Line).init(),
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

/// Stderr, written without the lock of `std::io::Stderr` (each write is one whole line or
/// batch), and batched on the runtime's threads (see the module's documentation).
#[derive(Clone, Copy)]
pub struct Stderr(&'static File);

impl Stderr {
    /// The process's stderr; on the rare system where it cannot be duplicated, `/dev/null`
    /// stands in, as for a process started with stderr closed.
    fn get() -> Self {
        static FILE: OnceLock<File> = OnceLock::new();
        Self(FILE.get_or_init(|| {
            use std::os::fd::AsFd as _;
            io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map(File::from)
                .or_else(|_| File::options().write(true).open("/dev/null"))
                .expect("neither stderr nor /dev/null can be opened for the log")
        }))
    }
}

/// The lines a runtime thread keeps, from the first time it waited for work.
struct Batch {
    lines: Vec<u8>,
    /// Whether the thread batches its lines: a runtime thread once it has waited for work.
    on: bool,
}

impl Batch {
    /// Takes one whole `line`: kept when `keep` and the batch is on, after writing the lines
    /// kept so far to `out` if it does not fit beside them; otherwise written to `out` after
    /// them.
    fn take(&mut self, line: &[u8], keep: bool, mut out: impl FnMut(&[u8])) {
        let keep = keep && self.on && line.len() <= BATCH;
        if !keep || self.lines.len() + line.len() > BATCH {
            out(&self.lines);
            self.lines.clear();
        }
        if keep {
            self.lines.extend_from_slice(line);
        } else {
            out(line);
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        write_out(&self.lines);
    }
}

thread_local! {
    static BATCH_OF_THREAD: RefCell<Batch> = const {
        RefCell::new(Batch { lines: Vec::new(), on: false })
    };
}

/// Writes `bytes` to stderr, none when empty; a log that cannot be written is not worth
/// failing over.
fn write_out(bytes: &[u8]) {
    if !bytes.is_empty() {
        let _ = Stderr::get().0.write_all(bytes);
    }
}

/// Writes the lines this thread kept, and has it keep its `INFO` lines from now on: called
/// by a runtime thread about to wait for work (`on_thread_park`) and about to stop.
pub fn flush_thread() {
    let _ = BATCH_OF_THREAD.try_with(|batch| {
        if let Ok(mut batch) = batch.try_borrow_mut() {
            batch.on = true;
            write_out(&batch.lines);
            batch.lines.clear();
        }
    });
}

/// One event's line: kept in the thread's batch when `keep`, written at once otherwise
/// (after the thread's batch, so that its lines stay in order).
pub struct LineWriter {
    keep: bool,
}

impl io::Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, line: &[u8]) -> io::Result<()> {
        let taken = BATCH_OF_THREAD.try_with(|batch| match batch.try_borrow_mut() {
            Ok(mut batch) => {
                batch.take(line, self.keep, write_out);
                true
            }
            Err(_) => false,
        });
        if taken != Ok(true) {
            write_out(line);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter { keep: false }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LineWriter {
        LineWriter { keep: *meta.level() >= Level::INFO }
    }
}

/// An event's line as tracing-subscriber's default (`Full`) format writes it with no
/// colours: `2026-11-22T02:23:22.564353Z  INFO span{fields}: target: message fields`.
pub struct Line;

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        write_timestamp(&mut writer, SystemTime::now())?;
        writer.write_str(match *meta.level() {
            Level::TRACE => " TRACE ",
            Level::DEBUG => " DEBUG ",
            Level::INFO => "  INFO ",
            Level::WARN => "  WARN ",
            Level::ERROR => " ERROR ",
        })?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                writer.write_str(span.metadata().name())?;
                if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    writer.write_char('{')?;
                    writer.write_str(fields)?;
                    writer.write_char('}')?;
                }
                writer.write_char(':')?;
            }
            writer.write_char(' ')?;
        }
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

/// `2026-11-22T02:23:22.564353Z`, as tracing-subscriber's `SystemTime` writes it: the date
/// and time of day formatted once a second for each thread, the microseconds each time.
fn write_timestamp(writer: &mut Writer<'_>, now: SystemTime) -> fmt::Result {
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let Ok(since_epoch) = now.duration_since(UNIX_EPOCH) else {
        return writer.write_str("<unknown time>");
    };
    let seconds = since_epoch.as_secs();
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != seconds {
            let Some(time) =
                i64::try_from(seconds).ok().and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            else {
                return writer.write_str("<unknown time>");
            };
            text.clear();
            write!(text, "{}", time.format("%Y-%m-%dT%H:%M:%S."))?;
            *second = seconds;
        }
        writer.write_str(text)
    })?;
    let mut digits = itoa::Buffer::new();
    let micros = digits.format(since_epoch.subsec_micros());
    for _ in micros.len()..6 {
        writer.write_char('0')?;
    }
    writer.write_str(micros)?;
    writer.write_char('Z')
}

/// Fields as tracing-subscriber's `DefaultFields` writes them with no colours
/// (`name=value`, a space between two, a message bare), the numbers, strings and values
/// written at once, and the message and errors by `DefaultFields`'s own visitor.
pub struct Fields;

impl<'w> FormatFields<'w> for Fields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = FieldsVisitor { writer, empty: true, result: Ok(()) };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct FieldsVisitor<'w> {
    writer: Writer<'w>,
    empty: bool,
    result: fmt::Result,
}

impl FieldsVisitor<'_> {
    /// Whether `field` is written here: not a `log` record's metadata, which the line's
    /// head already gives, nor after a failed write.
    fn writes(&self, field: &Field) -> bool {
        self.result.is_ok() && !field.name().starts_with("log.")
    }

    fn pad(&mut self) -> fmt::Result {
        if std::mem::take(&mut self.empty) { Ok(()) } else { self.writer.write_char(' ') }
    }

    /// `name=` then what `value` writes.
    fn named(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if !self.writes(field) {
            return;
        }
        let name = field.name();
        self.result = self.pad().and_then(|()| {
            self.writer.write_str(name.strip_prefix("r#").unwrap_or(name))?;
            self.writer.write_char('=')?;
            value(&mut self.writer)
        });
    }

    /// The field as `DefaultFields`'s visitor writes it.
    fn by_default(&mut self, field: &Field, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        if !self.writes(field) {
            return;
        }
        self.result = self.pad().and_then(|()| {
            let mut visitor = DefaultVisitor::new(self.writer.by_ref(), true);
            record(&mut visitor);
            visitor.finish()
        });
    }
}

impl Visit for FieldsVisitor<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.named(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.named(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.named(field, |w| w.write_str(if value { "true" } else { "false" }));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.by_default(field, |v| v.record_str(field, value));
        } else {
            self.named(field, |w| write!(w, "{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.by_default(field, |v| v.record_error(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.by_default(field, |v| v.record_debug(field, value));
        } else {
            self.named(field, |w| write!(w, "{value:?}"));
        }
    }
}

#[cfg(test)]
mod tests;
