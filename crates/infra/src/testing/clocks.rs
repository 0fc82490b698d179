//! A clock that tests set by hand. The clock a file sets, for tests from any language, is
//! [`FileClock`](crate::clock::FileClock).

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
