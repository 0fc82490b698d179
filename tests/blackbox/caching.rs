//! Caches and compression through the real binary: every answer's `Cache-Control` by its
//! kind (reads a client's cache may keep and revalidate, the documents any cache may keep
//! when asked without a key, nothing else kept anywhere), and JSON answers of 1 KiB and more
//! compressed with the best coding the request allows, each representation with its own
//! `ETag` and its own 304.

use std::io::Read as _;

use reqwest::header::HeaderMap;

use crate::harness::{Client, Server};

/// A key with room, a key of one request a minute, 100 pets and an order.
fn fixtures() -> String {
    let pets: Vec<String> = (1..=100)
        .map(|n| format!(r#"{{"name": "Pet number {n}", "categoryId": {}}}"#, n % 7 + 1))
        .collect();
    format!(
        r#"{{"keys": [{{"name": "shop", "plan": "enterprise", "perMinute": 1000, "perDay": 5000}},
                    {{"name": "tight", "plan": "enterprise", "perMinute": 1, "perDay": 5000}}],
            "pets": [{}],
            "orders": [{{"key": "shop", "petId": 1, "status": "placed"}}]}}"#,
        pets.join(", ")
    )
}

fn start(dir: &tempfile::TempDir) -> Server {
    let path = dir.path().join("fixtures.json");
    std::fs::write(&path, fixtures()).expect("write the fixtures");
    Server::start(
        "memory://",
        dir.path().to_path_buf(),
        &["--fixtures", path.to_str().expect("UTF-8")],
    )
}

fn key_of(server: &Server, name: &str) -> String {
    server.ready["keys"][name].as_str().expect("a key").to_owned()
}

/// `GET url` with `key` (if any) and extra headers.
async fn get(url: &str, key: Option<&str>, headers: &[(&str, &str)]) -> reqwest::Response {
    send(reqwest::Method::GET, url, key, headers).await
}

/// `method url` with `key` (if any) and extra headers.
async fn send(
    method: reqwest::Method,
    url: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("a response")
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers.get(name).map_or("", |value| value.to_str().expect("text"))
}

/// Asserts the caching headers of `resp`: its `Cache-Control`, and its `Vary` (`""`: none).
fn assert_cache(resp: &reqwest::Response, what: &str, cache_control: &str, vary: &str) {
    let headers = resp.headers();
    assert_eq!(header(headers, "cache-control"), cache_control, "{what}: {}", resp.status());
    assert_eq!(header(headers, "vary"), vary, "{what}: {}", resp.status());
    assert_eq!(header(headers, "x-content-type-options"), "nosniff", "{what}");
}

const REVALIDATED: &str = "private, no-cache";
const VARY: &str = "Authorization, Accept-Encoding";

#[tokio::test]
async fn every_answer_says_who_may_keep_it() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = start(&dir);
    let shop = key_of(&server, "shop");
    let key = Some(shop.as_str());

    // The reads that carry an ETag, and their 304s.
    for path in ["/v1/pets", "/v1/pets/1", "/v1/store/orders", "/v1/store/orders/1"] {
        let read = get(&server.url(path), key, &[]).await;
        assert_eq!(read.status(), 200, "{path}");
        assert_cache(&read, path, REVALIDATED, VARY);
        let tag = header(read.headers(), "etag").to_owned();
        let again = get(&server.url(path), key, &[("if-none-match", &tag)]).await;
        assert_eq!(again.status(), 304, "{path}");
        assert_cache(&again, path, REVALIDATED, VARY);
    }

    // Everything else a key asks for is kept nowhere: writes, the rate limit, errors.
    let created =
        Client::new(&shop).post(&server.url("/v1/pets"), r#"{"name":"Tom","categoryId":1}"#).await;
    assert_eq!(created.status(), 201);
    assert_cache(&created, "createPet", "no-store", "Accept-Encoding");
    for (path, status) in [
        ("/v1/rate_limit", 200),
        ("/v1/pets/9999", 404),
        ("/v1/pets?limit=0", 400),
        ("/v1/nowhere", 404),
    ] {
        let resp = get(&server.url(path), key, &[]).await;
        assert_eq!(resp.status(), status, "{path}");
        assert_eq!(header(resp.headers(), "cache-control"), "no-store", "{path}");
    }
    let not_allowed = send(reqwest::Method::DELETE, &server.url("/v1/pets"), key, &[]).await;
    assert_eq!(not_allowed.status(), 405);
    assert_cache(&not_allowed, "a 405", "no-store", "");
    let anonymous = get(&server.url("/v1/pets"), None, &[]).await;
    assert_eq!(anonymous.status(), 401);
    assert_cache(&anonymous, "a 401", "no-store", "Accept-Encoding");
    let tight = key_of(&server, "tight");
    assert_eq!(get(&server.url("/v1/pets"), Some(&tight), &[]).await.status(), 200);
    let limited = get(&server.url("/v1/pets"), Some(&tight), &[]).await;
    assert_eq!(limited.status(), 429);
    assert_cache(&limited, "a 429", "no-store", "");

    // The operators' addresses.
    for path in ["/livez", "/readyz", "/metrics"] {
        let resp = get(&server.url(path), None, &[]).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_cache(&resp, path, "no-store", "");
    }

    // The documents: any cache when asked without a key, the client's own with one.
    for path in ["/v1/openapi.json", "/v1/docs"] {
        let public = get(&server.url(path), None, &[]).await;
        assert_eq!(public.status(), 200, "{path}");
        assert_cache(&public, path, "public, max-age=300", VARY);
        let private = get(&server.url(path), key, &[]).await;
        assert_eq!(private.status(), 200, "{path}");
        assert_cache(&private, path, "private, max-age=300", VARY);
        assert!(private.headers().contains_key("x-ratelimit-limit"), "{path}: the key's headers");
        let tag = header(private.headers(), "etag").to_owned();
        let again = get(&server.url(path), key, &[("if-none-match", &tag)]).await;
        assert_eq!(again.status(), 304, "{path}");
        assert_cache(&again, path, "private, max-age=300", VARY);
    }
}

/// `body` decoded from `coding`.
fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut decoded = Vec::new();
    match coding {
        "gzip" => {
            flate2::read::GzDecoder::new(body).read_to_end(&mut decoded).expect("gzip");
        }
        "br" => {
            brotli::Decompressor::new(body, 4096).read_to_end(&mut decoded).expect("br");
        }
        "zstd" => decoded = zstd::decode_all(body).expect("zstd"),
        other => panic!("unexpected coding {other}"),
    }
    decoded
}

#[tokio::test]
async fn lists_travel_compressed_when_asked_and_each_representation_revalidates() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = start(&dir);
    let shop = key_of(&server, "shop");
    let key = Some(shop.as_str());
    let page = server.url("/v1/pets?limit=100");

    let identity = get(&page, key, &[]).await;
    assert_eq!(identity.status(), 200);
    assert_eq!(header(identity.headers(), "content-encoding"), "", "not asked: not compressed");
    let identity_tag = header(identity.headers(), "etag").to_owned();
    let plain = identity.bytes().await.expect("a body");
    assert!(plain.len() > 4_000, "{} bytes", plain.len());

    let mut tags = vec![identity_tag.clone()];
    for (accept, coding) in [
        ("gzip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("zstd;q=0.5, br;q=0.9, gzip;q=0.1", "br"),
        ("*", "zstd"),
        ("GZIP ; q=0.8, identity;q=0.1", "gzip"),
    ] {
        let resp = get(&page, key, &[("accept-encoding", accept)]).await;
        assert_eq!(resp.status(), 200, "{accept}");
        assert_eq!(header(resp.headers(), "content-encoding"), coding, "{accept}");
        assert_cache(&resp, accept, REVALIDATED, VARY);
        let tag = header(resp.headers(), "etag").to_owned();
        assert!(tag.starts_with('"') && !tag.starts_with("W/"), "{accept}: strong, {tag}");
        assert_ne!(tag, identity_tag, "{accept}: each representation its own tag");
        let body = resp.bytes().await.expect("a body");
        assert!(body.len() * 3 < plain.len(), "{accept}: {} of {} bytes", body.len(), plain.len());
        assert_eq!(decode(coding, &body), plain, "{accept}: decodes to the identity body");
        let head = send(reqwest::Method::HEAD, &page, key, &[("accept-encoding", accept)]).await;
        assert_eq!(header(head.headers(), "etag"), tag, "{accept}: HEAD, as its GET");
        assert_eq!(header(head.headers(), "content-encoding"), coding, "{accept}: HEAD");
        assert_eq!(header(head.headers(), "content-length"), body.len().to_string(), "{accept}");
        let again = get(&page, key, &[("accept-encoding", accept), ("if-none-match", &tag)]).await;
        assert_eq!(again.status(), 304, "{accept}");
        assert_eq!(header(again.headers(), "etag"), tag, "{accept}");
        assert!(again.bytes().await.expect("a body").is_empty(), "{accept}");
        tags.push(tag);
    }
    let again = get(&page, key, &[("if-none-match", &identity_tag)]).await;
    assert_eq!(again.status(), 304, "the identity representation's tag");
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 4, "identity, gzip, br and zstd: {tags:?}");

    // Nothing acceptable left, or a header that says nothing readable: identity, never a 500.
    for accept in
        ["gzip;q=0", "*;q=0", "identity", "deflate, compress", "gzip;q=abc", "gzip;q=2", ";;,"]
    {
        let resp = get(&page, key, &[("accept-encoding", accept)]).await;
        assert_eq!(resp.status(), 200, "{accept}");
        assert_eq!(header(resp.headers(), "content-encoding"), "", "{accept}");
        assert_eq!(resp.bytes().await.expect("a body"), plain, "{accept}");
    }
    // A range is not served: the whole answer, as without it.
    let ranged = get(&page, key, &[("range", "bytes=0-9"), ("accept-encoding", "gzip")]).await;
    assert_eq!(ranged.status(), 200);
    assert_eq!(header(ranged.headers(), "content-encoding"), "gzip");

    // A small answer pays nothing, unless the client refuses it unencoded.
    let small = get(&server.url("/v1/pets/1"), key, &[("accept-encoding", "gzip")]).await;
    assert_eq!(header(small.headers(), "content-encoding"), "", "under 1 KiB");
    assert_cache(&small, "getPet", REVALIDATED, VARY);
    let refused =
        get(&server.url("/v1/pets/1"), key, &[("accept-encoding", "gzip, identity;q=0")]).await;
    assert_eq!(header(refused.headers(), "content-encoding"), "gzip", "identity refused");
    let body = refused.bytes().await.expect("a body");
    let pet: serde_json::Value =
        serde_json::from_slice(&decode("gzip", &body)).expect("a JSON pet");
    assert_eq!(pet["name"], "Pet number 1");
}
