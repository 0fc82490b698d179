//! SeaORM entities: the rows as stored. They never leave the `sql` module.

/// The `pets` table.
pub mod pet {
    use sea_orm::entity::prelude::*;

    /// One pet row. `status` holds the wire spelling (`available`, `pending`, `sold`).
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "pets")]
    pub struct Model {
        /// Assigned by the database, growing.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The validated name.
        pub name: String,
        /// The category id, at least 1.
        pub category_id: i64,
        /// The status.
        pub status: String,
    }

    /// Pets relate to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `api_keys` table.
pub mod api_key {
    use sea_orm::entity::prelude::*;

    /// One key row. Times are Unix milliseconds; `per_minute` and `per_day` are set for
    /// enterprise keys only.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "api_keys")]
    pub struct Model {
        /// The public key id.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        /// The SHA-256 digest of the whole key.
        #[sea_orm(unique)]
        pub digest: Vec<u8>,
        /// An optional name.
        pub name: Option<String>,
        /// `free`, `pro`, `business` or `enterprise`.
        pub plan: String,
        /// Enterprise quota per UTC minute.
        pub per_minute: Option<i64>,
        /// Enterprise quota per UTC day.
        pub per_day: Option<i64>,
        /// `production` or `staging`.
        pub environment: String,
        /// When the key was issued.
        pub created_at: i64,
        /// When it last authenticated a request.
        pub last_used_at: Option<i64>,
        /// When it was revoked.
        pub revoked_at: Option<i64>,
        /// When it stops working: issued to expire, or rotated out.
        pub expires_at: Option<i64>,
        /// The id of the key that replaced it, when rotated.
        pub rotated_to: Option<String>,
        /// The first key of its rotation chain; `NULL` for a key that is its own.
        pub lineage: Option<String>,
        /// `read` or `write`; `NULL` (a key issued before scopes) is `write`.
        pub scope: Option<String>,
    }

    /// Keys relate to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `orders` table.
pub mod order {
    use sea_orm::entity::prelude::*;

    /// One order row. `owner` is the key id of its owner's rotation chain; `status` holds
    /// the wire spelling (`placed`, `approved`, `delivered`, `cancelled`).
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "orders")]
    pub struct Model {
        /// Assigned by the database, growing.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The pet it reserves.
        pub pet_id: i64,
        /// Whose it is.
        pub owner: String,
        /// The status.
        pub status: String,
        /// When it was placed.
        pub created_at: DateTimeUtc,
        /// When its status last changed.
        pub updated_at: DateTimeUtc,
    }

    /// Orders refer to pets; the foreign key is the schema's, no relation is needed here.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `idempotency_keys` table.
pub mod idempotency_key {
    use sea_orm::entity::prelude::*;

    /// One stored outcome: the owner's rotation chain and the client's key identify it.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "idempotency_keys")]
    pub struct Model {
        /// The key id of the owner's rotation chain.
        #[sea_orm(primary_key, auto_increment = false)]
        pub owner: String,
        /// The client's idempotency key.
        #[sea_orm(primary_key, auto_increment = false)]
        pub key: String,
        /// The SHA-256 digest of the first request's method, path and body.
        pub fingerprint: Vec<u8>,
        /// The first answer, as the API encoded it; `None` in a record the release before
        /// the column stored.
        pub answer: Option<Vec<u8>>,
        /// The first answer's status, for the release before the `answer` column.
        pub status: i32,
        /// Its body, likewise.
        pub body: String,
        /// Its `Location` header, likewise.
        pub location: Option<String>,
        /// When the first request arrived.
        pub created_at: DateTimeUtc,
    }

    /// Records relate to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `pet_counts` table: how many pets have each status, in slots the inventory adds up,
/// kept by triggers on `pets` (see the migration `m20261126_000007_pet_changes`). Read by
/// raw statement; the entity names its columns for the schema's documentation.
pub mod pet_count {
    use sea_orm::entity::prelude::*;

    /// One status's count in one slot.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "pet_counts")]
    pub struct Model {
        /// `available`, `pending` or `sold`.
        #[sea_orm(primary_key, auto_increment = false)]
        pub status: String,
        /// The slot: 0 on SQLite; on PostgreSQL, the writing connection's process id
        /// modulo 16.
        #[sea_orm(primary_key, auto_increment = false)]
        pub slot: i32,
        /// How many pets of that status the slot counts (a slot's count may be negative;
        /// their sum is not).
        pub pets: i64,
    }

    /// Counts relate to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `events` table: one row per change, written in the change's transaction.
pub mod event {
    use sea_orm::entity::prelude::*;

    /// One event. `object` is the pet or order after the change, as `sql/rows/events.rs` writes
    /// it; `owner` is the order's owner, `None` for a pet's event, which every key sees.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "events")]
    pub struct Model {
        /// Growing in commit order: SQLite's row id (one writer at a time); on PostgreSQL
        /// taken from `event_counter`, whose row each writing transaction holds until it
        /// ends.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// `pet.created`, `pet.updated`, `pet.deleted`, `order.placed` or `order.updated`.
        pub event_type: String,
        /// The key id of the order owner's rotation chain, for an order's event.
        pub owner: Option<String>,
        /// When the change happened.
        pub created_at: DateTimeUtc,
        /// The pet or order, as JSON.
        pub object: String,
    }

    /// Events relate to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `webhook_endpoints` table: an owner's addresses for its events.
pub mod webhook_endpoint {
    use sea_orm::entity::prelude::*;

    /// One endpoint.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_endpoints")]
    pub struct Model {
        /// Assigned by the database, growing.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The key id of the owner's rotation chain.
        pub owner: String,
        /// Where deliveries go.
        pub url: String,
        /// The event types it wants: `*`, or each type between commas (`,pet.created,`).
        pub events: String,
        /// `enabled` or `disabled`.
        pub status: String,
        /// `whsec_<base64>`.
        pub secret: String,
        /// When it was registered.
        pub created_at: DateTimeUtc,
        /// Since when every attempt to it has failed; `None` while it is answering.
        pub failing_since: Option<DateTimeUtc>,
        /// Why it is disabled: `owner`, `failing`, `operator`, `key_ended`; `None` while
        /// enabled, or disabled by a binary that kept no reason.
        pub disabled_reason: Option<String>,
        /// The last event recorded when it was registered: it gets only later ones.
        pub after_event: i64,
    }

    /// Endpoints relate to nothing here.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `webhook_deliveries` table: an event queued for an endpoint, until it is delivered
/// or given up (the attempts say which).
pub mod webhook_delivery {
    use sea_orm::entity::prelude::*;

    /// One delivery.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_deliveries")]
    pub struct Model {
        /// Assigned by the database.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// Where it goes.
        pub endpoint_id: i64,
        /// What it carries.
        pub event_id: i64,
        /// How many attempts were made.
        pub attempts: i32,
        /// When the next attempt is due.
        pub next_attempt_at: Option<DateTimeUtc>,
        /// Until when an instance holds it for an attempt.
        pub leased_until: Option<DateTimeUtc>,
        /// When it was queued: its event's time.
        pub created_at: DateTimeUtc,
    }

    /// Deliveries relate to nothing here.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `webhook_attempts` table: what came of each attempt.
pub mod webhook_attempt {
    use sea_orm::entity::prelude::*;

    /// One attempt.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_attempts")]
    pub struct Model {
        /// Assigned by the database, growing.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The delivery it was made for.
        pub delivery_id: i64,
        /// Its endpoint.
        pub endpoint_id: i64,
        /// Its event.
        pub event_id: i64,
        /// Which attempt of the delivery: 1 for the first.
        pub attempt: i32,
        /// When it was made.
        pub attempted_at: DateTimeUtc,
        /// `delivered`, `http_error`, `timeout`, `connection_error` or `refused_address`.
        pub outcome: String,
        /// The endpoint's HTTP status, when it answered.
        pub status_code: Option<i32>,
        /// When the next attempt is due; `None` once delivered or given up.
        pub next_attempt_at: Option<DateTimeUtc>,
    }

    /// Attempts relate to nothing here.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The `schema_window` table: which binaries may run on this database, written under the
/// migration lock by the binary that migrated it last (see `window.rs`). Not a migration's:
/// created beside `seaql_migrations`, so that binaries that predate it run as before.
pub mod schema_window {
    use sea_orm::entity::prelude::*;

    /// The one row.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "schema_window")]
    pub struct Model {
        /// Always 1: there is one row.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i32,
        /// The database's schema level: how many migrations it has.
        pub level: i32,
        /// The oldest schema level whose binaries still run on it.
        pub oldest_level: i32,
    }

    /// The window relates to nothing.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

#[cfg(test)]
mod tests {
    use sea_orm::{EntityTrait, IdenStatic, Iterable};

    /// The row of `table` in architecture.md's Schema table.
    fn documented(table: &str) -> String {
        let doc = include_str!("../../../../../docs/architecture.md");
        let schema = doc.split("\n## Schema\n").nth(1).expect("a Schema section");
        let schema = schema.split("\n## ").next().unwrap_or_default();
        let prefix = format!("| `{table}` |");
        schema
            .lines()
            .find(|line| line.starts_with(&prefix))
            .unwrap_or_else(|| panic!("architecture.md's Schema has no row for {table}"))
            .to_owned()
    }

    fn check<E: EntityTrait>() {
        let table = E::default().table_name().to_owned();
        let row = documented(&table);
        for column in E::Column::iter() {
            let name = column.as_str();
            assert!(row.contains(&format!("`{name}`")), "architecture.md's {table} lacks {name}");
        }
    }

    #[test]
    fn the_schema_in_the_architecture_names_every_column() {
        check::<super::pet::Entity>();
        check::<super::api_key::Entity>();
        check::<super::order::Entity>();
        check::<super::idempotency_key::Entity>();
        check::<super::schema_window::Entity>();
        check::<super::pet_count::Entity>();
        check::<super::event::Entity>();
        check::<super::webhook_endpoint::Entity>();
        check::<super::webhook_delivery::Entity>();
        check::<super::webhook_attempt::Entity>();
    }
}
