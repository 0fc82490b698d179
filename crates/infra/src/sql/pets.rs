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
use bytes::BytesMut;
use sea_orm::{
    ColumnTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait,
};
use sea_query_rusqlite::rusqlite;
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::entity::pet;
use super::job::Writer;
use super::pet_rows::{pet_from_postgres_row, pet_from_sqlite_row};
use super::pg_readers::PgReaders;
use super::reachability::Reads;
use super::reader_threads::ReaderThreads;

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
                threads.query_sql(read.sqlite_sql(), read.values(), pet_from_sqlite_row).await
            }
            Self::Postgres(pg_readers) => {
                let values = read.postgres_values();
                let params: Vec<&(dyn ToSql + Sync)> =
                    values.iter().map(|value| value as &(dyn ToSql + Sync)).collect();
                pg_readers.query(&read.postgres_sql(), &params, pet_from_postgres_row).await
            }
        }
    }
}

/// A read of pets: one by id, or a page.
#[derive(Debug, Clone, Copy)]
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

    /// The query without its limit: [`select`](Self::select) but its last clause.
    fn unlimited(self) -> sea_orm::Select<pet::Entity> {
        match self {
            Self::One(id) => pet::Entity::find_by_id(id.get()),
            Self::Page { status, after, .. } => filtered(status, after),
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

    /// Its SQL for PostgreSQL, built once per shape and count. The count is written into the
    /// SQL, not bound: given `LIMIT $n`, PostgreSQL plans a prepared statement again for
    /// every execution (a plan for any limit would assume a tenth of the table), which cost
    /// it about a quarter of its time for each page (docs/benchmarks.md). A count larger
    /// than a page ever fetches is built for its read alone.
    fn postgres_sql(self) -> Cow<'static, str> {
        const KEPT: usize = PageSize::MAX as usize + 2;
        static SQL: [[OnceLock<String>; 5]; KEPT] =
            [const { [const { OnceLock::new() }; 5] }; KEPT];
        let sql = || {
            format!("{} LIMIT {}", self.unlimited().build(DbBackend::Postgres).sql, self.count())
        };
        match SQL.get(self.count()) {
            Some(shapes) => Cow::Borrowed(shapes[self.shape()].get_or_init(sql)),
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

    /// The values its SQL binds on PostgreSQL, in their order: those on SQLite but the
    /// count.
    fn postgres_values(self) -> Vec<PgValue> {
        match self {
            Self::One(id) => vec![PgValue::Integer(id.get())],
            Self::Page { status, after, .. } => status
                .map(|s| PgValue::Text(s.as_str()))
                .into_iter()
                .chain(after.map(|a| PgValue::Integer(a.get())))
                .collect(),
        }
    }
}

/// A value a pet read binds on PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PgValue {
    Integer(i64),
    Text(&'static str),
}

impl ToSql for PgValue {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Integer(value) => value.to_sql(ty, out),
            Self::Text(value) => value.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i64 as ToSql>::accepts(ty) || <&str as ToSql>::accepts(ty)
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Integer(value) => value.to_sql_checked(ty, out),
            Self::Text(value) => value.to_sql_checked(ty, out),
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
    filtered(status, after).limit(u64::try_from(count).unwrap_or(u64::MAX))
}

/// The pets after `after`, of `status` if given, by id.
fn filtered(status: Option<PetStatus>, after: Option<PetId>) -> sea_orm::Select<pet::Entity> {
    let mut query = pet::Entity::find();
    if let Some(status) = status {
        query = query.filter(pet::Column::Status.eq(status.as_str()));
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
    use sea_query_rusqlite::RusqliteValue;

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
        for read in reads {
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

            // On PostgreSQL the count is written into the SQL where SeaORM binds it last.
            let built = read.select().build(DbBackend::Postgres);
            let mut values = built.values.map(|v| v.0).unwrap_or_default();
            let limit = format!("LIMIT ${}", values.len());
            let count = format!("LIMIT {}", read.count());
            assert_eq!(read.postgres_sql(), built.sql.replace(&limit, &count), "{read:?}");
            assert!(read.postgres_sql().ends_with(&count), "{read:?}");
            assert_eq!(values.pop(), Some(sea_orm::Value::BigUnsigned(Some(read.count() as u64))));
            let values: Vec<Value> = values
                .into_iter()
                .map(|value| match value {
                    sea_orm::Value::BigInt(Some(n)) => Value::Integer(n),
                    sea_orm::Value::BigUnsigned(Some(n)) => {
                        Value::Integer(i64::try_from(n).expect("a count"))
                    }
                    sea_orm::Value::String(Some(text)) => Value::Text(text),
                    other => panic!("an unexpected value {other:?}"),
                })
                .collect();
            let bound: Vec<Value> = read
                .postgres_values()
                .into_iter()
                .map(|value| match value {
                    PgValue::Integer(n) => Value::Integer(n),
                    PgValue::Text(text) => Value::Text(text.to_owned()),
                })
                .collect();
            assert_eq!(bound, values, "{read:?}");
        }
    }
}
