//! The probes: outside `/v1`, without a key, never rate limited, not in the document.

use std::sync::Arc;

use animal_store_api::probes::Readiness;
use animal_store_domain::{HealthCheck, RepositoryError};
use async_trait::async_trait;
use poem::http::Method;

use crate::helpers::*;

struct Down;

#[async_trait]
impl HealthCheck for Down {
    fn name(&self) -> &'static str {
        "database"
    }

    async fn check(&self) -> Result<(), RepositoryError> {
        Err(RepositoryError::Unavailable(Box::new(DiskOnFire)))
    }
}

#[tokio::test]
async fn livez_and_readyz_answer_without_a_key_and_count_nothing() {
    let h = Harness::new().await;
    for _ in 0..100 {
        for path in ["/livez", "/readyz"] {
            let reply = h.send(Method::GET, path, None, None).await;
            assert_eq!(reply.status.as_u16(), 200, "{path}");
            assert!(reply.header("x-ratelimit-limit").is_none(), "{path} is not rate limited");
            assert!(reply.header("x-request-id").is_some());
        }
    }
    assert_eq!(h.send(Method::GET, "/livez", None, None).await.body["status"], "live");
    assert_eq!(h.send(Method::GET, "/readyz", None, None).await.body["status"], "ready");
    // 200 probes later, the address has its whole quota for requests without a key.
    let unauthenticated = h.send(Method::GET, "/v1/pets", None, None).await;
    assert_eq!(unauthenticated.header("x-ratelimit-remaining"), Some("59"));

    let post = h.send(Method::POST, "/livez", None, None).await;
    post.assert_error(405, "method_not_allowed");
    assert_eq!(post.header("allow"), Some("GET, HEAD"));

    let document = h.send(Method::GET, "/v1/openapi.json", None, None).await.body;
    let paths = document["paths"].as_object().expect("paths");
    assert!(paths.keys().all(|p| !p.contains("livez") && !p.contains("readyz")));
}

#[tokio::test]
async fn readyz_names_the_failing_dependency_and_turns_503_when_draining() {
    let down = Harness::with_readiness(Arc::new(Readiness::new(vec![Arc::new(Down)]))).await;
    let reply = down.send(Method::GET, "/readyz", None, None).await;
    reply.assert_error(503, "service_unavailable");
    assert!(reply.body["message"].as_str().unwrap().starts_with("database is not ready"));
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(down.send(Method::GET, "/livez", None, None).await.status.as_u16(), 200);

    let readiness = Arc::new(Readiness::new(Vec::new()));
    let h = Harness::with_readiness(readiness.clone()).await;
    assert_eq!(h.send(Method::GET, "/readyz", None, None).await.status.as_u16(), 200);
    readiness.drain();
    let reply = h.send(Method::GET, "/readyz", None, None).await;
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.body["message"], "the server is shutting down");
    assert_eq!(h.get("/v1/pets").await.status.as_u16(), 200, "the API serves while draining");
}
