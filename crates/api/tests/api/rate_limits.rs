//! Rate limits: the headers on every response, 429s, suspensions, limits per client address.

use std::time::Duration;

use animal_store_domain::Plan;
use poem::http::{Method, StatusCode};

use crate::helpers::*;

async fn free_key(h: &Harness) -> String {
    let issued = h.keys.issue(None, Plan::Free).await.expect("issue");
    format!("Bearer {}", issued.secret.expose())
}

fn minute_end(now: u64) -> u64 {
    now - now % 60 + 60
}

#[tokio::test]
async fn every_response_carries_the_rate_limit_headers() {
    let h = Harness::new().await;
    h.clock.advance(Duration::from_secs(15));
    let now = NOW + 15;
    let key = free_key(&h).await;
    let replies = [
        h.send(Method::GET, "/v1/pets", Some(&key), None).await,
        h.send(
            Method::POST,
            "/v1/pets",
            Some(&key),
            Some(("application/json", br#"{"name":"Rex","categoryId":1}"#.to_vec())),
        )
        .await,
        h.send(Method::POST, "/v1/pets", Some(&key), Some(("application/json", b"{}".to_vec())))
            .await,
        h.send(Method::GET, "/v1/pets/99", Some(&key), None).await,
        h.send(Method::DELETE, "/v1/pets", Some(&key), None).await,
        h.send(Method::GET, "/v1/nowhere", Some(&key), None).await,
    ];
    for (i, reply) in replies.iter().enumerate() {
        let remaining = 59 - i;
        assert_eq!(reply.header("x-ratelimit-limit"), Some("60"), "{i}");
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some(remaining.to_string().as_str()),
            "{i}"
        );
        assert_eq!(reply.header("x-ratelimit-reset"), Some(minute_end(now).to_string().as_str()));
        assert_eq!(
            reply.header("ratelimit-policy"),
            Some("\"minute\";q=60;w=60, \"day\";q=1000;w=86400")
        );
        let day_left = 86_400 - now % 86_400;
        assert_eq!(
            reply.header("ratelimit"),
            Some(
                format!("\"minute\";r={remaining};t=45, \"day\";r={};t={day_left}", 999 - i)
                    .as_str()
            )
        );
    }
    // Requests without a valid key count against the client address, and say so.
    for (i, reply) in [
        h.send(Method::GET, "/v1/pets", None, None).await,
        h.send(Method::GET, "/v1/pets", Some("Bearer as_live_nope"), None).await,
        h.send(Method::GET, "/v1/openapi.json", None, None).await,
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(reply.header("x-ratelimit-limit"), Some("60"));
        assert_eq!(reply.header("x-ratelimit-remaining"), Some((59 - i).to_string().as_str()));
    }
}

#[tokio::test]
async fn over_the_limit_is_429_with_retry_after_until_the_window_resets() {
    let h = Harness::new().await;
    h.clock.advance(Duration::from_secs(20));
    let key = free_key(&h).await;
    for _ in 0..60 {
        assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
    }
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "rate_limited");
    assert_eq!(reply.header("retry-after"), Some("40"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("0"));
    // A refused request did not count: the day still has 940 left.
    assert!(
        reply.header("ratelimit").is_some_and(|v| v.contains("\"day\";r=940;")),
        "{:?}",
        reply.header("ratelimit")
    );
    // getPet's 429 still carries its deprecation headers.
    let reply = h.send(Method::GET, "/v1/pets/1", Some(&key), None).await;
    reply.assert_error(429, "rate_limited");
    assert!(reply.header("sunset").is_some());
    h.clock.advance(Duration::from_secs(40));
    assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn calling_on_while_limited_suspends_the_key_for_15_minutes() {
    let h = Harness::new().await;
    let key = free_key(&h).await;
    for _ in 0..60 {
        assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
    }
    for _ in 0..31 {
        h.send(Method::GET, "/v1/pets", Some(&key), None).await.assert_error(429, "rate_limited");
    }
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "api_key_suspended");
    assert_eq!(reply.header("retry-after"), Some("900"));
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(reply.header("x-ratelimit-reset"), Some((NOW + 900).to_string().as_str()));
    h.clock.advance(Duration::from_secs(120));
    let reply = h.send(Method::GET, "/v1/pets", Some(&key), None).await;
    reply.assert_error(429, "api_key_suspended");
    assert_eq!(reply.header("retry-after"), Some("780"), "a new minute does not lift a suspension");
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK, "other keys are not affected");
    h.clock.advance(Duration::from_secs(780));
    assert_eq!(h.send(Method::GET, "/v1/pets", Some(&key), None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn guessing_keys_from_one_address_ends_in_429() {
    let h = Harness::new().await;
    for i in 0..70 {
        let guess = format!("Bearer as_live_{i:012}_{}", "x".repeat(32));
        let reply = h.send(Method::GET, "/v1/pets", Some(&guess), None).await;
        if i < 60 {
            reply.assert_error(401, "unauthorized");
            assert_eq!(reply.header("x-ratelimit-remaining"), Some((59 - i).to_string().as_str()));
        } else {
            reply.assert_error(429, "rate_limited");
        }
    }
    // Not even a right guess gets through now: the address learns nothing until its
    // window resets, and then the valid key works again.
    let reply = h.get("/v1/pets").await;
    reply.assert_error(429, "rate_limited");
    assert_eq!(reply.header("x-ratelimit-limit"), Some("60"), "the address's limit");
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_document_declares_429_and_the_rate_limit_headers_everywhere() {
    let h = Harness::new().await;
    let doc = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    for (path, method) in [("/pets", "get"), ("/pets", "post"), ("/pets/{petId}", "get")] {
        let responses = doc["paths"][path][method]["responses"].as_object().expect("responses");
        assert!(responses["429"]["headers"]["Retry-After"].is_object(), "{method} {path}");
        for (status, response) in responses {
            for header in [
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "RateLimit-Policy",
                "RateLimit",
            ] {
                assert!(
                    response["headers"][header].is_object(),
                    "{method} {path} {status} {header}"
                );
            }
        }
    }
}
