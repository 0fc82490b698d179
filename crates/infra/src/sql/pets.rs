//! The pet repository over SeaORM.
//!
//! Reads go to the reader pool. Inserts go through the database's writer (see
//! [`writer`](super::writer)), which commits many of them in one transaction under load.
//!
//! Rows are inserted with `Entity::insert(..).exec(..)`, and sea-orm's default feature
//! `sqlite-use-returning-for-3_35` is off: with it, inserts run `INSERT ... RETURNING`
//! through a fetch that leaves the statement open, which on SQLite blocks WAL checkpoints for
//! good and lets the WAL grow without bound. `tests/sqlite.rs` checks the bound (and fails,
//! at 64 MiB, when checkpoints are disabled).

use std::sync::Arc;

use animal_store_domain::{
    CategoryId, NewPet, Pet, PetId, PetName, PetRepository, PetStatus, RepositoryError,
};
use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait, NotSet, QueryFilter,
    QueryOrder, QuerySelect, Set,
};

use super::corrupt;
use super::entity::pet;
use super::reachability::Reads;
use super::writer::Writer;

/// Pets in an SQL database. Cheap to clone: clones share the reader pool and the writer.
#[derive(Clone)]
pub struct SeaOrmPetRepository {
    readers: DatabaseConnection,
    reads: Arc<Reads>,
    writer: Writer,
}

impl SeaOrmPetRepository {
    pub(super) fn new(readers: DatabaseConnection, reads: Arc<Reads>, writer: Writer) -> Self {
        Self { readers, reads, writer }
    }
}

// The mappings below name every field, on both sides and without `..`: a field added to
// `NewPet`, `Pet` or the row does not compile until it is mapped here.

async fn insert(txn: &DatabaseTransaction, pet: NewPet) -> Result<Pet, DbErr> {
    let NewPet { name, category_id, status } = &pet;
    let row = pet::ActiveModel {
        id: NotSet,
        name: Set(name.as_str().to_owned()),
        category_id: Set(category_id.get()),
        status: Set(status.as_str().to_owned()),
    };
    let id = pet::Entity::insert(row).exec(txn).await?.last_insert_id;
    Ok(Pet::from_new(PetId::new(id), pet))
}

fn to_pet(row: &pet::Model) -> Result<Pet, RepositoryError> {
    let pet::Model { id, name, category_id, status } = row;
    Ok(Pet {
        id: PetId::new(*id),
        name: PetName::new(name).map_err(|e| corrupt("pets", e))?,
        category_id: CategoryId::new(*category_id).map_err(|e| corrupt("pets", e))?,
        status: status.parse::<PetStatus>().map_err(|e| corrupt("pets", e))?,
    })
}

/// The query of a page: `limit` pets after `after`, of `status` if given, by id.
pub(super) fn list_query(
    status: Option<PetStatus>,
    after: Option<PetId>,
    limit: usize,
) -> sea_orm::Select<pet::Entity> {
    let mut query = pet::Entity::find();
    if let Some(status) = status {
        query = query.filter(pet::Column::Status.eq(status.as_str()));
    }
    if let Some(after) = after {
        query = query.filter(pet::Column::Id.gt(after.get()));
    }
    query.order_by_asc(pet::Column::Id).limit(u64::try_from(limit).unwrap_or(u64::MAX))
}

#[async_trait]
impl PetRepository for SeaOrmPetRepository {
    async fn create(&self, pet: NewPet) -> Result<Pet, RepositoryError> {
        self.writer.write(move |txn| Box::pin(insert(txn, pet))).await
    }

    async fn get(&self, id: PetId) -> Result<Option<Pet>, RepositoryError> {
        self.reads
            .run(pet::Entity::find_by_id(id.get()).one(&self.readers))
            .await?
            .map(|row| to_pet(&row))
            .transpose()
    }

    async fn list(
        &self,
        status: Option<PetStatus>,
        after: Option<PetId>,
        limit: usize,
    ) -> Result<Vec<Pet>, RepositoryError> {
        let query = list_query(status, after, limit);
        self.reads
            .run(query.all(&self.readers))
            .await?
            .into_iter()
            .map(|row| to_pet(&row))
            .collect()
    }
}
