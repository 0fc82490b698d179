//! The `account` operation: `getRateLimit` (beta), the caller's plan and both windows, as
//! GitHub's `GET /rate_limit` gives them (`docs/api.md#getratelimit-get-v1rate_limit-beta`).
//!
//! It spends none of the key's quota: the guard (`edge/guard.rs`) only looks at the
//! key's windows, and counts the request under the key's own inquiry quota instead (60 a
//! minute). The body shows the decision the guard took, so it agrees with the headers.

use animal_store_domain::{Plan, Subject, Verdict, WindowUsage};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi, Tags};

use crate::error::{ErrorCode, ErrorSet, OperationError};
use crate::operations::rate_limit::KeyWindows;
use crate::operations::state::AppState;
use crate::wire::auth::BearerKey;

#[derive(Tags)]
enum Tag {
    /// The caller's own account: its key's plan and rate limits.
    #[oai(rename = "account")]
    Account,
}

/// A plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "PlanName", rename_all = "lowercase")]
pub enum PlanName {
    /// 60 requests a minute, 1,000 a day.
    Free,
    /// 300 requests a minute, 10,000 a day.
    Pro,
    /// 1,000 requests a minute, 100,000 a day.
    Business,
    /// Quotas agreed for the key.
    Enterprise,
}

/// One window of the caller's quota.
#[derive(Debug, Clone, Object)]
#[oai(rename = "RateLimitWindow", rename_all = "camelCase")]
pub struct WindowBody {
    /// Requests the window admits.
    limit: u32,
    /// Requests it still admits.
    remaining: u32,
    /// When it resets, in Unix seconds.
    reset: u64,
}

impl From<WindowUsage> for WindowBody {
    fn from(window: WindowUsage) -> Self {
        let WindowUsage { limit, remaining, reset, length: _ } = window;
        Self { limit, remaining, reset }
    }
}

/// The caller's plan and the state of both its windows. Asking spends no quota.
#[derive(Debug, Clone, Object)]
#[oai(rename = "RateLimit", rename_all = "camelCase")]
pub struct RateLimitBody {
    /// The key's plan.
    plan: PlanName,
    /// The UTC minute.
    minute: WindowBody,
    /// The UTC day.
    day: WindowBody,
    /// When the key's suspension ends, in Unix seconds; absent when it is not suspended.
    #[oai(skip_serializing_if_is_none)]
    suspended_until: Option<u64>,
}

#[derive(ApiResponse)]
enum GetRateLimitOk {
    /// The caller's plan and windows; the rate-limit headers show the same numbers.
    #[oai(status = 200)]
    Ok(Json<RateLimitBody>),
}

struct GetRateLimitErrors;
impl ErrorSet for GetRateLimitErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (ErrorCode::Unauthorized, "Missing or invalid API key."),
        (ErrorCode::InternalError, "The server failed."),
        (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable."),
    ];
}

/// The `account` operation.
pub struct AccountApi;

#[OpenApi(tag = "Tag::Account")]
impl AccountApi {
    /// [beta] Get your rate limit
    ///
    /// Returns the caller's plan and both windows (the UTC minute and the UTC day) without
    /// spending any of them, suspended or not; the response's rate-limit headers show the
    /// same numbers. It is limited on its own, to 60 requests a minute per key.
    #[oai(path = "/rate_limit", method = "get", operation_id = "getRateLimit")]
    async fn get_rate_limit(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        request: &poem::Request,
    ) -> Result<GetRateLimitOk, OperationError<GetRateLimitErrors>> {
        let decision = match request.extensions().get::<KeyWindows>() {
            Some(KeyWindows(decision)) => *decision,
            // Outside the guard (a test calling the endpoint alone): look now.
            None => {
                state.limiter.peek(&Subject::Key(key.0.owner.clone()), key.0.plan.quota()).await
            }
        };
        let plan = match key.0.plan {
            Plan::Free => PlanName::Free,
            Plan::Pro => PlanName::Pro,
            Plan::Business => PlanName::Business,
            Plan::Enterprise(_) => PlanName::Enterprise,
        };
        let suspended_until = match decision.verdict {
            Verdict::Suspended { until, .. } => Some(until),
            _ => None,
        };
        Ok(GetRateLimitOk::Ok(Json(RateLimitBody {
            plan,
            minute: decision.minute.into(),
            day: decision.day.into(),
            suspended_until,
        })))
    }
}
