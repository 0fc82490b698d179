//! `getPet` is deprecated: its headers on every response, and 410 after the sunset.

use std::time::Duration;

use poem::http::{Method, StatusCode};

use crate::helpers::*;

#[tokio::test]
async fn get_pet_is_deprecated_on_every_response_and_gone_after_the_sunset() {
    let h = Harness::new().await;
    seed(&h, 1).await;
    let deprecated = |reply: &Reply, successor: &str| {
        assert_eq!(reply.header("deprecation"), Some("@1767225600"));
        assert_eq!(reply.header("sunset"), Some("Thu, 05 Dec 2030 00:00:00 GMT"));
        let link = format!("<{successor}>; rel=\"successor-version\"");
        assert_eq!(reply.header("link"), Some(link.as_str()));
    };
    let found = h.get("/v1/pets/1").await;
    assert_eq!(found.status, StatusCode::OK);
    deprecated(&found, "/v1/pets?id=1");
    let missing = h.get("/v1/pets/2").await;
    missing.assert_error(404, "not_found");
    deprecated(&missing, "/v1/pets?id=2");
    let bad = h.get("/v1/pets/one").await;
    bad.assert_error(400, "invalid_request");
    assert!(bad.body["message"].as_str().unwrap_or_default().contains("petId"));
    deprecated(&bad, "/v1/pets");
    let anonymous = h.send(Method::GET, "/v1/pets/1", None, None).await;
    anonymous.assert_error(401, "unauthorized");
    deprecated(&anonymous, "/v1/pets?id=1");

    h.clock.set(std::time::UNIX_EPOCH + Duration::from_secs(1_922_659_199));
    assert_eq!(h.get("/v1/pets/1").await.status, StatusCode::OK, "still there a second before");
    h.clock.advance(Duration::from_secs(1));
    let gone = h.get("/v1/pets/1").await;
    gone.assert_error(410, "gone");
    deprecated(&gone, "/v1/pets?id=1");
    assert_eq!(h.get("/v1/pets").await.status, StatusCode::OK, "listPets lives on");
}
