//! The threads that each own a connection which waits for SQLite's locks, and take, from one
//! queue, the reads no connection for the callers' threads could run (none was free, or a
//! lock was in the way): one hop there and one back.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use sea_orm::DbErr;
use sea_query_rusqlite::rusqlite::Connection;

use super::{internal, open_connection};
use crate::sql::connector::close_sqlite;
use crate::sql::snapshots::{Inline, end_old_snapshots};

/// How long a reader thread waits for SQLite's locks (a WAL recovery, an operator's
/// `VACUUM`) before its read fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A read queued for the threads, run on the connection of the one that takes it.
pub(super) type Job = Box<dyn FnOnce(&Connection) + Send>;

/// What the queue carries.
pub(super) enum Message {
    Run(Job),
    Stop,
}

/// The connections for the callers' threads, and the longest a snapshot is kept: what the
/// first thread ends the old snapshots of.
type Sweep = (Arc<[Mutex<Option<Inline>>]>, Duration);

/// Starts reader thread `index` on its own connection to the file at `path`, taking reads
/// from `queue`, and waits until that connection is open: the thread, and whether it opened
/// (a thread that could not open its connection has ended).
///
/// # Errors
///
/// The thread could not be started.
pub(super) fn spawn(
    index: usize,
    path: &Path,
    queue: Receiver<Message>,
    sweep: Option<Sweep>,
) -> Result<(JoinHandle<()>, Result<(), DbErr>), DbErr> {
    let (opened, open) = std::sync::mpsc::channel();
    let path = path.to_owned();
    let thread = std::thread::Builder::new()
        .name(format!("sqlite-reader-{index}"))
        .spawn(move || match open_connection(&path, BUSY_TIMEOUT) {
            Ok(connection) => {
                let _ = opened.send(Ok(()));
                serve(&connection, &queue, sweep.as_ref().map(|(s, age)| (&**s, *age)));
                close_sqlite(connection, "a database reader");
            }
            Err(err) => {
                let _ = opened.send(Err(err));
            }
        })
        .map_err(|err| internal(format_args!("cannot start a reader thread: {err}")))?;
    let opened =
        open.recv().unwrap_or_else(|_| Err(internal("a reader thread ended while opening")));
    Ok((thread, opened))
}

/// A thread's loop: jobs until told to stop or the queue is gone. A job that panics is
/// logged and dropped (its caller sees a failed read); the thread goes on.
///
/// With `sweep`, the connections for the callers' threads and the longest a snapshot is kept,
/// it also ends, that often, the snapshots kept longer on those that are not reading.
fn serve(
    connection: &Connection,
    queue: &Receiver<Message>,
    sweep: Option<(&[Mutex<Option<Inline>>], Duration)>,
) {
    let mut swept = Instant::now();
    loop {
        let wait = sweep.map_or(Duration::MAX, |(_, age)| age);
        match queue.recv_timeout(wait) {
            Ok(Message::Run(job)) => {
                if std::panic::catch_unwind(AssertUnwindSafe(|| job(connection))).is_err() {
                    tracing::error!("a database read panicked");
                }
            }
            Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some((slots, age)) = sweep
            && swept.elapsed() >= age
        {
            swept = Instant::now();
            end_old_snapshots(slots, age);
        }
    }
}
