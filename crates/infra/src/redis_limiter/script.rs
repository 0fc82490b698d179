//! The Lua script's protocol (`script.lua`): the key of a subject's state, the arguments of a
//! decision and of a give-back, and the state the script answers.

use std::net::IpAddr;

use animal_store_domain::limits::model::MINUTE;
use animal_store_domain::{GiveBack, Quota, RateLimitPolicy, RateLimitState, Subject};

/// The script, loaded by EVALSHA (and again after `NOSCRIPT`).
pub(super) fn script() -> redis::Script {
    redis::Script::new(include_str!("script.lua"))
}

/// What a decision asks the script.
pub(super) struct Decide<'a> {
    pub quota: Quota,
    /// Whether the subject can be suspended (a key).
    pub suspendable: bool,
    pub policy: &'a RateLimitPolicy,
    /// Count the request, or only look.
    pub count: bool,
    /// The time in Unix seconds; `None` for Redis's own clock.
    pub now: Option<u64>,
}

impl Decide<'_> {
    /// The call of `script` on the state of `subject` under `prefix`.
    pub(super) fn invocation<'s>(
        &self,
        script: &'s redis::Script,
        prefix: &str,
        subject: &Subject,
    ) -> redis::ScriptInvocation<'s> {
        let now = self.now.map(|now| now.to_string()).unwrap_or_default();
        let mut invocation = script.key(redis_key(prefix, subject));
        invocation
            .arg(self.quota.per_minute.get())
            .arg(self.quota.per_day.get())
            .arg(u8::from(self.suspendable))
            .arg(self.policy.suspend_after)
            .arg(self.policy.suspension.as_secs())
            .arg(u8::from(self.count))
            .arg(now);
        invocation
    }
}

/// The call of `script` that gives back the slot of `subject` admitted at `taken` (Unix
/// seconds): both windows' counts, or the day's only.
pub(super) fn give_back<'a>(
    script: &'a redis::Script,
    prefix: &str,
    subject: &Subject,
    taken: u64,
    windows: GiveBack,
) -> redis::ScriptInvocation<'a> {
    // Only the mode (2: both windows, 3: the day's) and the time of the slot matter to a
    // give-back.
    let mode = match windows {
        GiveBack::Both => 2,
        GiveBack::Day => 3,
    };
    let mut invocation = script.key(redis_key(prefix, subject));
    invocation.arg(0).arg(0).arg(0).arg(0).arg(0).arg(mode).arg(taken);
    invocation
}

/// The state the script found and the time it used, checked for range: a value that does
/// not fit (a key written by something else) is a failure of the store, not a panic.
pub(super) fn parse_state(found: &[i64]) -> Option<(RateLimitState, u64)> {
    let [minute, minute_count, day, day_count, refusals, suspended_until, now] = found else {
        return None;
    };
    let small = |value: &i64| u32::try_from(*value).ok();
    let state = RateLimitState::from_parts(
        (small(minute)?, small(minute_count)?),
        (small(day)?, small(day_count)?),
        small(refusals)?,
        u64::try_from(*suspended_until).ok()?,
    );
    let now = u64::try_from(*now).ok()?;
    (u64::from(small(minute)?) == now / MINUTE).then_some((state, now))
}

/// The Redis key of a subject's state, its subject in braces (a Redis Cluster hash tag).
fn redis_key(prefix: &str, subject: &Subject) -> String {
    match subject {
        Subject::Key(id) => format!("{prefix}:{{key:{id}}}"),
        Subject::Inquiry(id) => format!("{prefix}:{{inquiry:{id}}}"),
        Subject::Address(IpAddr::V4(ip)) => format!("{prefix}:{{ip:{ip}}}"),
        Subject::Address(IpAddr::V6(ip)) => format!("{prefix}:{{ip:{ip}}}"),
        Subject::Named(digest) => {
            let hex = digest.iter().fold(String::new(), |mut hex, byte| {
                let _ = std::fmt::Write::write_fmt(&mut hex, format_args!("{byte:02x}"));
                hex
            });
            format!("{prefix}:{{name:{hex}}}")
        }
    }
}
