//! The rows of the `events` table: an event written by the writer as the last statement of
//! each transaction, beside the changes it reports (see [`job`](crate::sql::writer::job));
//! and the event a row holds. Its deliveries are queued after the commit
//! ([`fan_out`](crate::sql::webhooks::fan_out)).
//!
//! # Ids in commit order
//!
//! A client reads the events after the last id it saw, so an event must never appear after
//! an event of a greater id. Ids that commit out of order would break that: a transaction
//! that took id 7 and commits after another that took id 8 leaves a reader who saw 8 blind
//! to 7.
//!
//! - SQLite: one transaction writes at a time, and ids are row ids (`AUTOINCREMENT`, never
//!   reused): they commit in order.
//! - PostgreSQL: several instances write at once. Each transaction takes its ids from the
//!   one row of `event_counter` by updating it, in its last statement before `COMMIT`, and
//!   holds that row's lock until it ends: the next transaction to take ids waits until this
//!   one has committed (or rolled back, giving its ids back), so ids commit in order, and a
//!   reader's snapshot that shows an event shows every event of a smaller id. The cost is
//!   that the instances' commits queue on that row, one transaction's last statement and
//!   `COMMIT` at a time (docs/architecture.md, "Events").

use animal_store_domain::{
    CategoryId, Event, EventId, EventObject, EventType, KeyId, NewEvent, Order, OrderId, Pet,
    PetId, PetName, RepositoryError,
};
use chrono::{DateTime, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, NotSet, QueryTrait, Set,
    Statement, Value,
};
use serde::{Deserialize, Serialize};

use crate::sql::connection::failure::corrupt;
use crate::sql::schema::entity::event;

/// The pet or order of an event, as the `object` column keeps it.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Stored {
    Pet { id: i64, name: String, category_id: i64, status: String },
    Order { id: i64, pet_id: i64, owner: String, status: String, created_at: i64, updated_at: i64 },
}

impl Stored {
    fn of(object: &EventObject) -> Self {
        match object {
            EventObject::Pet(pet) => Self::Pet {
                id: pet.id.get(),
                name: pet.name.as_str().to_owned(),
                category_id: pet.category_id.get(),
                status: pet.status.as_str().to_owned(),
            },
            EventObject::Order(order) => Self::Order {
                id: order.id.get(),
                pet_id: order.pet_id.get(),
                owner: order.owner.as_str().to_owned(),
                status: order.status.as_str().to_owned(),
                created_at: order.created_at.timestamp(),
                updated_at: order.updated_at.timestamp(),
            },
        }
    }

    fn object(self) -> Result<EventObject, RepositoryError> {
        let bad = |e: &dyn std::fmt::Display| corrupt("events", e);
        let time = |seconds| DateTime::from_timestamp(seconds, 0).ok_or_else(|| bad(&"a time"));
        Ok(match self {
            Self::Pet { id, name, category_id, status } => EventObject::Pet(Pet {
                id: PetId::new(id),
                name: PetName::stored(&name).map_err(|e| bad(&e))?,
                category_id: CategoryId::new(category_id).map_err(|e| bad(&e))?,
                status: status.parse().map_err(|e| bad(&e))?,
            }),
            Self::Order { id, pet_id, owner, status, created_at, updated_at } => {
                EventObject::Order(Order {
                    id: OrderId::new(id),
                    pet_id: PetId::new(pet_id),
                    owner: KeyId::new(&owner).map_err(|e| bad(&e))?,
                    status: status.parse().map_err(|e| bad(&e))?,
                    created_at: time(created_at)?,
                    updated_at: time(updated_at)?,
                })
            }
        })
    }
}

/// The columns of `event`, but its id.
struct Columns {
    event_type: &'static str,
    owner: Option<String>,
    created_at: DateTime<Utc>,
    object: String,
}

impl Columns {
    fn of(event: &NewEvent) -> Result<Self, DbErr> {
        let object = serde_json::to_string(&Stored::of(&event.object))
            .map_err(|e| DbErr::Custom(format!("cannot write an event's object: {e}")))?;
        let owner = event.object.owner().map(|owner| owner.as_str().to_owned());
        Ok(Self { event_type: event.kind.as_str(), owner, created_at: event.at, object })
    }
}

/// In `txn`, as its last statement before `COMMIT`: records `events`, in order, with ids
/// greater than every event's before (see the module's documentation).
pub(crate) async fn record(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<(), DbErr> {
    if events.is_empty() {
        return Ok(());
    }
    let columns = events.iter().map(Columns::of).collect::<Result<Vec<_>, _>>()?;
    if txn.get_database_backend() == DbBackend::Postgres {
        return txn.execute_raw(postgres(columns)).await.map(drop);
    }
    txn.execute_raw(sqlite_insert(columns)).await.map(drop)
}

/// SQLite: the statement that inserts the events of `columns`.
fn sqlite_insert(columns: Vec<Columns>) -> Statement {
    let rows = columns.into_iter().map(|c| event::ActiveModel {
        id: NotSet,
        event_type: Set(c.event_type.to_owned()),
        owner: Set(c.owner),
        created_at: Set(c.created_at),
        object: Set(c.object),
    });
    event::Entity::insert_many(rows).build(DbBackend::Sqlite)
}

/// PostgreSQL: one statement takes the ids from `event_counter`, locking its row until the
/// transaction ends, and inserts the events with them.
fn postgres(columns: Vec<Columns>) -> Statement {
    let count = i64::try_from(columns.len()).unwrap_or(i64::MAX);
    let mut values: Vec<Value> = vec![count.into()];
    let mut rows = Vec::with_capacity(columns.len());
    for (n, c) in (1_i64..).zip(columns) {
        let at = values.len() + 1;
        rows.push(format!(
            "(${}::bigint, ${}::text, ${}::text, ${}::timestamptz, ${}::text)",
            at,
            at + 1,
            at + 2,
            at + 3,
            at + 4
        ));
        values.extend([
            n.into(),
            c.event_type.into(),
            c.owner.into(),
            c.created_at.into(),
            c.object.into(),
        ]);
    }
    let sql = format!(
        "WITH taken AS (UPDATE event_counter SET last_id = last_id + $1 RETURNING last_id) \
         INSERT INTO events (id, event_type, owner, created_at, object) \
             SELECT taken.last_id - $1 + given.n, given.event_type, given.owner, \
                    given.created_at, given.object \
             FROM taken, (VALUES {}) AS given (n, event_type, owner, created_at, object)",
        rows.join(", ")
    );
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// The event a row holds.
pub(crate) fn to_event(row: event::Model) -> Result<Event, RepositoryError> {
    let event::Model { id, event_type, owner: _, created_at, object } = row;
    let stored: Stored = serde_json::from_str(&object).map_err(|e| corrupt("events", e))?;
    Ok(Event {
        id: EventId::new(id),
        kind: event_type.parse::<EventType>().map_err(|e| corrupt("events", e))?,
        created_at,
        object: stored.object()?,
    })
}
