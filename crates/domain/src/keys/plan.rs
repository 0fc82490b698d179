//! Plans and their request quotas (`docs/api.md#plans`).
//!
//! A key belongs to one plan. Free, Pro and Business have the quotas of the contract; an
//! Enterprise key carries the quota agreed for it, stored with the key.

use std::fmt;
use std::num::NonZeroU32;

use thiserror::Error;

/// How many requests a key may make per UTC minute and per UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quota {
    /// Requests admitted in one UTC minute.
    pub per_minute: NonZeroU32,
    /// Requests admitted in one UTC day.
    pub per_day: NonZeroU32,
}

impl Quota {
    /// A quota from two constant counts; a zero fails to compile where it is a constant.
    pub const fn new_const(per_minute: u32, per_day: u32) -> Self {
        match (NonZeroU32::new(per_minute), NonZeroU32::new(per_day)) {
            (Some(per_minute), Some(per_day)) => Self { per_minute, per_day },
            _ => panic!("a quota of zero"),
        }
    }

    /// A quota from two positive counts.
    ///
    /// # Errors
    ///
    /// [`PlanError::ZeroQuota`] when either count is zero.
    pub fn new(per_minute: u32, per_day: u32) -> Result<Self, PlanError> {
        match (NonZeroU32::new(per_minute), NonZeroU32::new(per_day)) {
            (Some(per_minute), Some(per_day)) => Ok(Self { per_minute, per_day }),
            _ => Err(PlanError::ZeroQuota),
        }
    }

    /// A quota bounded by the minute only: its day allows every minute of the day to be full,
    /// so it never binds.
    ///
    /// # Errors
    ///
    /// [`PlanError::ZeroQuota`] when `per_minute` is zero.
    pub fn per_minute_only(per_minute: u32) -> Result<Self, PlanError> {
        Self::new(per_minute, per_minute.saturating_mul(1_440))
    }

    const fn fixed(per_minute: u32, per_day: u32) -> Self {
        match (NonZeroU32::new(per_minute), NonZeroU32::new(per_day)) {
            (Some(per_minute), Some(per_day)) => Self { per_minute, per_day },
            _ => panic!("a fixed quota is positive"),
        }
    }
}

/// A key's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plan {
    /// 60 requests a minute, 1,000 a day.
    Free,
    /// 300 requests a minute, 10,000 a day.
    Pro,
    /// 1,000 requests a minute, 100,000 a day.
    Business,
    /// A quota agreed for the key.
    Enterprise(Quota),
}

/// Why a plan cannot be built from what was given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    /// The plan name is not one of the four plans.
    #[error("unknown plan {0:?}: expected one of free, pro, business, enterprise")]
    UnknownPlan(String),
    /// Custom limits were given for a plan whose limits are fixed.
    #[error(
        "custom limits (per minute, per day) can only be set on the enterprise plan; the {0} plan has fixed limits"
    )]
    CustomLimitsNotAllowed(&'static str),
    /// An enterprise plan was asked for without both of its limits.
    #[error("the enterprise plan needs both a per-minute and a per-day limit")]
    MissingEnterpriseLimits,
    /// A limit of zero was given.
    #[error("limits must be at least 1 request")]
    ZeroQuota,
}

impl Plan {
    const FREE: Quota = Quota::fixed(60, 1_000);
    const PRO: Quota = Quota::fixed(300, 10_000);
    const BUSINESS: Quota = Quota::fixed(1_000, 100_000);

    /// Builds a plan from its name and, for Enterprise only, its limits.
    ///
    /// # Errors
    ///
    /// [`PlanError`] for an unknown name, custom limits on a fixed plan, or an enterprise plan
    /// without both limits.
    pub fn new(
        name: &str,
        per_minute: Option<u32>,
        per_day: Option<u32>,
    ) -> Result<Self, PlanError> {
        let fixed = match name {
            "free" => Self::Free,
            "pro" => Self::Pro,
            "business" => Self::Business,
            "enterprise" => {
                return match (per_minute, per_day) {
                    (Some(m), Some(d)) => Ok(Self::Enterprise(Quota::new(m, d)?)),
                    _ => Err(PlanError::MissingEnterpriseLimits),
                };
            }
            other => return Err(PlanError::UnknownPlan(other.to_owned())),
        };
        if per_minute.is_some() || per_day.is_some() {
            return Err(PlanError::CustomLimitsNotAllowed(fixed.name()));
        }
        Ok(fixed)
    }

    /// The plan's name, lowercase.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro => "pro",
            Self::Business => "business",
            Self::Enterprise(_) => "enterprise",
        }
    }

    /// The requests a key of this plan may make.
    pub const fn quota(self) -> Quota {
        match self {
            Self::Free => Self::FREE,
            Self::Pro => Self::PRO,
            Self::Business => Self::BUSINESS,
            Self::Enterprise(quota) => quota,
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn counts(plan: Plan) -> (u32, u32) {
        let q = plan.quota();
        (q.per_minute.get(), q.per_day.get())
    }

    #[test]
    fn fixed_plans_have_the_quotas_of_the_contract() {
        assert_eq!(counts(Plan::new("free", None, None).unwrap()), (60, 1_000));
        assert_eq!(counts(Plan::new("pro", None, None).unwrap()), (300, 10_000));
        assert_eq!(counts(Plan::new("business", None, None).unwrap()), (1_000, 100_000));
    }

    #[test]
    fn enterprise_needs_both_limits_and_fixed_plans_take_none() {
        assert_eq!(counts(Plan::new("enterprise", Some(5), Some(50)).unwrap()), (5, 50));
        assert_eq!(Plan::new("enterprise", Some(5), None), Err(PlanError::MissingEnterpriseLimits));
        assert_eq!(Plan::new("enterprise", None, None), Err(PlanError::MissingEnterpriseLimits));
        assert_eq!(Plan::new("enterprise", Some(0), Some(1)), Err(PlanError::ZeroQuota));
        assert_eq!(
            Plan::new("free", Some(10), None),
            Err(PlanError::CustomLimitsNotAllowed("free"))
        );
        assert_eq!(Plan::new("pro", None, Some(10)), Err(PlanError::CustomLimitsNotAllowed("pro")));
        assert!(matches!(Plan::new("gold", None, None), Err(PlanError::UnknownPlan(_))));
    }

    proptest! {
        #[test]
        fn enterprise_keeps_any_positive_quota(m in 1u32.., d in 1u32..) {
            prop_assert_eq!(counts(Plan::new("enterprise", Some(m), Some(d)).unwrap()), (m, d));
        }

        #[test]
        fn plan_names_round_trip(name in prop::sample::select(vec!["free", "pro", "business"])) {
            prop_assert_eq!(Plan::new(name, None, None).unwrap().name(), name);
        }
    }
}
