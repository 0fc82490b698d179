//! The WAL index's header, read from the database's `-shm` file: every commit by any
//! connection of any process rewrites it ([the WAL
//! format](https://www.sqlite.org/walformat.html#the_wal_index_file_format)), so that a read
//! that finds it unchanged knows nothing was committed since (see
//! [`snapshots`](super::snapshots) and [`memo`](super::memo)).

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use sea_query_rusqlite::rusqlite::Connection;

/// The bytes of the WAL index's header at the start of the `-shm` file: its two copies, of
/// 48 bytes each. A commit rewrites both (the count of frames, the change counter), the
/// second copy first.
pub(super) const WAL_INDEX_HEADER: usize = 96;

/// The WAL index's header as a read found it.
pub(super) type Header = [u8; WAL_INDEX_HEADER];

/// The frames in the WAL, as the WAL index's header counts them (`mxFrame`, the fifth
/// 32-bit field, in the host's byte order).
pub(super) fn frames(header: &Header) -> u32 {
    u32::from_ne_bytes([header[16], header[17], header[18], header[19]])
}

/// The database's `-shm` file, whose header tells whether a kept snapshot is still the
/// newest; without it (it could not be opened) the connections keep no snapshot.
pub(super) struct WalIndex(Option<File>);

impl WalIndex {
    /// The `-shm` file of the database at `path`, once a read on `primer` has made SQLite
    /// create it. When it cannot be opened, say because the file is not in WAL mode, a line
    /// says so and every read takes its own snapshot.
    pub(super) fn open(path: &Path, primer: Option<&Connection>) -> Self {
        let cannot = |err: &dyn std::fmt::Display| {
            tracing::warn!(error = %err, "the WAL index cannot be read: every read takes its own snapshot");
        };
        let read = primer.map(|c| c.query_row("PRAGMA schema_version", [], |_| Ok(())));
        if let Some(Err(err)) = read {
            cannot(&err);
            return Self(None);
        }
        // The connection keeps the `-shm` file open, and SQLite keeps it beside the database
        // file that links resolve to.
        let mut shm =
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()).into_os_string();
        shm.push("-shm");
        Self(open_without_access_times(Path::new(&shm)).map_err(|err| cannot(&err)).ok())
    }

    /// The header now, with one `pread`; `None` when it cannot be read.
    pub(super) fn header(&self) -> Option<Header> {
        let mut header = [0; WAL_INDEX_HEADER];
        self.0.as_ref()?.read_exact_at(&mut header, 0).ok()?;
        Some(header)
    }

    /// Whether the `-shm` file is open.
    #[cfg(test)]
    pub(super) fn is_open(&self) -> bool {
        self.0.is_some()
    }
}

/// Opens the file at `path` to read, asking the kernel not to note when it is read
/// (`O_NOATIME`): each served read reads its header, and the access time's update cost about
/// a third of that `pread`. Only the file's owner may ask it; anyone else opens it plainly.
fn open_without_access_times(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOATIME).open(path).or_else(|err| {
        match err.kind() {
            std::io::ErrorKind::PermissionDenied => File::open(path),
            _ => Err(err),
        }
    })
}
