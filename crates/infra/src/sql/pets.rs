//! The pet repository over SeaORM.
//!
//! Reads go on SQLite to the reader threads (see [`reader_threads`](super::reader_threads)),
//! on PostgreSQL to connections pooled without a round trip per checkout (see
//! [`pg_readers`](super::pg_readers)). Inserts go through the database's writer (see
//! [`writer`](super::writer)), which commits many of them in one transaction under load.
//!
//! How a pet maps to its row, and the statements that add pets, are in
//! [`pet_rows`](super::pet_rows).

use std::sync::Arc;

use animal_store_domain::{NewPet, Pet, PetId, PetRepository, PetStatus, RepositoryError};
use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait,
};

use super::entity::pet;
use super::job::Writer;
use super::pet_rows::{from_sqlite_row, to_pet};
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

    /// Runs `query`, each row as a [`pet::Model`].
    async fn read(&self, query: impl QueryTrait) -> Result<Vec<pet::Model>, DbErr> {
        match self {
            Self::Sqlite(threads) => {
                threads.query_all(query.build(DbBackend::Sqlite), from_sqlite_row).await
            }
            Self::Postgres(pg_readers) => {
                let rows = pg_readers.query_all(query.build(DbBackend::Postgres)).await?;
                rows.iter().map(|row| pet::Model::from_query_result(row, "")).collect()
            }
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
    let mut query = pet::Entity::find();
    if let Some(status) = status {
        query = query.filter(pet::Column::Status.eq(status.as_str()));
    }
    if let Some(after) = after {
        query = query.filter(pet::Column::Id.gt(after.get()));
    }
    query.order_by_asc(pet::Column::Id).limit(u64::try_from(count).unwrap_or(u64::MAX))
}

#[async_trait]
impl PetRepository for SeaOrmPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.writer.add_pet(pet).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        let query = pet::Entity::find_by_id(id.get()).limit(1);
        let rows = self.reads.run(self.readers.read(query)).await?;
        rows.first().map(to_pet).transpose()
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let rows = self.reads.run(self.readers.read(list_query(status, after, count))).await?;
        rows.iter().map(to_pet).collect()
    }
}
