//! The rate-limit arithmetic at the edges: window boundaries, both quotas, suspensions.

use super::*;
use proptest::prelude::*;

fn quota(m: u32, d: u32) -> Quota {
    Quota::new(m, d).unwrap()
}

/// 2026-11-22T00:00:00Z, a UTC midnight.
const MIDNIGHT: u64 = 1_795_305_600;

#[test]
fn windows_are_aligned_to_the_utc_minute_and_day() {
    assert_eq!(window_start(MIDNIGHT + 59, MINUTE), MIDNIGHT);
    assert_eq!(window_start(MIDNIGHT + 60, MINUTE), MIDNIGHT + 60);
    assert_eq!(window_start(MIDNIGHT + DAY - 1, DAY), MIDNIGHT);
    assert_eq!(window_start(MIDNIGHT + DAY, DAY), MIDNIGHT + DAY);
}

#[test]
fn a_minute_quota_admits_exactly_its_count_then_limits_until_the_next_minute() {
    let policy = RateLimitPolicy::default();
    let mut state = RateLimitState::default();
    let now = MIDNIGHT + 10;
    for i in 0..60 {
        let d = state.check(quota(60, 1000), &policy, true, now);
        assert!(d.is_admitted());
        assert_eq!(d.minute.remaining, 59 - i);
        assert_eq!(d.binding(), d.minute);
    }
    let d = state.check(quota(60, 1000), &policy, true, now + 5);
    assert_eq!(d.verdict, Verdict::Limited { retry_after: 45 });
    assert_eq!(
        (d.minute.remaining, d.day.remaining),
        (0, 940),
        "a refused request counts in neither window"
    );
    assert_eq!(d.binding().reset, MIDNIGHT + 60);
    let d = state.check(quota(60, 1000), &policy, true, MIDNIGHT + 60);
    assert!(d.is_admitted(), "the next minute has room again");
    assert_eq!(d.minute.remaining, 59);
}

#[test]
fn a_full_day_binds_until_utc_midnight() {
    let policy = RateLimitPolicy::default();
    let mut state = RateLimitState::default();
    let start = MIDNIGHT + DAY - 120;
    for i in 0..50 {
        assert!(state.check(quota(1000, 50), &policy, true, start + i).is_admitted());
    }
    let d = state.check(quota(1000, 50), &policy, true, start + 60);
    assert_eq!(d.verdict, Verdict::Limited { retry_after: 60 });
    assert_eq!(d.binding(), d.day);
    assert_eq!(d.binding().reset, MIDNIGHT + DAY);
    assert!(
        state.check(quota(1000, 50), &policy, true, MIDNIGHT + DAY).is_admitted(),
        "a new UTC day"
    );
}

#[test]
fn on_a_tie_the_window_that_resets_later_binds() {
    let policy = RateLimitPolicy::default();
    let mut state = RateLimitState::default();
    let d = state.check(quota(5, 5), &policy, true, MIDNIGHT);
    assert_eq!(d.minute.remaining, d.day.remaining);
    assert_eq!(d.binding(), d.day);
}

#[test]
fn calling_on_while_limited_suspends_the_key() {
    let policy = RateLimitPolicy {
        suspend_after: 30,
        suspension: Duration::from_secs(900),
        ..RateLimitPolicy::default()
    };
    let mut state = RateLimitState::default();
    let q = quota(2, 100);
    let now = MIDNIGHT + 1;
    assert!(state.check(q, &policy, true, now).is_admitted());
    assert!(state.check(q, &policy, true, now).is_admitted());
    // The first refusal and 30 further ones are merely limited...
    for _ in 0..31 {
        assert!(matches!(state.check(q, &policy, true, now).verdict, Verdict::Limited { .. }));
    }
    // ...the 31st further one suspends.
    let d = state.check(q, &policy, true, now);
    assert_eq!(d.verdict, Verdict::Suspended { until: now + 900, retry_after: 900 });
    assert_eq!((d.minute.remaining, d.day.remaining), (0, 0));
    // Even a new minute does not lift it...
    let d = state.check(q, &policy, true, now + 899);
    assert_eq!(d.verdict, Verdict::Suspended { until: now + 900, retry_after: 1 });
    // ...its end does.
    assert!(state.check(q, &policy, true, now + 900).is_admitted());
}

#[test]
fn addresses_are_limited_but_never_suspended() {
    let policy = RateLimitPolicy::default();
    let mut state = RateLimitState::default();
    for _ in 0..200 {
        let d = state.check(policy.per_address, &policy, false, MIDNIGHT);
        assert!(!matches!(d.verdict, Verdict::Suspended { .. }));
    }
}

proptest! {
    /// Whatever the arrival times, no window ever admits more than its quota, refusals
    /// never count, and retry-after is at least a second and at most a day.
    #[test]
    fn no_window_admits_more_than_its_quota(
        per_minute in 1u32..20,
        per_day in 1u32..60,
        steps in prop::collection::vec(0u64..90, 1..400),
    ) {
        let policy = RateLimitPolicy::default();
        let q = quota(per_minute, per_day);
        let mut state = RateLimitState::default();
        let mut now = MIDNIGHT + DAY - 3_000;
        let mut admitted: std::collections::HashMap<(u64, u64), u32> = std::collections::HashMap::new();
        for step in steps {
            now += step;
            let d = state.check(q, &policy, false, now);
            match d.verdict {
                Verdict::Admitted => {
                    *admitted.entry((MINUTE, window_start(now, MINUTE))).or_default() += 1;
                    *admitted.entry((DAY, window_start(now, DAY))).or_default() += 1;
                }
                Verdict::Limited { retry_after } => prop_assert!((1..=DAY).contains(&retry_after)),
                Verdict::Suspended { .. } => prop_assert!(false, "addresses are never suspended"),
                Verdict::Unavailable { .. } => prop_assert!(false, "the state is always at hand"),
            }
            let binding = d.binding();
            prop_assert!(binding.remaining <= d.minute.remaining && binding.remaining <= d.day.remaining);
        }
        for ((length, _), count) in admitted {
            let limit = if length == MINUTE { per_minute } else { per_day };
            prop_assert!(count <= limit, "{} admitted in a window of {}", count, length);
        }
    }
}

#[test]
fn a_peek_as_it_stands_shows_the_windows_before_the_request() {
    let policy = RateLimitPolicy::default();
    let mut state = RateLimitState::default();
    let now = MIDNIGHT + 10;
    for _ in 0..3 {
        state.check(quota(60, 1000), &policy, true, now);
    }
    let peeked = state.peek(quota(60, 1000), &policy, true, now);
    assert_eq!((peeked.minute.remaining, peeked.day.remaining), (56, 996), "as if admitted");
    let standing = peeked.as_it_stands();
    assert_eq!((standing.minute.remaining, standing.day.remaining), (57, 997));
    for _ in 0..57 {
        state.check(quota(60, 1000), &policy, true, now);
    }
    let full = state.peek(quota(60, 1000), &policy, true, now).as_it_stands();
    assert_eq!((full.minute.remaining, full.day.remaining), (0, 940), "a refusal is as it is");
}
