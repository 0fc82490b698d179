//! What the middleware adds to the operations' responses, written into the document:
//! the rate-limit, caching, tracing and deprecation headers, the entity tags of conditional
//! reads, the 429 of every operation and the 403 of those a `read` key may not call.

use serde_json::{Value, json};

use crate::operations::Caching;
use crate::wire::deprecation::Deprecation;

/// The 403 of an operation a `read` key may not call.
pub(super) fn add_forbidden(operation: &mut Value) {
    operation["responses"]["403"] = json!({
        "description": "The key's scope is `read`: it may only call the operations that change \
                        nothing (`forbidden`). This operation needs a `write` key.",
        "content": {"application/json; charset=utf-8": {"schema": {"$ref": "#/components/schemas/Error"}}},
        "headers": {
            "WWW-Authenticate": {
                "description": "`Bearer error=\"insufficient_scope\", scope=\"write\"` (RFC 6750).",
                "required": true,
                "schema": {"type": "string"},
                "example": "Bearer error=\"insufficient_scope\", scope=\"write\"",
            }
        },
    });
}

/// The `ETag` of a conditional read's `200`, and its `304`, which the `entity_tags` layer
/// gives.
pub(super) fn add_entity_tags(operation: &mut Value) {
    let etag = json!({
        "description": "A strong validator of the exact body (RFC 9110): send it back in \
                        `If-None-Match` to be answered `304 Not Modified` while the answer is \
                        unchanged.",
        "required": true,
        "schema": {"type": "string"},
        "example": "\"1b2M2Y8AsgTpgAmY7PhCfg\"",
    });
    if operation["responses"]["200"]["headers"].is_null() {
        operation["responses"]["200"]["headers"] = json!({});
    }
    operation["responses"]["200"]["headers"]["ETag"] = etag.clone();
    let mut unchanged = json!({"ETag": etag});
    // A page's `Link` to the next one comes with its 304 too, as the page has not changed.
    let headers = operation["responses"]["200"]["headers"].as_object();
    let link = headers.into_iter().flatten().find(|(name, _)| name.eq_ignore_ascii_case("link"));
    if let Some((name, link)) = link {
        unchanged[name] = link.clone();
    }
    operation["responses"]["304"] = json!({
        "description": "Not modified: `If-None-Match` names the current answer's `ETag`. No \
                        body. Spends nothing of the key's daily quota; it counts in the minute \
                        window.",
        "headers": unchanged,
    });
}

/// `Cache-Control` on every response, and `Vary` on those a client's cache may keep, as the
/// `envelope` layer sets them (`docs/api.md#caching-and-compression`).
pub(super) fn add_cache_headers(operation: &mut Value, conditional: bool) {
    let Some(responses) = operation["responses"].as_object_mut() else {
        return;
    };
    for (status, response) in responses {
        let kept = conditional && (status == "200" || status == "304");
        let caching = if kept { Caching::Revalidated } else { Caching::NoStore };
        let (cache_control, vary) = caching.headers(true);
        let description = if kept {
            "`private, no-cache`: the client's own cache may keep the answer and must \
             revalidate it (`If-None-Match`) before each use; no shared cache keeps it."
        } else {
            "`no-store`: no cache keeps the answer."
        };
        header(response, "Cache-Control", description, cache_control);
        if let Some(vary) = vary {
            header(
                response,
                "Vary",
                "The request headers the answer depends on: the key, and the codings the \
                 client accepts.",
                vary,
            );
        }
    }
}

/// Every operation can be refused for going over a limit.
pub(super) fn add_too_many_requests(operation: &mut Value) {
    operation["responses"]["429"] = json!({
        "description": "Rate limit exceeded (`rate_limited`), or the API key is suspended for \
                        calling on while limited (`api_key_suspended`). Wait `Retry-After` \
                        seconds; back off exponentially.",
        "content": {"application/json; charset=utf-8": {"schema": {"$ref": "#/components/schemas/Error"}}},
        "headers": {
            "Retry-After": {
                "description": "Seconds to wait before retrying (at least 1).",
                "required": true,
                "schema": {"type": "integer", "format": "int64", "minimum": 1},
            }
        },
    });
}

/// The headers the rate-limit and tracing layers put on every response.
pub(super) fn add_rate_limit_headers(response: &mut Value) {
    if !response["headers"].is_object() {
        response["headers"] = json!({});
    }
    let integer = |description: &str| json!({"description": description, "required": true, "schema": {"type": "integer", "format": "int64"}});
    let string = |description: &str, example: &str| json!({"description": description, "required": true, "schema": {"type": "string"}, "example": example});
    let headers = &mut response["headers"];
    headers["X-RateLimit-Limit"] =
        integer("The limit of the binding window: the one with the fewest requests left.");
    headers["X-RateLimit-Remaining"] = integer("Requests remaining in the binding window.");
    headers["X-RateLimit-Reset"] =
        integer("Unix timestamp (seconds) at which the binding window resets.");
    headers["RateLimit-Policy"] = string(
        "Both windows, as in the IETF draft: quota `q` per window of `w` seconds.",
        "\"minute\";q=60;w=60, \"day\";q=1000;w=86400",
    );
    headers["RateLimit"] = string(
        "Both windows, as in the IETF draft: `r` requests remaining, reset in `t` seconds.",
        "\"minute\";r=59;t=41, \"day\";r=999;t=80000",
    );
    headers["X-Request-Id"] =
        string("Identifies the request in the service's logs.", "3f2a9c1e5b7d4a60");
}

/// poem-openapi writes response header names in capitals (`LOCATION`); HTTP names are
/// case-insensitive, but readers expect the usual spelling (`Location`).
pub(super) fn canonical_header_names(response: &mut Value) {
    if let Some(headers) = response["headers"].as_object_mut() {
        let renamed = std::mem::take(headers).into_iter().map(|(name, header)| {
            if name.eq_ignore_ascii_case("www-authenticate") {
                return ("WWW-Authenticate".to_owned(), header);
            }
            if name.eq_ignore_ascii_case("etag") {
                return ("ETag".to_owned(), header);
            }
            let canonical = name
                .split('-')
                .map(|word| {
                    let lower = word.to_ascii_lowercase();
                    let mut chars = lower.chars();
                    chars.next().map_or_else(String::new, |first| {
                        first.to_ascii_uppercase().to_string() + chars.as_str()
                    })
                })
                .collect::<Vec<_>>()
                .join("-");
            (canonical, header)
        });
        headers.extend(renamed);
    }
}

pub(super) fn header(response: &mut Value, name: &str, description: &str, example: &str) {
    if !response["headers"].is_object() {
        response["headers"] = json!({});
    }
    response["headers"][name] = json!({
        "description": description,
        "required": true,
        "schema": {"type": "string"},
        "example": example,
    });
}

pub(super) fn add_deprecation_headers(response: &mut Value, deprecation: &Deprecation) {
    let [(_, since), (_, sunset), (_, link)] = deprecation.headers("/7");
    let text = |v: &poem::http::HeaderValue| v.to_str().unwrap_or_default().to_owned();
    header(response, "Deprecation", "When the operation was deprecated (RFC 9745).", &text(&since));
    header(response, "Sunset", "When the operation stops working (RFC 8594).", &text(&sunset));
    header(
        response,
        "Link",
        "The address that answers the same request from now on: the operation that replaces \
         this one, with the same id.",
        &text(&link),
    );
}
