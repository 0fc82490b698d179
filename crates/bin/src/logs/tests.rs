//! The log's format held to tracing-subscriber's own, its timestamps, and its batches.

use std::error::Error;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use tracing::Level;
use tracing_subscriber::fmt::format::Writer;

use super::batches::{BATCH_OF_THREAD, BATCHES, Batch, take};
use super::format::write_timestamp;
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
    let after = |seconds, nanos| UNIX_EPOCH + Duration::new(seconds, nanos);
    for (time, expected) in [
        (after(1_795_824_000, 5_000), "2026-11-28T00:00:00.000005Z"),
        (after(1_795_824_059, 999_999_999), "2026-11-28T00:00:59.999999Z"),
        (after(0, 0), "1970-01-01T00:00:00.000000Z"),
        (after(951_782_400, 123_456_000), "2000-02-29T00:00:00.123456Z"),
        (UNIX_EPOCH - Duration::new(86_400 * 365, 250_000), "1968-12-31T23:59:59.999750Z"),
    ] {
        // Twice: the second formats nothing but the microseconds.
        for _ in 0..2 {
            let mut ours = String::new();
            write_timestamp(&mut Writer::new(&mut ours), time).unwrap();
            assert_eq!(ours, expected);
        }
    }
}

#[test]
fn a_batch_keeps_the_lines_it_may_and_writes_the_others_after_its_own() {
    let mut written = Vec::<Vec<u8>>::new();
    let mut lines = Vec::new();
    take(&mut lines, b"b\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    take(&mut lines, b"c\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert!(written.is_empty());
    assert_eq!(lines, b"b\nc\n");

    take(&mut lines, b"warn\n", false, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [b"b\nc\n".to_vec(), b"warn\n".to_vec()]);
    assert!(lines.is_empty());

    written.clear();
    let long = vec![b'x'; BATCH - 1];
    take(&mut lines, b"d\n", true, |bytes: &[u8]| written.push(bytes.to_vec()));
    take(&mut lines, &long, true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [b"d\n".to_vec()], "a line with no room beside the batch writes it first");
    assert_eq!(lines, long);

    written.clear();
    let longer = vec![b'y'; BATCH + 1];
    take(&mut lines, &longer, true, |bytes: &[u8]| written.push(bytes.to_vec()));
    assert_eq!(written, [long, longer], "a line longer than a batch is written at once");
    assert!(lines.is_empty());
}

/// The batch of the calling thread, if it has one.
fn own_batch() -> Option<Arc<Batch>> {
    BATCH_OF_THREAD.with_borrow(|slot| slot.as_ref().map(|owned| Arc::clone(&owned.0)))
}

#[test]
fn a_thread_keeps_its_lines_once_it_waited_for_work_until_they_are_written() {
    // Its own thread: a batch is the thread's (this test's process starts no flusher).
    std::thread::spawn(|| {
        let mut info = LineWriter { keep: true };
        io::Write::write_all(&mut info, b"logs test: written at once\n").unwrap();
        assert!(own_batch().is_none(), "a thread that never waited for work keeps nothing");

        flush_thread();
        let batch = own_batch().expect("a batch once the thread waited for work");
        io::Write::write_all(&mut info, b"logs test: kept\n").unwrap();
        assert_eq!(*batch.lines(), b"logs test: kept\n");
        let registered =
            BATCHES.lock().unwrap().iter().any(|b| std::ptr::eq(b.as_ptr(), Arc::as_ptr(&batch)));
        assert!(registered, "every batch can be written by `flush_all`");

        flush_all();
        assert!(batch.lines().is_empty());

        io::Write::write_all(&mut info, b"logs test: kept again\n").unwrap();
        flush_thread();
        assert!(batch.lines().is_empty(), "waiting for work writes the batch");

        io::Write::write_all(&mut info, b"logs test: kept before a warning\n").unwrap();
        io::Write::write_all(&mut LineWriter { keep: false }, b"logs test: a warning\n").unwrap();
        assert!(batch.lines().is_empty(), "a warning writes the batch before itself");
    })
    .join()
    .unwrap();
}
