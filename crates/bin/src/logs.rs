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
//! No line or batch is cut by another's (see `write_out`).

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{self, IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError, RwLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
/// (`PIPE_BUF`), so that a batch reaches a pipe whole, between other processes' lines.
pub const BATCH: usize = 4096;

/// How often the lines the runtime's threads kept are written, at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Starts the log in `format`, filtered by `RUST_LOG` or else by `DEFAULT_FILTER`.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(Stderr);
    start_flushing();
    match format {
        LogFormat::Text if io::stderr().is_terminal() => logs.with_ansi(true).init(),
        LogFormat::Text => logs.with_ansi(false).fmt_fields(Fields).event_format(Line).init(),
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

/// Writes `bytes` to stderr, none when empty; a log that cannot be written is not worth
/// failing over. Up to [`BATCH`] bytes take one `write`, whole on a pipe (`PIPE_BUF`) or a
/// file, with no lock but a shared one beside the other writes; a longer line takes that
/// lock alone, so that no other write lands between its parts. `std::io::Stderr`'s own lock
/// is not taken, so that short writes never wait for one another.
fn write_out(bytes: &[u8]) {
    static WRITES: RwLock<()> = RwLock::new(());
    static STDERR: OnceLock<Option<File>> = OnceLock::new();
    if bytes.is_empty() {
        return;
    }
    let stderr = STDERR.get_or_init(|| {
        use std::os::fd::AsFd as _;
        io::stderr().as_fd().try_clone_to_owned().map(File::from).ok()
    });
    let Some(mut stderr) = stderr.as_ref() else {
        // Stderr could not be duplicated: written through its own handle.
        let _ = io::stderr().write_all(bytes);
        return;
    };
    if bytes.len() <= BATCH {
        let _beside_others = WRITES.read().unwrap_or_else(PoisonError::into_inner);
        let _ = stderr.write_all(bytes);
    } else {
        let _alone = WRITES.write().unwrap_or_else(PoisonError::into_inner);
        let _ = stderr.write_all(bytes);
    }
}

/// The lines one runtime thread keeps; the thread adds to them, [`flush_all`] writes them
/// too.
#[derive(Default)]
struct Batch(Mutex<Vec<u8>>);

impl Batch {
    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the lines kept so far.
    fn write(&self) {
        let mut lines = self.lines();
        write_out(&lines);
        lines.clear();
    }
}

/// Takes one whole `line` into `lines`: kept when `keep` and it fits in a batch, after
/// writing the lines kept so far to `out` if it does not fit beside them; otherwise written
/// to `out` after them.
fn take(lines: &mut Vec<u8>, line: &[u8], keep: bool, mut out: impl FnMut(&[u8])) {
    let keep = keep && line.len() <= BATCH;
    if !keep || lines.len() + line.len() > BATCH {
        out(lines);
        lines.clear();
    }
    if keep {
        lines.extend_from_slice(line);
    } else {
        out(line);
    }
}

/// Every runtime thread's batch, for [`flush_all`]; a thread that ended leaves its entry
/// dead, and the next [`flush_all`] drops it.
static BATCHES: Mutex<Vec<Weak<Batch>>> = Mutex::new(Vec::new());

/// A runtime thread's own batch, written when the thread ends.
struct Owned(Arc<Batch>);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.write();
    }
}

thread_local! {
    /// The thread's batch, from the first time it waited for work: a runtime thread's.
    static BATCH_OF_THREAD: RefCell<Option<Owned>> = const { RefCell::new(None) };
}

/// Writes the lines this thread kept, and has it keep its `INFO` lines and below from now
/// on: called by a runtime thread about to wait for work (`on_thread_park`) and about to
/// stop.
pub fn flush_thread() {
    let _ = BATCH_OF_THREAD.try_with(|slot| {
        let Ok(mut slot) = slot.try_borrow_mut() else { return };
        if let Some(owned) = slot.as_ref() {
            owned.0.write();
        } else {
            let batch = Arc::new(Batch::default());
            BATCHES.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&batch));
            *slot = Some(Owned(batch));
        }
    });
}

/// Writes the lines every runtime thread kept: each [`FLUSH_EVERY`], and before the process
/// ends.
pub fn flush_all() {
    let batches: Vec<Arc<Batch>> = {
        let mut batches = BATCHES.lock().unwrap_or_else(PoisonError::into_inner);
        batches.retain(|batch| batch.strong_count() > 0);
        batches.iter().filter_map(Weak::upgrade).collect()
    };
    for batch in batches {
        batch.write();
    }
}

/// Starts, once, the thread that writes the batches each [`FLUSH_EVERY`]. Without it (the
/// system refused a thread, or a test's process) the batches are still written when their
/// threads wait for work or end.
fn start_flushing() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let flusher = || {
            loop {
                std::thread::sleep(FLUSH_EVERY);
                flush_all();
            }
        };
        let _ = std::thread::Builder::new().name("log-flusher".to_owned()).spawn(flusher);
    });
}

/// Stderr for the log (see the module's documentation).
#[derive(Clone, Copy)]
struct Stderr;

/// One event's line: kept in the thread's batch when `keep` and the thread has one,
/// written at once otherwise (after the thread's batch, so that its lines stay in order).
pub struct LineWriter {
    keep: bool,
}

impl io::Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, line: &[u8]) -> io::Result<()> {
        let taken = BATCH_OF_THREAD.try_with(|slot| {
            let Ok(slot) = slot.try_borrow() else { return false };
            let Some(owned) = slot.as_ref() else { return false };
            take(&mut owned.0.lines(), line, self.keep, write_out);
            true
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
            let mut seen = false;
            for span in scope.from_root() {
                seen = true;
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
            if seen {
                writer.write_char(' ')?;
            }
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
        return write_timestamp_whole(writer, now);
    };
    let seconds = since_epoch.as_secs();
    let head = SECOND.try_with(|second| {
        let Ok(mut second) = second.try_borrow_mut() else { return Ok(false) };
        if second.0 != seconds {
            let Some(time) =
                i64::try_from(seconds).ok().and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            else {
                return Ok(false);
            };
            second.1.clear();
            write!(second.1, "{}", time.format("%Y-%m-%dT%H:%M:%S."))?;
            second.0 = seconds;
        }
        writer.write_str(&second.1).map(|()| true)
    });
    match head {
        Ok(Ok(true)) => {}
        Ok(Err(err)) => return Err(err),
        Ok(Ok(false)) | Err(_) => return write_timestamp_whole(writer, now),
    }
    let mut digits = itoa::Buffer::new();
    let micros = digits.format(since_epoch.subsec_micros());
    for _ in micros.len()..6 {
        writer.write_char('0')?;
    }
    writer.write_str(micros)?;
    writer.write_char('Z')
}

/// The timestamp formatted whole, for a time before 1970 or a thread whose own second is
/// gone (it is ending).
fn write_timestamp_whole(writer: &mut Writer<'_>, now: SystemTime) -> fmt::Result {
    let time = chrono::DateTime::<chrono::Utc>::from(now);
    write!(writer, "{}", time.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
}

/// Fields as tracing-subscriber's `DefaultFields` writes them with no colours
/// (`name=value`, a space between two, a message bare): integers and booleans written
/// without `core::fmt`, strings and other values with their `Debug` at once, and the
/// message and errors by `DefaultFields`'s own visitor.
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
