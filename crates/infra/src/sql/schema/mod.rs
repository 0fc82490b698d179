//! The SeaORM entities, the migrations, the lock that applies them, and the schema window.

pub(crate) mod entity;
pub(crate) mod migrating;
pub(crate) mod migration;
pub(crate) mod window;
