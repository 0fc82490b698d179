//! The single writer: every write to a database runs on one thread that owns one connection.
//!
//! Callers hand the writer a job and wait. The writer takes everything queued, up to [`MAX_BATCH`]
//! jobs, runs them in one transaction and commits once (group commit): under load many writes share
//! one durable sync; alone, a write is committed at once. Each caller gets its own output back
//! after the commit, or the error that undid the whole transaction. Because the writer runs on its
//! own, a client that hangs up cannot interrupt a transaction halfway.
//!
//! The writer counts the transactions it ends ([`Commits`]) before it answers their callers: the
//! read cache gives no answer read before the count last changed (see
//! [`read_cache`](crate::sql::pets::read_cache)).
//!
//! The writer knows transactions, not what they write: it runs any [`Work`], a batch at a time.
//! What the stores write, and how the jobs of one batch share statements, is
//! [`job`](crate::sql::writer::job)'s business.
//!
//! The writer's thread has a runtime of its own. Every statement of a transaction is a round trip
//! to the database, and the next one waits for its reply: on the service's runtime, the writer
//! would wait behind the requests' tasks after every reply, and under load that wait, not the
//! database, set the pace of every write.
//!
//! # The writer's invariant
//!
//! A transaction starts only on a connection that has never seen a failure. After any failed
//! `BEGIN`, statement or `COMMIT`, the writer's connection is closed (SQLite and PostgreSQL roll
//! back whatever they still had open, and release their locks) and the next transaction opens new
//! ones. sea-orm and sqlx track a transaction depth of their own, and it can disagree with the
//! database's after a failed `COMMIT`: SQLite may keep the transaction open, the depth stays above
//! zero, and every later `begin()` becomes a savepoint inside a transaction that never ends. The
//! writer therefore never trusts a connection after a failure, and `BEGIN` itself checks the
//! database's state: on SQLite it is `BEGIN IMMEDIATE`, which SQLite refuses inside a transaction;
//! on PostgreSQL it is followed by `SET TRANSACTION ISOLATION LEVEL`, which PostgreSQL refuses once
//! a transaction has run a statement.

use std::sync::Arc;
use std::time::Duration;

use animal_store_domain::RepositoryError;
use async_trait::async_trait;
use sea_orm::{
    DatabaseConnection, DatabaseTransaction, DbErr, IsolationLevel, SqliteTransactionMode,
    TransactionOptions, TransactionTrait,
};
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::sql::connection::connector::{Backend, Connector};
use crate::sql::connection::failure::FailureKind;
use crate::sql::connection::outage::Outage;
use crate::sql::connection::reachability::Reachability;
use crate::sql::writer::commits::Commits;

/// The histogram of how many writes each transaction of the writer commits together.
pub const BATCH_SIZE_METRIC: &str = "animal_store_pet_write_batch_size";

/// The most pieces of work committed in one transaction.
pub const MAX_BATCH: usize = 64;
/// How many pieces of work may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 1024;
/// How long closing a failed connection may take before it is dropped unclosed.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the writer runs: each caller's share of a transaction, and how it gets its output.
#[async_trait]
pub(crate) trait Work: Send + Sized + 'static {
    /// Runs the statements of `batch`, the jobs of one transaction in the order they were
    /// queued. An error undoes the whole transaction: a job must leave every decision in its
    /// output, never in an error.
    async fn run(txn: &DatabaseTransaction, batch: &mut [Self]) -> Result<(), DbErr>;

    /// Answers the caller once the transaction has ended: with its output when `outcome` is
    /// `Ok` (the transaction committed), with the error otherwise.
    fn finish(self, outcome: Result<(), RepositoryError>);
}

/// Where a caller waits for its output.
pub(crate) type Reply<T> = oneshot::Sender<Result<T, RepositoryError>>;

/// Answers a caller once the transaction has ended: with its `output` when `outcome` is
/// `Ok`, with the error otherwise. The caller may have hung up; what committed stays
/// committed all the same.
pub(crate) fn reply<T>(reply: Reply<T>, output: Option<T>, outcome: Result<(), RepositoryError>) {
    let answer =
        outcome.and_then(|()| output.ok_or_else(|| RepositoryError::Backend(Box::new(JobMisused))));
    let _ = reply.send(answer);
}

/// A job whose work ran twice, or that was answered before it ran: a bug of the writer's.
#[derive(Debug, Error)]
#[error("a write job was run twice or answered before it ran")]
pub(crate) struct JobMisused;

/// A handle on the writer. Cheap to clone: clones share the writer's thread.
pub(crate) struct Writer<W> {
    queue: mpsc::Sender<W>,
    reachability: Arc<Reachability>,
}

impl<W> Clone for Writer<W> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone(), reachability: Arc::clone(&self.reachability) }
    }
}

/// The writer is gone: the database is closing.
#[derive(Debug, Error)]
#[error("the database writer has stopped")]
struct WriterStopped;

/// One refusal, shared by every caller of a batch refused while the database cannot be
/// reached.
#[derive(Debug, Error)]
#[error(transparent)]
struct Shared(Arc<RepositoryError>);

/// One transaction's failure, shared by every caller whose work it held.
#[derive(Debug, Error)]
#[error(transparent)]
struct TransactionFailed(Arc<DbErr>);

impl<W: Work> Writer<W> {
    /// Starts the writer's thread, which opens its connection with `connector` when it first
    /// needs one. The writer runs until `stop` fires (or is dropped), then commits what is
    /// already queued, closes its connection and ends; work that arrives later is refused.
    /// While `reachability` says the database cannot be reached, writes are refused at
    /// once, those already queued included.
    ///
    /// # Errors
    ///
    /// When the thread or its runtime cannot be started.
    pub(crate) fn start(
        connector: Connector,
        reachability: Arc<Reachability>,
        commits: Arc<Commits>,
        stop: oneshot::Receiver<()>,
    ) -> Result<(Self, WriterThread), DbErr> {
        let (queue, work) = mpsc::channel(QUEUE_DEPTH);
        let connection = Connection {
            connector,
            pool: None,
            outage: Outage::new("writes"),
            reachability: Arc::clone(&reachability),
            commits,
        };
        let cannot = |err: std::io::Error| DbErr::Custom(format!("cannot start the writer: {err}"));
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(cannot)?;
        let (ended, end) = oneshot::channel();
        std::thread::Builder::new()
            .name("db-writer".to_owned())
            .spawn(move || {
                runtime.block_on(run(connection, work, stop));
                let _ = ended.send(());
            })
            .map_err(cannot)?;
        Ok((Self { queue, reachability }, WriterThread(end)))
    }

    /// Queues the job `make` builds around the caller's reply, and waits for the reply.
    pub(crate) async fn submit<T>(
        &self,
        make: impl FnOnce(Reply<T>) -> W,
    ) -> Result<T, RepositoryError> {
        self.reachability.check()?;
        let (reply, answer) = oneshot::channel();
        let stopped = || RepositoryError::Unavailable(Box::new(WriterStopped));
        self.queue.send(make(reply)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The writer's thread, until it ends.
pub(crate) struct WriterThread(oneshot::Receiver<()>);

/// The writer's thread ended without finishing its work: a panic, logged by the panic hook.
#[derive(Debug, Error)]
#[error("the database writer's thread ended abnormally")]
pub(crate) struct WriterFailed;

impl WriterThread {
    /// Waits until the writer has committed what was queued, closed its connection and ended.
    ///
    /// # Errors
    ///
    /// [`WriterFailed`] when the thread ended another way.
    pub(crate) async fn ended(self) -> Result<(), WriterFailed> {
        self.0.await.map_err(|_| WriterFailed)
    }
}

async fn run<W: Work>(
    mut connection: Connection,
    mut queued: mpsc::Receiver<W>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        tokio::select! {
            received = queued.recv_many(&mut batch, MAX_BATCH) => {
                if received == 0 {
                    break;
                }
                connection.commit(&mut batch).await;
            }
            _ = &mut stop => {
                // Refuse new work, then commit what is already queued.
                queued.close();
                while queued.recv_many(&mut batch, MAX_BATCH).await > 0 {
                    connection.commit(&mut batch).await;
                }
                break;
            }
        }
    }
    connection.discard().await;
}

/// The writer's connection, opened on demand and replaced after any failure: a pool of
/// exactly one.
struct Connection {
    connector: Connector,
    pool: Option<DatabaseConnection>,
    /// Logs a run of failed transactions once, when it starts and when it ends.
    outage: Outage,
    reachability: Arc<Reachability>,
    /// The transactions ended, which the read cache follows.
    commits: Arc<Commits>,
}

impl Connection {
    /// Runs `batch` in one transaction and answers every caller in it.
    async fn commit<W: Work>(&mut self, batch: &mut Vec<W>) {
        if let Err(unreachable) = self.reachability.check() {
            let unreachable = Arc::new(unreachable);
            for job in batch.drain(..) {
                let cause = Arc::clone(&unreachable);
                job.finish(Err(RepositoryError::Unavailable(Box::new(Shared(cause)))));
            }
            return;
        }
        #[allow(clippy::cast_precision_loss, reason = "a batch holds at most 64")]
        metrics::histogram!(BATCH_SIZE_METRIC).record(batch.len() as f64);
        let done = self.transaction(batch).await;
        self.commits.ended();
        match done {
            Ok(()) => {
                self.outage.passed();
                for job in batch.drain(..) {
                    job.finish(Ok(()));
                }
            }
            Err(err) => {
                // The connection may still be inside the failed transaction, whatever sea-orm
                // and sqlx believe: never use it again.
                self.discard().await;
                let failure = FailureKind::of(&err);
                self.outage.failed(failure, &err, batch.len());
                self.reachability.observe(&err);
                let err = Arc::new(err);
                for job in batch.drain(..) {
                    job.finish(Err(failure.with_source(TransactionFailed(Arc::clone(&err)))));
                }
            }
        }
    }

    async fn transaction<W: Work>(&mut self, batch: &mut [W]) -> Result<(), DbErr> {
        let backend = self.connector.backend();
        let pool = match &mut self.pool {
            Some(pool) => pool,
            empty => empty.insert(self.connector.open_writer().await?),
        };
        let txn = pool.begin_with_options(transaction_options(backend)).await?;
        if let Err(err) = W::run(&txn, batch).await {
            // The connection is discarded next; rolling back first only frees the database
            // sooner.
            let _ = txn.rollback().await;
            return Err(err);
        }
        txn.commit().await
    }

    /// Closes the connection if it is open. Closing rolls back any transaction still open
    /// on it and releases its locks.
    async fn discard(&mut self) {
        if let Some(pool) = self.pool.take() {
            match tokio::time::timeout(CLOSE_TIMEOUT, pool.close()).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::warn!(error = %err, "closing the writer's connection failed");
                }
                Err(_) => tracing::warn!("closing the writer's connection timed out; dropped it"),
            }
        }
    }
}

/// How every write transaction starts; see the module's documentation for why.
fn transaction_options(backend: Backend) -> TransactionOptions {
    match backend {
        // IMMEDIATE takes SQLite's write lock at BEGIN, so the transaction can never fail
        // half-way for want of it; a busy lock is waited for (busy timeout) up front.
        Backend::Sqlite => TransactionOptions {
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
            ..TransactionOptions::default()
        },
        Backend::Postgres => TransactionOptions {
            isolation_level: Some(IsolationLevel::ReadCommitted),
            ..TransactionOptions::default()
        },
    }
}
