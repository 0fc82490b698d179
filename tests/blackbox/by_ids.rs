//! listPets by ids through the real binary: `GET /v1/pets?id=3&id=7` answers the animals
//! with those ids as a page like any other (status filter, limit, `Link`, `ETag` and 304),
//! the ids that no animal has simply absent; it is the read of one animal that replaces
//! `getPet`, open to a `read` key before and after getPet's sunset.

use serde_json::{Value, json};

use crate::harness::{Client, Db, Server, json};

/// A memory server with one unlimited key, in `dir`, and a client of that key.
fn memory_server(dir: &tempfile::TempDir) -> (Server, Client) {
    let fixtures = dir.path().join("fixtures.json");
    let keys = r#"{"keys": [{"name": "shop", "plan": "enterprise", "perMinute": 10000, "perDay": 100000}]}"#;
    std::fs::write(&fixtures, keys).expect("write the fixtures");
    let path = fixtures.to_str().expect("UTF-8");
    let server = Server::start("memory://", dir.path().to_path_buf(), &["--fixtures", path]);
    let client = Client::new(server.ready["keys"]["shop"].as_str().expect("a key"));
    (server, client)
}

/// Adds `name` and returns it as created.
async fn add(client: &Client, server: &Server, name: &str, status: &str) -> Value {
    let body = format!(r#"{{"name":"{name}","categoryId":1,"status":"{status}"}}"#);
    let resp = client.post(&server.url("/v1/pets"), &body).await;
    assert_eq!(resp.status(), 201);
    json(resp).await
}

#[tokio::test]
async fn a_read_key_reads_one_animal_by_id_before_and_after_the_sunset() {
    let db = Db::sqlite();
    let writer = Client::new(&db.key("pro"));
    let out = db.run(&["keys", "create", "--plan", "pro", "--scope", "read"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reader = Client::new(String::from_utf8(out.stdout).expect("utf-8").trim());
    // 2030-12-04T23:59:58Z, two seconds before getPet's sunset.
    let (server, clock) = db.start_at(1_922_659_198);
    let rex = add(&writer, &server, "Rex", "available").await;
    add(&writer, &server, "Mia", "sold").await;
    let by_id = server.url(&format!("/v1/pets?id={}", rex["id"]));
    let one = server.url(&format!("/v1/pets/{}", rex["id"]));

    let resp = reader.get(&one).await;
    assert_eq!(resp.status(), 200);
    let successor = format!("</v1/pets?id={}>; rel=\"successor-version\"", rex["id"]);
    assert_eq!(resp.headers()["link"].to_str().expect("text"), successor);
    assert_eq!(json(reader.get(&by_id).await).await, json!([rex]));

    clock.set(1_922_659_200);
    assert_eq!(reader.get(&one).await.status(), 410, "getPet is gone");
    let resp = reader.get(&by_id).await;
    assert_eq!(resp.status(), 200, "its successor reads the animal");
    assert!(resp.headers().get("deprecation").is_none(), "and is not deprecated");
    assert_eq!(json(resp).await, json!([rex]));
}

#[tokio::test]
async fn ids_answer_a_page_of_those_animals_that_exist() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory_server(&dir);
    let mut pets = Vec::new();
    for (name, status) in
        [("A", "available"), ("B", "sold"), ("C", "available"), ("D", "available")]
    {
        pets.push(add(&client, &server, name, status).await);
    }
    let id = |i: usize| pets[i]["id"].as_i64().expect("an id");

    // Any order, repeats and unknown ids: the animals that exist, by id, each once.
    let url = server.url(&format!("/v1/pets?id={}&id=999999&id={}&id={}", id(2), id(0), id(2)));
    let resp = client.get(&url).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("link").is_none(), "one page");
    let tag = resp.headers()["etag"].to_str().expect("text").to_owned();
    assert_eq!(json(resp).await, json!([pets[0], pets[2]]));

    // The ETag and 304 as for any page.
    let again = client.raw().get(&url).bearer_auth(client.key()).header("if-none-match", &tag);
    let resp = again.send().await.expect("an answer");
    assert_eq!(resp.status(), 304);

    // With a status, and a page of one: the `Link` keeps the ids.
    let all = (0..4).map(|i| format!("id={}", id(i))).collect::<Vec<_>>().join("&");
    let url = server.url(&format!("/v1/pets?status=available&limit=1&{all}"));
    let resp = client.get(&url).await;
    let link = resp.headers()["link"].to_str().expect("text").to_owned();
    let tag = resp.headers()["etag"].to_str().expect("text").to_owned();
    assert_eq!(json(resp).await, json!([pets[0]]));
    let again = client.raw().get(&url).bearer_auth(client.key()).header("if-none-match", &tag);
    let unchanged = again.send().await.expect("an answer");
    assert_eq!(unchanged.status(), 304);
    assert_eq!(unchanged.headers()["link"], link.as_str(), "a 304 carries the page's Link");
    assert!(link.contains(&format!("&id={}&id={}", id(0), id(1))), "{link}");
    let mut seen = vec![pets[0].clone()];
    let mut next = link;
    for _ in 0..5 {
        let path = next.trim_start_matches('<').split('>').next().expect("an address").to_owned();
        let resp = client.get(&server.url(&path)).await;
        assert_eq!(resp.status(), 200);
        let link = resp.headers().get("link").map(|l| l.to_str().expect("text").to_owned());
        seen.extend(json(resp).await.as_array().expect("an array").iter().cloned());
        match link {
            Some(link) => next = link,
            None => break,
        }
    }
    assert_eq!(seen, [pets[0].clone(), pets[2].clone(), pets[3].clone()], "B is sold");
}

#[tokio::test]
async fn ids_that_are_not_ids_are_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let (server, client) = memory_server(&dir);
    let many = (1..=101).map(|i| format!("id={i}")).collect::<Vec<_>>().join("&");
    for (query, status, code) in [
        ("id=abc", 400, "invalid_request"),
        ("id=", 400, "invalid_request"),
        ("id=1&id=1.5", 400, "invalid_request"),
        (many.as_str(), 400, "validation_failed"),
    ] {
        let resp = client.get(&server.url(&format!("/v1/pets?{query}"))).await;
        assert_eq!(resp.status(), status, "{query}");
        let body = json(resp).await;
        assert_eq!(body["code"], code, "{query}: {body}");
        assert!(body["message"].as_str().expect("a message").contains("id"), "{body}");
    }
    let hundred = (1..=100).map(|i| format!("id={i}")).collect::<Vec<_>>().join("&");
    let resp = client.get(&server.url(&format!("/v1/pets?{hundred}"))).await;
    assert_eq!(resp.status(), 200, "a hundred ids are fine");
    assert_eq!(json(resp).await, json!([]));
}
