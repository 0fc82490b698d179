//! Clocks that tests set: by hand, or through a file another process writes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use animal_store_domain::Clock;

/// A clock that stands still until told to move. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<SystemTime>>,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: SystemTime) -> Self {
        Self { now: Arc::new(Mutex::new(now)) }
    }

    /// A clock standing `secs` seconds after the Unix epoch.
    pub fn at_unix(secs: u64) -> Self {
        Self::new(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    }

    /// Moves the clock to `now` (backwards too).
    pub fn set(&self, now: SystemTime) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }

    /// Moves the clock forwards by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A clock that reads the time from a file holding Unix seconds (`1795305600.25`), for
/// black-box tests that must cross a minute, a UTC midnight or a sunset without waiting.
/// When the file cannot be read, the system time is used.
#[derive(Debug, Clone)]
pub struct FileClock {
    path: std::path::PathBuf,
}

impl FileClock {
    /// A clock reading `path` at every call.
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl Clock for FileClock {
    fn now(&self) -> SystemTime {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse::<f64>().ok())
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .map_or_else(SystemTime::now, |since| SystemTime::UNIX_EPOCH + since)
    }
}
