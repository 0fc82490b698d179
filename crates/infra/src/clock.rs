//! The system clock, and a clock a file sets. Clocks that tests move by hand are in
//! `testing`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use animal_store_domain::Clock;
use thiserror::Error;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that reads the time from a file holding whole Unix seconds (`1795305600`), for
/// tests from any language that must cross a minute, a UTC midnight or a sunset without
/// waiting: the harness writes the file (best by renaming a new one into place), and the
/// next request reads it. A file that cannot be read, or does not hold whole seconds, leaves
/// the clock at the last time it read.
#[derive(Debug)]
pub struct FileClock {
    path: PathBuf,
    /// The last time read, in Unix seconds.
    last: AtomicU64,
}

/// Why a clock file cannot be used.
#[derive(Debug, Error)]
pub enum ClockFileError {
    /// The file cannot be read.
    #[error("cannot read the clock file {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file does not hold whole Unix seconds.
    #[error(
        "the clock file {path} must hold whole Unix seconds (such as 1795305600), not {found:?}"
    )]
    NotSeconds {
        /// The file.
        path: PathBuf,
        /// What it holds, cut to 32 characters.
        found: String,
    },
}

impl FileClock {
    /// A clock reading `path` at every call, starting at the time it holds now.
    ///
    /// # Errors
    ///
    /// [`ClockFileError`] when the file cannot be read or does not hold whole seconds.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, ClockFileError> {
        let path = path.into();
        let now = read_seconds(&path)?;
        Ok(Self { path, last: AtomicU64::new(now) })
    }
}

fn read_seconds(path: &Path) -> Result<u64, ClockFileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ClockFileError::Unreadable { path: path.to_owned(), source })?;
    text.trim().parse().map_err(|_| ClockFileError::NotSeconds {
        path: path.to_owned(),
        found: text.trim().chars().take(32).collect(),
    })
}

impl Clock for FileClock {
    fn now(&self) -> SystemTime {
        let seconds = match read_seconds(&self.path) {
            Ok(seconds) => {
                self.last.store(seconds, Ordering::Relaxed);
                seconds
            }
            Err(_) => self.last.load(Ordering::Relaxed),
        };
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_file_holds_whole_seconds_and_keeps_its_last_good_time() {
        let dir = tempfile::tempdir().expect("a directory");
        let path = dir.path().join("clock");
        assert!(matches!(FileClock::open(&path), Err(ClockFileError::Unreadable { .. })));
        for bad in ["", "soon", "1795305600.5", "-1"] {
            std::fs::write(&path, bad).expect("write");
            assert!(
                matches!(FileClock::open(&path), Err(ClockFileError::NotSeconds { .. })),
                "{bad:?}"
            );
        }
        std::fs::write(&path, "1795305600\n").expect("write");
        let clock = FileClock::open(&path).expect("a clock");
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(clock.now(), at(1_795_305_600));
        std::fs::write(&path, "1795305660").expect("write");
        assert_eq!(clock.now(), at(1_795_305_660), "moved by the file");
        std::fs::write(&path, "").expect("write");
        assert_eq!(clock.now(), at(1_795_305_660), "a half-written file keeps the last time");
    }
}
