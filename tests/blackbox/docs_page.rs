//! The docs page and the document: sent gzipped to clients that accept it, revalidated by
//! `ETag`, never framed; and `nosniff` on every response of the service.

use crate::harness::{Client, Db};

#[tokio::test]
async fn the_docs_page_is_compressed_cached_and_never_framed() {
    let db = Db::sqlite();
    let server = db.start();
    let http = reqwest::Client::new();
    let docs = server.url("/v1/docs");

    let plain = http.get(&docs).send().await.expect("an answer");
    assert_eq!(plain.status(), 200);
    let headers = plain.headers().clone();
    let full = plain.bytes().await.expect("the page").len();
    assert!(headers.get("content-encoding").is_none(), "not gzipped unless asked");
    let csp = headers["content-security-policy"].to_str().expect("text");
    for directive in ["default-src 'none'", "script-src 'sha256-", "frame-ancestors 'none'"] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["cache-control"].to_str().expect("text").contains("max-age="));

    let zipped = http.get(&docs).header("accept-encoding", "gzip").send().await.expect("an answer");
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let etag = zipped.headers()["etag"].clone();
    let sent = zipped.bytes().await.expect("the page").len();
    assert!(sent * 3 < full, "gzipped: {sent} bytes of {full}");

    let again = http
        .get(&docs)
        .header("accept-encoding", "gzip")
        .header("if-none-match", etag.clone())
        .send()
        .await
        .expect("an answer");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag);
    assert!(again.bytes().await.expect("no body").is_empty());

    let document = http.get(server.url("/v1/openapi.json")).send().await.expect("an answer");
    assert!(document.headers().contains_key("etag"));
    let as_served: serde_json::Value = document.json().await.expect("the document, uncompressed");
    // What `cargo xtask openapi --lint` lints as the served document: the committed one with
    // the server itself first.
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json"))
            .expect("docs/openapi.json");
    let mut expected: serde_json::Value = serde_json::from_str(&committed).expect("JSON");
    let this = serde_json::json!({"url": "/v1", "description": "This server: the one that served this document"});
    expected["servers"].as_array_mut().expect("servers").insert(0, this);
    assert_eq!(
        as_served, expected,
        "the served document is the committed one, the server itself first"
    );
}

#[tokio::test]
async fn every_response_says_nosniff() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let client = Client::new(&key);
    for resp in [
        client.get(&server.url("/v1/pets")).await,
        client.get(&server.url("/v1/nowhere")).await,
        reqwest::get(server.url("/v1/pets")).await.expect("a 401"),
        reqwest::get(server.url("/livez")).await.expect("an answer"),
        reqwest::get(server.url("/metrics")).await.expect("an answer"),
    ] {
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff", "{}", resp.url());
    }
}
