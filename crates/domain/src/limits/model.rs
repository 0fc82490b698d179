//! Rate limits: windows, quotas and the decision to admit a request
//! (`docs/api.md#plans-and-rate-limits`).
//!
//! Each subject (an API key, or a client address for requests without a valid key) has two fixed
//! windows: the current UTC minute and the current UTC day. A request is admitted only if both have
//! room; an admitted request counts in both, a refused one in neither. A key that goes on calling
//! while limited is suspended for a while.
//!
//! Everything here is pure arithmetic on Unix seconds: [`RateLimitState::check`] is the whole state
//! machine, and every [`RateLimiter`](crate::RateLimiter) adapter (in memory, in moka, in a shared
//! store later) stores [`RateLimitState`]s and runs that one function under a per-subject lock, so
//! they cannot disagree on the rules.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::keys::model::KeyId;
use crate::keys::plan::Quota;

/// Seconds in a window of each kind.
pub const MINUTE: u64 = 60;
/// Seconds in a UTC day (Unix time has no leap seconds).
pub const DAY: u64 = 86_400;

/// Who a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A valid API key.
    Key(KeyId),
    /// The client address of a request without a valid key: an IPv4 address, or the IPv6
    /// network (of the configured prefix) the address is in.
    Address(IpAddr),
    /// A client that a trusted proxy named by something other than an address (`unknown`,
    /// an obfuscated RFC 7239 identifier): counted by a digest of that name, as an address.
    Named([u8; 16]),
    /// A key's rotation chain asking for its own rate limit (`GET /v1/rate_limit`): counted
    /// apart from its quota, under [`INQUIRY_QUOTA`], and never suspended.
    Inquiry(KeyId),
}

/// How often a key may ask for its own rate limit: 60 times a minute, whatever its plan.
pub const INQUIRY_QUOTA: Quota = Quota::new_const(60, 86_400);

/// What the service does about subjects that exceed their quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// A key refused more than this many times after its first refusal, while limited, is
    /// suspended.
    pub suspend_after: u32,
    /// How long a suspension lasts.
    pub suspension: Duration,
    /// The quota of each client address for requests without a valid key.
    pub per_address: Quota,
}

impl Default for RateLimitPolicy {
    fn default() -> Self {
        Self {
            suspend_after: 30,
            suspension: Duration::from_secs(15 * 60),
            per_address: Quota::per_minute_only(60)
                .unwrap_or_else(|_| unreachable!("60 is positive")),
        }
    }
}

/// How much of one window is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowUsage {
    /// Requests the window admits.
    pub limit: u32,
    /// Requests it still admits.
    pub remaining: u32,
    /// When it ends, in Unix seconds.
    pub reset: u64,
    /// Its length in seconds.
    pub length: u64,
}

/// What happens to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It goes through and counts in both windows.
    Admitted,
    /// It is refused: a window is full. Retry after `retry_after` seconds (at least 1).
    Limited {
        /// Seconds until the binding window resets.
        retry_after: u64,
    },
    /// It is refused: the store of the counters cannot be reached and the service is set to
    /// refuse rather than count locally. Retry after `retry_after` seconds (at least 1).
    Unavailable {
        /// Seconds to wait before retrying.
        retry_after: u64,
    },
    /// It is refused: the key is suspended until `until` (Unix seconds).
    Suspended {
        /// When the suspension ends.
        until: u64,
        /// Seconds until then (at least 1).
        retry_after: u64,
    },
}

/// The windows a slot given back returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveBack {
    /// The minute's and the day's: the request needed no slot at all.
    Both,
    /// The day's only: the request counts in its minute, which protects the service, but
    /// not in the day's quota, which the customer pays for (a `304 Not Modified`).
    Day,
}

/// The decision on one request, with everything its rate-limit headers need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Admitted, limited or suspended.
    pub verdict: Verdict,
    /// The UTC minute window after the decision.
    pub minute: WindowUsage,
    /// The UTC day window after the decision.
    pub day: WindowUsage,
    /// When the decision was taken, in Unix seconds.
    pub at: u64,
}

impl Decision {
    /// This decision once its slot is given back in `windows` (see
    /// [`RateLimiter::give_back`](crate::RateLimiter::give_back)): those windows admit one more
    /// request. A refusal stays as it is.
    #[must_use]
    pub fn given_back(mut self, windows: GiveBack) -> Self {
        if self.is_admitted() {
            let free = |window: &mut WindowUsage| {
                window.remaining = window.remaining.saturating_add(1).min(window.limit);
            };
            free(&mut self.day);
            if windows == GiveBack::Both {
                free(&mut self.minute);
            }
        }
        self
    }

    /// The window that binds: the one with the fewest requests left; on a tie, the one that
    /// resets later.
    pub fn binding(&self) -> WindowUsage {
        if self.day.remaining <= self.minute.remaining { self.day } else { self.minute }
    }

    /// Whether the request goes through.
    pub fn is_admitted(&self) -> bool {
        self.verdict == Verdict::Admitted
    }

    /// The windows as they stand before the request this decision is about: a peek
    /// ([`RateLimiter::peek`](crate::RateLimiter::peek)) that would admit the request shows the
    /// windows after it, one request fewer in each; a refusal shows them as they are.
    #[must_use]
    pub fn as_it_stands(mut self) -> Self {
        if self.is_admitted() {
            self.minute.remaining = self.minute.remaining.saturating_add(1).min(self.minute.limit);
            self.day.remaining = self.day.remaining.saturating_add(1).min(self.day.limit);
        }
        self
    }
}

/// The start of the window of `length` seconds that contains `now` (Unix seconds).
pub const fn window_start(now: u64, length: u64) -> u64 {
    now - now % length
}

/// Unix seconds of an instant, rounded down; instants before 1970 count as 0.
pub fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The counters of one subject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitState {
    // Window indices (minutes and days since the Unix epoch) rather than start instants:
    // a state is 32 bytes, and a million of them fit in a few tens of MiB.
    minute: u32,
    minute_count: u32,
    day: u32,
    day_count: u32,
    /// Refusals since the last admitted request.
    refusals: u32,
    /// End of the suspension, in Unix seconds; 0 when not suspended.
    suspended_until: u64,
}

impl RateLimitState {
    /// A state from its stored parts: the minute and the day (indices since the Unix epoch)
    /// with the requests each admitted, the refusals since the last admission, and the end
    /// of a suspension in Unix seconds (0 for none). For stores that keep the parts apart.
    pub const fn from_parts(
        (minute, minute_count): (u32, u32),
        (day, day_count): (u32, u32),
        refusals: u32,
        suspended_until: u64,
    ) -> Self {
        Self { minute, minute_count, day, day_count, refusals, suspended_until }
    }

    /// Decides on one request of a subject with `quota` at `now` (Unix seconds), and
    /// updates the counters. `suspendable` is false for subjects that cannot be suspended
    /// (client addresses).
    pub fn check(
        &mut self,
        quota: Quota,
        policy: &RateLimitPolicy,
        suspendable: bool,
        now: u64,
    ) -> Decision {
        let minute_start = window_start(now, MINUTE);
        let day_start = window_start(now, DAY);
        // Indices fit in 32 bits for the next 8,000 years.
        let (minute, day) = (
            u32::try_from(now / MINUTE).unwrap_or(u32::MAX),
            u32::try_from(now / DAY).unwrap_or(u32::MAX),
        );
        if self.minute != minute {
            self.minute = minute;
            self.minute_count = 0;
        }
        if self.day != day {
            self.day = day;
            self.day_count = 0;
        }
        let (per_minute, per_day) = (quota.per_minute.get(), quota.per_day.get());

        let verdict = if now < self.suspended_until {
            Verdict::Suspended {
                until: self.suspended_until,
                retry_after: self.suspended_until - now,
            }
        } else if self.minute_count < per_minute && self.day_count < per_day {
            self.minute_count += 1;
            self.day_count += 1;
            self.refusals = 0;
            Verdict::Admitted
        } else {
            self.refusals = self.refusals.saturating_add(1);
            // The first refusal tells the client; the ones after it are "further requests
            // while limited".
            if suspendable && self.refusals - 1 > policy.suspend_after {
                self.refusals = 0;
                self.suspended_until = now + policy.suspension.as_secs().max(1);
                Verdict::Suspended {
                    until: self.suspended_until,
                    retry_after: self.suspended_until - now,
                }
            } else {
                let minute_full = self.minute_count >= per_minute;
                let day_full = self.day_count >= per_day;
                // The window that must reset for a request to pass: the day if it is full
                // (it resets later), else the minute.
                let reset = if day_full { day_start + DAY } else { minute_start + MINUTE };
                debug_assert!(minute_full || day_full);
                Verdict::Limited { retry_after: (reset - now).max(1) }
            }
        };
        let usage = |limit: u32, count: u32, start: u64, length: u64| WindowUsage {
            limit,
            remaining: limit.saturating_sub(count),
            reset: start + length,
            length,
        };
        let mut decision = Decision {
            verdict,
            minute: usage(per_minute, self.minute_count, minute_start, MINUTE),
            day: usage(per_day, self.day_count, day_start, DAY),
            at: now,
        };
        if let Verdict::Suspended { .. } = verdict {
            // A suspended key has nothing left, whatever its windows say.
            decision.minute.remaining = 0;
            decision.day.remaining = 0;
        }
        decision
    }

    /// Gives back a slot that [`Self::check`] admitted at `taken_at` (Unix seconds) and that
    /// its request turned out not to need, in `windows`: each of them the request counted in
    /// that is still this state's current one counts one request fewer. A window that has
    /// ended since is left alone: its count no longer limits anyone, and the new window never
    /// held the slot.
    pub fn give_back(&mut self, taken_at: u64, windows: GiveBack) {
        if windows == GiveBack::Both && u64::from(self.minute) == taken_at / MINUTE {
            self.minute_count = self.minute_count.saturating_sub(1);
        }
        if u64::from(self.day) == taken_at / DAY {
            self.day_count = self.day_count.saturating_sub(1);
        }
    }

    /// The decision a request would get at `now`, without counting it.
    pub fn peek(
        &self,
        quota: Quota,
        policy: &RateLimitPolicy,
        suspendable: bool,
        now: u64,
    ) -> Decision {
        let mut scratch = *self;
        scratch.check(quota, policy, suspendable, now)
    }
}

#[cfg(test)]
mod tests;
