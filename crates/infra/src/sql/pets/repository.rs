//! The pet repository over SeaORM.
//!
//! Reads run on the reader pool; on SQLite a read asked again is answered from the read cache (see
//! [`read_cache`](crate::sql::pets::read_cache)) until the writer commits. Inserts go through the
//! database's writer (see [`writer`](crate::sql::writer::thread)), which commits many of them in
//! one transaction under load.
//!
//! How a pet maps to its row, and the statements that add pets, are in
//! [`rows::pets`](crate::sql::rows::pets).

use std::sync::Arc;

use animal_store_domain::{
    Clock, NewPet, Pet, PetId, PetRepository, PetStatus, RepositoryError, to_the_second,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbBackend, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    QueryTrait, Statement,
};

use crate::sql::connection::reachability::Reads;
use crate::sql::pets::read_cache::{Lookup, PetRead, ReadCache};
use crate::sql::rows::pets::to_pet;
use crate::sql::schema::entity::pet;
use crate::sql::writer::job::Writer;

/// Pets in an SQL database. Cheap to clone: clones share the readers, the cache and the
/// writer.
#[derive(Clone)]
pub struct SeaOrmPetRepository {
    readers: DatabaseConnection,
    /// On SQLite, the cached answers.
    cache: Option<Arc<ReadCache>>,
    reads: Arc<Reads>,
    writer: Writer,
    /// The time of the events of its changes.
    clock: Arc<dyn Clock>,
}

impl PetRead {
    /// The query, as SeaORM builds it.
    fn select(self) -> sea_orm::Select<pet::Entity> {
        match self {
            Self::One(id) => pet::Entity::find_by_id(id.get()).limit(1),
            Self::Page { status, after, count } => list_query(status, after, count),
        }
    }

    /// Its statement for `backend`. On PostgreSQL its status and its count are written into
    /// the SQL and only the id it reads or reads after is bound: given `LIMIT $n`,
    /// PostgreSQL planned a prepared statement again at every execution (a plan for any
    /// limit would assume a tenth of the table); given `status = $1`, its plan for any
    /// status would assume a third of the pets have it, and walk the ids, filtering, even
    /// for a status few pets have.
    fn statement(self, backend: DbBackend) -> Statement {
        if backend != DbBackend::Postgres {
            return self.select().build(backend);
        }
        let (query, id, count) = match self {
            Self::One(id) => (pet::Entity::find_by_id(id.get()), Some(id), 1),
            Self::Page { status, after, count } => {
                let status = status.map(|status| {
                    let column = Expr::col((pet::Entity, pet::Column::Status));
                    ExprTrait::eq(column, Expr::Constant(status.as_str().into()))
                });
                (filtered(status, after), after, count)
            }
        };
        let sql = format!("{} LIMIT {count}", query.build(backend).sql);
        Statement::from_sql_and_values(backend, sql, id.map(|id| id.get().into()))
    }
}

impl SeaOrmPetRepository {
    pub(crate) fn new(
        readers: DatabaseConnection,
        cache: Option<Arc<ReadCache>>,
        reads: Arc<Reads>,
        writer: Writer,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { readers, cache, reads, writer, clock }
    }

    /// The time now, to the second, as the events of its changes carry it.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        to_the_second(self.clock.now())
    }

    pub(crate) fn readers(&self) -> &DatabaseConnection {
        &self.readers
    }

    pub(crate) fn reads(&self) -> &Reads {
        &self.reads
    }

    pub(crate) fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The pets `read` finds: kept, or read from the database.
    async fn read(&self, read: PetRead) -> Result<Vec<Pet>, RepositoryError> {
        let ticket = match self.cache.as_deref().map(|cache| cache.lookup(read)) {
            Some(Lookup::Kept(pets)) => return Ok(pets),
            Some(Lookup::Missed(ticket)) => Some(ticket),
            None => None,
        };
        let statement = read.statement(self.readers.get_database_backend());
        let rows = || pet::Entity::find().from_raw_sql(statement.clone()).all(&self.readers);
        let pets =
            self.reads.read(rows).await?.into_iter().map(to_pet).collect::<Result<Vec<_>, _>>()?;
        if let (Some(cache), Some(ticket)) = (&self.cache, ticket) {
            cache.keep(&ticket, &pets);
        }
        Ok(pets)
    }
}

/// The query of a page: `count` pets after `after`, of `status` if given, by id.
pub(crate) fn list_query(
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
        self.writer.add_pet(pet, self.now()).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        Ok(self.read(PetRead::One(id)).await?.into_iter().next())
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        count: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        self.read(PetRead::Page { status, after, count }).await
    }

    /// One statement (`id IN (...)`), on the reader pool; not kept by the read cache.
    async fn get_many(&self, ids: &[PetId]) -> Result<Vec<Pet>, RepositoryError> {
        let query = pet::Entity::find()
            .filter(pet::Column::Id.is_in(ids.iter().map(|id| id.get())))
            .order_by_asc(pet::Column::Id);
        let rows = self.reads.read(|| query.clone().all(&self.readers)).await?;
        rows.into_iter().map(to_pet).collect()
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::sea_query::PostgresQueryBuilder;

    use super::*;

    #[test]
    fn on_postgresql_a_read_binds_only_its_id() {
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
        ];
        for read in reads {
            // With the id written in too, the SQL reads as SeaORM's with every value
            // written in.
            let written = read.select().into_query().to_string(PostgresQueryBuilder);
            let statement = read.statement(DbBackend::Postgres);
            let values = statement.values.map(|values| values.0).unwrap_or_default();
            assert!(values.len() <= 1, "{read:?}");
            let bound = match values.first() {
                Some(sea_orm::Value::BigInt(Some(id))) => {
                    statement.sql.replace("$1", &id.to_string())
                }
                Some(other) => panic!("{read:?} binds {other:?}"),
                None => statement.sql,
            };
            assert_eq!(bound, written, "{read:?}");
        }
    }
}
