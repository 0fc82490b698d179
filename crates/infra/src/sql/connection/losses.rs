//! Connections the database server ended, and the pooled connections that may share their
//! fate.
//!
//! PostgreSQL's pool pings a connection it hands out only when it sat idle past
//! [`IDLE_PING`]: a busy pool's connections go out without a round trip. A restart, a
//! failover or an administrator ends every connection at once, though, busy or not. So the
//! first statement that fails because its connection was ended records the moment
//! ([`Losses::record`]), and from then on a pooled connection opened before it is pinged when
//! handed out, and replaced if the ping fails ([`Losses::predates_last`]). A read that failed
//! that way is tried once more (see `reachability.rs`): its second connection is one the
//! pool has checked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a PostgreSQL connection may sit idle in the pool before it is pinged when handed
/// out. A pooler's, a proxy's or a firewall's idle cut (pgbouncer's `server_idle_timeout` is
/// 10 minutes, cloud load balancers' 350 s and more) ends only connections idle far longer
/// than this, and a connection idle a second belongs to a pool so quiet that the round trip
/// costs nothing anyone notices. A failover or a restart while the pool is busy is what
/// [`Losses`] is for.
pub(crate) const IDLE_PING: Duration = Duration::from_secs(1);

/// When a connection of this database was last ended by the server.
#[derive(Debug)]
pub(crate) struct Losses {
    /// What the moments are counted from.
    start: Instant,
    /// The last loss, in microseconds since `start`, plus one; 0 before the first.
    last: AtomicU64,
}

impl Default for Losses {
    fn default() -> Self {
        Self { start: Instant::now(), last: AtomicU64::new(0) }
    }
}

impl Losses {
    /// Records that the server ended a connection now.
    pub(crate) fn record(&self) {
        let now = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last.fetch_max(now.saturating_add(1), Ordering::AcqRel);
    }

    /// Whether a connection opened `age` ago was opened before the last loss (or at its
    /// moment): it may have been ended too.
    pub(crate) fn predates_last(&self, age: Duration) -> bool {
        let last = self.last.load(Ordering::Acquire);
        if last == 0 {
            return false;
        }
        let since_loss = self.start.elapsed().saturating_sub(Duration::from_micros(last - 1));
        age >= since_loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_opened_before_the_last_loss_are_suspect_and_later_ones_are_not() {
        let losses = Losses::default();
        assert!(!losses.predates_last(Duration::from_secs(3600)), "nothing was lost yet");
        std::thread::sleep(Duration::from_millis(20));
        losses.record();
        assert!(losses.predates_last(Duration::from_secs(3600)), "opened before the loss");
        std::thread::sleep(Duration::from_millis(20));
        assert!(!losses.predates_last(Duration::from_millis(5)), "opened after the loss");
        assert!(losses.predates_last(Duration::from_millis(30)));
    }
}
