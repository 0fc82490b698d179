//! The pets: read through the read cache, added, changed and removed by the writer.

pub(crate) mod changes;
pub(crate) mod read_cache;
pub(crate) mod repository;
