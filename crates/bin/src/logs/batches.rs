//! The log's lines on stderr: kept in batches by the runtime's threads, written whole (see
//! the log's module).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write as _};
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError, RwLock, Weak};
use std::time::Duration;

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// The most a runtime thread keeps before it writes them: a pipe's atomic write
/// (`PIPE_BUF`), so that a batch reaches a pipe whole, between other processes' lines.
pub const BATCH: usize = 4096;

/// How often the lines the runtime's threads kept are written, at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Writes `bytes` to stderr, none when empty; a log that cannot be written is not worth
/// failing over. Up to [`BATCH`] bytes take one `write`, whole on a pipe (`PIPE_BUF`) or a
/// file, with no lock but a shared one beside the other writes; a longer line takes that
/// lock alone, so that no other write lands between its parts. `std::io::Stderr`'s own lock
/// is not taken, so that short writes never wait for one another.
pub(super) fn write_out(bytes: &[u8]) {
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
pub(super) struct Batch(Mutex<Vec<u8>>);

impl Batch {
    pub(super) fn lines(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
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
pub(super) fn take(lines: &mut Vec<u8>, line: &[u8], keep: bool, mut out: impl FnMut(&[u8])) {
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
pub(super) static BATCHES: Mutex<Vec<Weak<Batch>>> = Mutex::new(Vec::new());

/// A runtime thread's own batch, written when the thread ends.
pub(super) struct Owned(pub(super) Arc<Batch>);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.write();
    }
}

thread_local! {
    /// The thread's batch, from the first time it waited for work: a runtime thread's.
    pub(super) static BATCH_OF_THREAD: RefCell<Option<Owned>> = const { RefCell::new(None) };
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
pub(super) fn start_flushing() {
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
pub(super) struct Stderr;

/// One event's line: kept in the thread's batch when `keep` and the thread has one,
/// written at once otherwise (after the thread's batch, so that its lines stay in order).
pub struct LineWriter {
    pub(super) keep: bool,
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
