//! The log's format held to tracing-subscriber's own, its timestamps, and its batches.

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

/// What a log writes, kept in memory.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Capture {
    /// The lines written, each without its timestamp, which the two logs take apart.
    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(|line| line.split_once(' ').expect("a timestamp").1.to_owned()).collect()
    }
}

#[derive(Debug)]
struct Outer(Inner);

impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot read the pet")
    }
}

impl Error for Outer {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

#[derive(Debug)]
struct Inner;

impl fmt::Display for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("disk I/O error")
    }
}

impl Error for Inner {}

/// Events of every kind of field, in spans and out of them.
fn events() {
    tracing::info!("started");
    let request = tracing::info_span!(
        "request",
        method = %"GET",
        route = %"/v1/pets/{petId}",
        request_id = %"9db1d9d29cf14b2a",
        key_id = tracing::field::Empty,
    );
    let _entered = request.enter();
    request.record("key_id", "nr04i0omihqf");
    tracing::info!(status = 200_u16, latency_us = 4067_u64, "request");
    tracing::warn!(status = 503_u16, latency_us = 12_u64, "request refused: unavailable");
    let error = Outer(Inner);
    tracing::error!(error = &error as &dyn Error, "failed");
    tracing::error!(error = &Inner as &dyn Error, "failed");
    tracing::info!(
        r#type = "pet",
        delta = -3_i64,
        done = true,
        share = 0.25_f64,
        text = "a \"quoted\"\nline\u{1b}[31m",
        debug = ?Some(3),
        "with \u{1b}[31m{} fields",
        6
    );
    let empty = tracing::info_span!("inner");
    let _inner = empty.enter();
    tracing::debug!(count = 2_u64, "nested");
    tracing::info!(only = 1_u64);
}

#[test]
fn a_line_reads_as_tracing_subscribers_own_format_writes_it() {
    let (ours, theirs) = (Capture::default(), Capture::default());
    let ours_log = tracing_subscriber::fmt()
        .with_max_level(Level::TRACE)
        .with_ansi(false)
        .fmt_fields(Fields)
        .event_format(Line)
        .with_writer({
            let ours = ours.clone();
            move || ours.clone()
        })
        .finish();
    let theirs_log = tracing_subscriber::fmt()
        .with_max_level(Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let theirs = theirs.clone();
            move || theirs.clone()
        })
        .finish();
    tracing::subscriber::with_default(ours_log, events);
    tracing::subscriber::with_default(theirs_log, events);
    assert_eq!(ours.lines().len(), 8);
    assert_eq!(ours.lines(), theirs.lines());
}

#[test]
fn the_timestamp_reads_as_rfc_3339_in_microseconds() {
    for (seconds, nanos) in
        [(1_795_824_000, 5_000), (1_795_824_059, 999_999_999), (0, 0), (951_782_400, 123_456_000)]
    {
        let time = UNIX_EPOCH + Duration::new(seconds, nanos);
        let mut ours = String::new();
        write_timestamp(&mut Writer::new(&mut ours), time).unwrap();
        let expected = chrono::DateTime::<chrono::Utc>::from(time).format("%Y-%m-%dT%H:%M:%S%.6fZ");
        assert_eq!(ours, expected.to_string());
    }
}

#[test]
fn a_batch_keeps_the_lines_it_may_and_writes_the_others_after_its_own() {
    let mut written = Vec::<Vec<u8>>::new();
    let mut batch = Batch { lines: Vec::new(), on: false };
    batch.take(b"a\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(
        written,
        [b"".to_vec(), b"a\n".to_vec()],
        "a thread that never waited writes at once"
    );

    batch.on = true;
    written.clear();
    batch.take(b"b\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    batch.take(b"c\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert!(written.is_empty());
    assert_eq!(batch.lines, b"b\nc\n");

    batch.take(b"warn\n", false, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [b"b\nc\n".to_vec(), b"warn\n".to_vec()]);
    assert!(batch.lines.is_empty());

    written.clear();
    let long = vec![b'x'; BATCH - 1];
    batch.take(b"d\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    batch.take(&long, true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [b"d\n".to_vec()], "a line with no room beside the batch writes it first");
    assert_eq!(batch.lines, long);

    written.clear();
    let longer = vec![b'y'; BATCH + 1];
    batch.take(&longer, true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [long, longer], "a line longer than a batch is written at once");
    assert!(batch.lines.is_empty());
}
