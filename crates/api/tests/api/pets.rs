//! The operations on pets: the rules of a new pet, listing with filters and pages, creation.

use poem::http::StatusCode;
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn valid_pets_are_created_with_status_defaulting_to_available() {
    let h = Harness::new().await;
    let reply = h.post_json(r#"{"name":"Rex","categoryId":3,"id":999,"color":"brown"}"#).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body, json!({"id": 1, "name": "Rex", "categoryId": 3, "status": "available"}));
    let reply = h
        .post_json(&format!(
            r#"{{"name":"{}","categoryId":9223372036854775807,"status":"sold"}}"#,
            "é".repeat(100)
        ))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body["status"], "sold");
    assert_eq!(h.stored().await.len(), 2);
}

#[tokio::test]
async fn invalid_fields_are_400_naming_the_field_and_store_nothing() {
    let h = Harness::new().await;
    let cases = [
        (r#"{"categoryId":1}"#, "name"),
        (r#"{"name":"Rex"}"#, "categoryId"),
        (r#"{"name":"","categoryId":1}"#, "name"),
        (r#"{"name":"   ","categoryId":1}"#, "name"),
        (&*format!(r#"{{"name":"{}","categoryId":1}}"#, "x".repeat(101)), "name"),
        (r#"{"name":"Re\nx","categoryId":1}"#, "name"),
        (r#"{"name":"Rex","categoryId":0}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":-3}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1.5}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":"1"}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":99999999999999999999}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1,"status":"lost"}"#, "status"),
        (r#"{"name":"Rex","categoryId":1,"status":"Available"}"#, "status"),
        (r#"{"name":null,"categoryId":1}"#, "name"),
        (r#"{"name":"Rex","categoryId":null}"#, "categoryId"),
        (r#"{"name":"Rex","categoryId":1,"status":null}"#, "status"),
    ];
    for (body, field) in cases {
        let reply = h.post_json(body).await;
        reply.assert_error(400, "validation_failed");
        assert!(
            reply.body["message"].as_str().unwrap_or_default().contains(field),
            "{body}: {:?}",
            reply.body
        );
    }
    assert!(h.stored().await.is_empty(), "no invalid pet was stored");
}

fn ids(reply: &Reply) -> Vec<i64> {
    reply
        .body
        .as_array()
        .expect("an array")
        .iter()
        .map(|p| p["id"].as_i64().expect("an id"))
        .collect()
}

fn next_link(reply: &Reply) -> Option<String> {
    let link = reply.header("link")?;
    let target = link.strip_prefix('<')?.split_once(">; rel=\"next\"")?.0;
    Some(target.to_owned())
}

#[tokio::test]
async fn limit_defaults_to_20_and_is_bounded() {
    let h = Harness::new().await;
    seed(&h, 25).await;
    let reply = h.get("/v1/pets").await;
    assert_eq!(ids(&reply), (1..=20).collect::<Vec<_>>());
    assert_eq!(h.get("/v1/pets?limit=100").await.body.as_array().map(Vec::len), Some(25));
    assert_eq!(h.get("/v1/pets?limit=1").await.body.as_array().map(Vec::len), Some(1));
    for bad in ["0", "101", "-1", "1000000000000", "99999999999999999999", "-99999999999999999999"]
    {
        h.get(&format!("/v1/pets?limit={bad}")).await.assert_error(400, "validation_failed");
    }
    for bad in ["abc", "1.5", ""] {
        h.get(&format!("/v1/pets?limit={bad}")).await.assert_error(400, "invalid_request");
    }
    h.get("/v1/pets?status=lost").await.assert_error(400, "validation_failed");
    h.get("/v1/pets?cursor=bm9wZQ").await.assert_error(400, "invalid_request");
}

#[tokio::test]
async fn pages_follow_the_link_with_the_same_limit_and_status() {
    let h = Harness::new().await;
    seed(&h, 30).await;
    let mut seen = Vec::new();
    let mut uri = "/v1/pets?limit=4&status=pending".to_owned();
    for _ in 0..10 {
        let reply = h.get(&uri).await;
        assert_eq!(reply.status, StatusCode::OK);
        for pet in reply.body.as_array().expect("an array") {
            assert_eq!(pet["status"], "pending");
        }
        seen.extend(ids(&reply));
        match next_link(&reply) {
            Some(next) => {
                assert!(next.starts_with("/v1/pets?limit=4&status=pending&cursor="), "{next}");
                uri = next;
            }
            None => break,
        }
    }
    let expected: Vec<i64> = (1..=30).filter(|id| id % 3 == 2).collect();
    assert_eq!(seen, expected, "every pending pet once, by id ascending");
    let last = h.get("/v1/pets?limit=100").await;
    assert!(last.header("link").is_none(), "no Link on the last page");
}

#[tokio::test]
async fn created_pets_have_a_location_that_finds_them() {
    let h = Harness::new().await;
    let reply = h.post_json(r#"{"name":"Rex","categoryId":1,"status":"pending"}"#).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let location = reply.header("location").expect("a Location").to_owned();
    assert_eq!(location, format!("/v1/pets/{}", reply.body["id"]));
    assert_eq!(h.get(&location).await.body, reply.body);
}
