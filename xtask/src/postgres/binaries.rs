//! Where PostgreSQL's server binaries are, installed from Debian's package when missing.

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::system;

/// Where Debian/Ubuntu install versioned server binaries (`<N>/bin/initdb`).
const INSTALL_ROOT: &str = "/usr/lib/postgresql";

/// The newest installed server version and its `bin` directory; on Debian as root,
/// installs the `postgresql` package first if there is none.
pub(super) fn find_or_install_binaries(as_root: bool) -> Result<(String, PathBuf)> {
    if let Some(found) = find_binaries()? {
        return Ok(found);
    }
    if !(as_root && system::is_debian()) {
        bail!(
            "PostgreSQL server binaries not found; install them with: sudo apt-get install -y postgresql"
        );
    }

    eprintln!(
        "PostgreSQL server binaries not found in {INSTALL_ROOT}; installing them with apt-get"
    );
    system::apt_install(&["postgresql"])?;

    find_binaries()?.with_context(|| {
        format!("installed postgresql, but found no initdb and pg_ctl under {INSTALL_ROOT}/<version>/bin")
    })
}

/// Looks for `<INSTALL_ROOT>/<version>/bin` containing `initdb` and `pg_ctl`,
/// preferring the highest version (compared numerically: 9.6 < 12 < 15).
fn find_binaries() -> Result<Option<(String, PathBuf)>> {
    let entries = match fs::read_dir(INSTALL_ROOT) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("could not list {INSTALL_ROOT}")),
    };
    let mut best: Option<(Vec<u32>, String, PathBuf)> = None;
    for entry in entries {
        let entry = entry.with_context(|| format!("could not list {INSTALL_ROOT}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(version) = parse_version(&name) else {
            continue;
        };
        let bin = entry.path().join("bin");
        let complete = ["initdb", "pg_ctl"].iter().all(|tool| bin.join(tool).is_file());
        if complete && best.as_ref().is_none_or(|(newest, ..)| version > *newest) {
            best = Some((version, name, bin));
        }
    }
    Ok(best.map(|(_, name, bin)| (name, bin)))
}

/// `"15"` → `[15]`, `"9.6"` → `[9, 6]`; anything else is not a version directory.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}
