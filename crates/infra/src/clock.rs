//! The system clock. Clocks that tests move by hand are in `testing`.

use std::time::SystemTime;

use animal_store_domain::Clock;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}
