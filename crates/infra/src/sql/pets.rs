//! The pet repository over SeaORM.
//!
//! Reads go on SQLite to the reader threads (see [`reader_threads`](super::reader_threads)),
//! on PostgreSQL to a few connections that every read shares (see
//! [`pg_readers`](super::pg_readers)). Inserts go through the database's writer (see
//! [`writer`](super::writer)), which commits many of them in one transaction under load.
//!
//! How a pet maps to its row, and the statements that add pets, are in
//! [`pet_rows`](super::pet_rows).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use animal_store_domain::{
    NewPet, PageSize, Pet, PetId, PetRepository, PetStatus, RepositoryError,
};
use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait,
};
use sea_query_rusqlite::rusqlite;
use tokio_postgres::types::ToSql;

use super::entity::pet;
use super::job::Writer;
use super::pet_rows::{pet_from_postgres_row, pet_from_sqlite_row};
use super::pg_readers::PgReaders;
use super::reachability::Reads;
use super::reader_threads::{ReaderThreads, rows_of};

/// Pets in an SQL database. Cheap to clone: clones share the readers and the writer.
#[derive(Clone)]
pub struct SeaOrmPetRepository {
    readers: PetReaders,
    reads: Arc<Reads>,
    writer: Writer,
}

/// What serves the pet reads, by backend.
#[derive(Clone)]
pub(super) enum PetReaders {
    Sqlite(Arc<ReaderThreads>),
    Postgres(PgReaders),
}

impl PetReaders {
    /// SQLite's reader connections, which the delivery worker's reads share.
    pub(super) fn sqlite(&self) -> Option<&Arc<ReaderThreads>> {
        match self {
            Self::Sqlite(threads) => Some(threads),
            Self::Postgres(_) => None,
        }
    }

    pub(super) fn postgres(&self) -> Option<&PgReaders> {
        match self {
            Self::Postgres(pg_readers) => Some(pg_readers),
            Self::Sqlite(_) => None,
        }
    }

    /// Runs `read`, each row as a pet or as why it is not one.
    async fn read(&self, read: PetRead) -> Result<Vec<Result<Pet, RepositoryError>>, DbErr> {
        match self {
            Self::Sqlite(threads) => {
                let rows = rows_of(read.sqlite_sql(), read.values(), pet_from_sqlite_row);
                // What a read answers depends on nothing but the read and the database; only
                // the reads of a page the API serves are kept, so that no one answer takes
                // much of the memo.
                if read.count() <= MEMOIZED_PETS {
                    threads.run_memoized(read, rows).await
                } else {
                    threads.run(rows).await
                }
            }
            Self::Postgres(pg_readers) => {
                let id = read.postgres_value();
                let params: &[&(dyn ToSql + Sync)] = match &id {
                    Some(id) => &[id],
                    None => &[],
                };
                pg_readers.query(&read.postgres_sql(), params, pet_from_postgres_row).await
            }
        }
    }
}

/// The most pets a read reads for its answer to be kept in the memo: the largest page
/// the API serves, and the one pet more that tells whether another page follows.
const MEMOIZED_PETS: usize = PageSize::MAX as usize + 1;

/// A read of pets: one by id, or a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PetRead {
    One(PetId),
    Page { status: Option<PetStatus>, after: Option<PetId>, count: usize },
}

impl PetRead {
    /// The query, as SeaORM builds it.
    fn select(self) -> sea_orm::Select<pet::Entity> {
        match self {
            Self::One(id) => pet::Entity::find_by_id(id.get()).limit(1),
            Self::Page { status, after, count } => list_query(status, after, count),
        }
    }

    /// The query on PostgreSQL: [`select`](Self::select) without its limit, and with its
    /// status written into the SQL.
    fn postgres_query(self) -> sea_orm::Select<pet::Entity> {
        match self {
            Self::One(id) => pet::Entity::find_by_id(id.get()),
            Self::Page { status, after, .. } => filtered(
                status.map(|status| {
                    let column = Expr::col((pet::Entity, pet::Column::Status));
                    ExprTrait::eq(column, Expr::Constant(status.as_str().into()))
                }),
                after,
            ),
        }
    }

    /// How many pets it reads at most.
    fn count(self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Page { count, .. } => count,
        }
    }

    /// Which of the five statements it is: the SQL of each depends on the kind of read and
    /// on which filters it has, never on their values.
    fn shape(self) -> usize {
        match self {
            Self::One(_) => 0,
            Self::Page { status, after, .. } => {
                1 + usize::from(status.is_some()) + 2 * usize::from(after.is_some())
            }
        }
    }

    /// Its SQL for SQLite, built by SeaORM once per shape: building a statement again for
    /// every page cost about 3% of its time (docs/benchmarks.md).
    fn sqlite_sql(self) -> &'static str {
        static SQL: [OnceLock<String>; 5] = [const { OnceLock::new() }; 5];
        SQL[self.shape()].get_or_init(|| self.select().build(DbBackend::Sqlite).sql)
    }

    /// Its SQL for PostgreSQL, built once per shape, status and count; only the id it reads
    /// or reads after is bound. Given `LIMIT $n`, PostgreSQL planned a prepared statement
    /// again at every execution (a plan for any limit would assume a tenth of the table),
    /// which cost it about a quarter of its time for each page (docs/benchmarks.md). Given
    /// `status = $1`, its plan for any status would assume a third of the pets have it, and
    /// walk the ids, filtering, even for a status few pets have. A count larger than a page
    /// ever fetches is built for its read alone.
    fn postgres_sql(self) -> Cow<'static, str> {
        const KEPT: usize = PageSize::MAX as usize + 2;
        // One by id; then a page by its status (none, or one of them) and cursor.
        const SHAPES: usize = 1 + 2 * (1 + PetStatus::ALL.len());
        static SQL: [[OnceLock<String>; SHAPES]; KEPT] =
            [const { [const { OnceLock::new() }; SHAPES] }; KEPT];
        let sql = || {
            let query = self.postgres_query().build(DbBackend::Postgres).sql;
            format!("{query} LIMIT {}", self.count())
        };
        let shape = match self {
            Self::One(_) => 0,
            Self::Page { status, after, .. } => {
                let status = status.and_then(|s| PetStatus::ALL.iter().position(|a| *a == s));
                1 + 2 * status.map_or(0, |index| index + 1) + usize::from(after.is_some())
            }
        };
        match SQL.get(self.count()) {
            Some(shapes) => Cow::Borrowed(shapes[shape].get_or_init(sql)),
            None => Cow::Owned(sql()),
        }
    }

    /// The values its SQL binds, in their order.
    fn values(self) -> Vec<rusqlite::types::Value> {
        use rusqlite::types::Value;
        match self {
            Self::One(id) => vec![Value::Integer(id.get()), Value::Integer(1)],
            Self::Page { status, after, count } => status
                .map(|s| Value::Text(s.as_str().to_owned()))
                .into_iter()
                .chain(after.map(|a| Value::Integer(a.get())))
                .chain([Value::Integer(i64::try_from(count).unwrap_or(i64::MAX))])
                .collect(),
        }
    }

    /// The value its SQL binds on PostgreSQL: the id it reads or reads after, if any.
    fn postgres_value(self) -> Option<i64> {
        match self {
            Self::One(id) => Some(id.get()),
            Self::Page { after, .. } => after.map(PetId::get),
        }
    }
}

impl SeaOrmPetRepository {
    pub(super) fn new(readers: PetReaders, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }

    pub(super) fn readers(&self) -> &PetReaders {
        &self.readers
    }

    pub(super) fn reads(&self) -> &Reads {
        &self.reads
    }

    pub(super) fn writer(&self) -> &Writer {
        &self.writer
    }
}

/// The query of a page: `count` pets after `after`, of `status` if given, by id.
pub(super) fn list_query(
    status: Option<PetStatus>,
    after: Option<PetId>,
    count: usize,
) -> sea_orm::Select<pet::Entity> {
    let status = status.map(|status| pet::Column::Status.eq(status.as_str()));
    filtered(status, after).limit(u64::try_from(count).unwrap_or(u64::MAX))
}

/// The pets after `after` that meet `status` if given, by id.
fn filtered(status: Option<Expr>, after: Option<PetId>) -> sea_orm::Select<pet::Entity> {
    let mut query = pet::Entity::find();
    if let Some(status) = status {
        query = query.filter(status);
    }
    if let Some(after) = after {
        query = query.filter(pet::Column::Id.gt(after.get()));
    }
    query.order_by_asc(pet::Column::Id)
}

#[async_trait]
impl PetRepository for SeaOrmPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.writer.add_pet(pet).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        let rows = self.reads.run(self.readers.read(PetRead::One(id))).await?;
        rows.into_iter().next().transpose()
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let read = PetRead::Page { status, after, count };
        let rows = self.reads.run(self.readers.read(read)).await?;
        rows.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::ToSql;
    use rusqlite::types::{ToSqlOutput, Value};
    use sea_orm::sea_query::PostgresQueryBuilder;
    use sea_query_rusqlite::RusqliteValue;

    /// The size of the future `read` returns, without running it.
    fn future_size<'a, Fut>(_read: impl FnOnce(&'a PetReaders) -> Fut) -> usize {
        size_of::<Fut>()
    }

    #[test]
    fn a_pet_read_is_as_large_as_an_sqlite_read_not_a_postgresql_one() {
        // Every request moves this future from layer to layer: PostgreSQL's read, 2.2 KB
        // unboxed, is boxed so that an SQLite read (about 530 bytes) does not carry its size.
        let size = future_size(|readers| readers.read(PetRead::One(PetId::new(1))));
        assert!(size < 1024, "a pet read's future takes {size} bytes");
    }

    fn owned(output: ToSqlOutput<'_>) -> Value {
        match output {
            ToSqlOutput::Borrowed(value) => value.into(),
            ToSqlOutput::Owned(value) => value,
            other => panic!("an unexpected value {other:?}"),
        }
    }

    #[test]
    fn each_read_binds_what_seaorm_builds_for_it_on_either_database() {
        let status = Some(PetStatus::Sold);
        let reads = [
            PetRead::One(PetId::new(42)),
            PetRead::Page { status: None, after: None, count: 20 },
            PetRead::Page { status, after: None, count: 21 },
            PetRead::Page { status: None, after: Some(PetId::new(7)), count: 101 },
            PetRead::Page {
                status: Some(PetStatus::Pending),
                after: Some(PetId::new(9)),
                count: 3,
            },
            PetRead::Page { status: None, after: None, count: 250 },
        ];
        // Every shape at one count, so that no two share a statement kept for another.
        let shapes = [None, Some(PetId::new(5))].into_iter().flat_map(|after| {
            let statuses = PetStatus::ALL.map(Some).into_iter().chain([None]);
            statuses.map(move |status| PetRead::Page { status, after, count: 21 })
        });
        for read in reads.into_iter().chain(shapes) {
            let built = read.select().build(DbBackend::Sqlite);
            assert_eq!(read.sqlite_sql(), built.sql, "{read:?}");
            let values: Vec<Value> = built
                .values
                .map(|v| v.0)
                .unwrap_or_default()
                .into_iter()
                .map(|v| owned(RusqliteValue(v).to_sql().expect("a value")))
                .collect();
            let bound: Vec<Value> =
                read.values().iter().map(|v| owned(v.to_sql().expect("a value"))).collect();
            assert_eq!(bound, values, "{read:?}");

            // On PostgreSQL the status and the count are written into the SQL, and only the
            // id is bound: with it written in too, the SQL reads as SeaORM's with every value
            // written in.
            let written = read.select().into_query().to_string(PostgresQueryBuilder);
            let bound = match read.postgres_value() {
                Some(id) => read.postgres_sql().replace("$1", &id.to_string()),
                None => read.postgres_sql().into_owned(),
            };
            assert_eq!(bound, written, "{read:?}");
            assert!(!read.postgres_sql().contains("$2"), "{read:?}");
        }
    }
}
