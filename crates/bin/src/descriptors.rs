//! File descriptors: every connection holds one, and a process out of them can accept
//! nothing. At start `serve` raises its soft limit to the hard one, and derives the default
//! connection cap from the result, so that the cap refuses connections before the kernel
//! runs out of descriptors (`docs/operations.md#slow-and-broken-clients`).

/// The most connections when the descriptor limit allows more.
pub const MAX_CONNECTIONS: u64 = 10_000;
/// Descriptors kept for everything but client connections: the database's connections and
/// their files (SQLite opens three per connection), the listener, the runtime, the log. At
/// most half the limit, for very low limits.
const RESERVED: u64 = 64;

/// Raises the soft limit on open descriptors to the hard limit, logs the result, and
/// returns the limit now in force (`None` where it cannot be read).
pub fn raise_limit() -> Option<u64> {
    let (before, hard) = match rlimit::getrlimit(rlimit::Resource::NOFILE) {
        Ok(limits) => limits,
        Err(err) => {
            tracing::warn!(error = %err, "cannot read the limit on open file descriptors");
            return None;
        }
    };
    match rlimit::increase_nofile_limit(hard) {
        Ok(now) if now > before => {
            tracing::info!(from = before, to = now, "raised the limit on open file descriptors");
            Some(now)
        }
        Ok(now) => {
            tracing::info!(limit = now, "limit on open file descriptors");
            Some(now)
        }
        Err(err) => {
            tracing::warn!(error = %err, limit = before, "cannot raise the limit on open file descriptors");
            Some(before)
        }
    }
}

/// The connection cap: the configured one, or the descriptor limit less what the rest of
/// the process needs, at most [`MAX_CONNECTIONS`].
pub fn connection_cap(configured: Option<u32>, limit: Option<u64>) -> usize {
    let derived = limit.map_or(MAX_CONNECTIONS, |limit| {
        limit.saturating_sub(RESERVED.min(limit / 2)).clamp(1, MAX_CONNECTIONS)
    });
    let cap = match configured {
        Some(configured) => {
            let configured = u64::from(configured);
            if configured > derived && limit.is_some() {
                tracing::warn!(
                    max_connections = configured,
                    descriptor_limit = limit,
                    "--max-connections is above what the descriptor limit allows: the kernel may refuse connections first"
                );
            }
            configured
        }
        None => derived,
    };
    usize::try_from(cap).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_the_rest_of_the_process() {
        assert_eq!(connection_cap(None, Some(1_048_576)), 10_000);
        assert_eq!(connection_cap(None, Some(1_024)), 960);
        assert_eq!(connection_cap(None, Some(128)), 64);
        assert_eq!(connection_cap(None, Some(64)), 32);
        assert_eq!(connection_cap(None, Some(1)), 1);
        assert_eq!(connection_cap(None, None), 10_000);
        assert_eq!(connection_cap(Some(500), Some(128)), 500, "the operator decides");
    }
}
