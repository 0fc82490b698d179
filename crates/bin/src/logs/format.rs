//! The log's text without colours, as tracing-subscriber's default format writes it.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_log::NormalizeEvent as _;
use tracing_subscriber::field::{RecordFields, VisitOutput as _};
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

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
pub(super) fn write_timestamp(writer: &mut Writer<'_>, now: SystemTime) -> fmt::Result {
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
