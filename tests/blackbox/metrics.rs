//! `/metrics` of the real binary: counts by route and status after known traffic, the
//! histogram's buckets, labels that never hold a key, a path or an address, and a series
//! count that clients cannot grow.

// Counts are whole numbers, exact in an f64.
#![allow(clippy::float_cmp)]

use std::collections::BTreeMap;

use crate::harness::{Client, Db, Server};

/// The samples of an exposition, by series (name and labels as written).
fn samples(exposition: &str) -> BTreeMap<String, f64> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample");
            (series.to_owned(), value.parse().expect("a number"))
        })
        .collect()
}

async fn scrape(server: &Server) -> String {
    let resp = reqwest::get(server.url("/metrics")).await.expect("an answer");
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/plain; version=0.0.4")
    );
    assert!(!resp.headers().contains_key("x-ratelimit-limit"), "never rate limited");
    resp.text().await.expect("the exposition")
}

fn duration_count(samples: &BTreeMap<String, f64>, method: &str, route: &str, status: u16) -> f64 {
    let series = format!(
        "http_server_request_duration_seconds_count{{http_request_method=\"{method}\",http_route=\"{route}\",http_response_status_code=\"{status}\"}}"
    );
    samples.get(&series).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn known_traffic_is_counted_by_route_and_status_with_buckets() {
    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let client = Client::new(&key);
    for _ in 0..3 {
        assert_eq!(client.get(&server.url("/v1/pets")).await.status(), 200);
    }
    for _ in 0..2 {
        let resp = client.post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":1}"#).await;
        assert_eq!(resp.status(), 201);
    }
    assert_eq!(client.post(&server.url("/v1/pets"), r#"{"name":""}"#).await.status(), 400);
    assert_eq!(client.get(&server.url("/v1/pets/987654")).await.status(), 404);
    for _ in 0..2 {
        let resp = reqwest::get(server.url("/v1/pets")).await.expect("an answer");
        assert_eq!(resp.status(), 401);
    }

    let exposition = scrape(&server).await;
    let samples = samples(&exposition);
    assert_eq!(duration_count(&samples, "GET", "/v1/pets", 200), 3.0, "{exposition}");
    assert_eq!(duration_count(&samples, "POST", "/v1/pets", 201), 2.0);
    assert_eq!(duration_count(&samples, "POST", "/v1/pets", 400), 1.0);
    assert_eq!(duration_count(&samples, "GET", "/v1/pets/{petId}", 404), 1.0);
    assert_eq!(duration_count(&samples, "GET", "/v1/pets", 401), 2.0);

    // The buckets of one series: OpenTelemetry's boundaries, cumulative, +Inf the count.
    let prefix = "http_server_request_duration_seconds_bucket{http_request_method=\"GET\",http_route=\"/v1/pets\",http_response_status_code=\"200\",le=";
    let buckets: Vec<(String, f64)> = samples
        .iter()
        .filter_map(|(series, value)| {
            series
                .strip_prefix(prefix)
                .map(|le| (le.trim_end_matches('}').replace('"', ""), *value))
        })
        .collect();
    let mut bounds: Vec<&str> = buckets.iter().map(|(le, _)| le.as_str()).collect();
    bounds.sort_by(|a, b| {
        let number = |s: &str| if s == "+Inf" { f64::INFINITY } else { s.parse::<f64>().unwrap() };
        number(a).total_cmp(&number(b))
    });
    assert_eq!(
        bounds,
        [
            "0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5", "0.75", "1", "2.5",
            "5", "7.5", "10", "+Inf"
        ]
    );
    let by_bound: BTreeMap<&str, f64> = buckets.iter().map(|(le, v)| (le.as_str(), *v)).collect();
    let mut previous = 0.0;
    for bound in &bounds {
        assert!(by_bound[bound] >= previous, "cumulative at {bound}");
        previous = by_bound[bound];
    }
    assert_eq!(by_bound["+Inf"], 3.0);

    assert_eq!(samples["animal_store_rate_limit_decisions_total{outcome=\"admitted\"}"], 9.0);
    assert!(samples.contains_key("http_server_active_requests{http_request_method=\"GET\"}"));
    // The creates, and the key's `last_used` bookkeeping.
    assert!(samples["animal_store_pet_write_batch_size_count"] >= 2.0);
    assert!(samples["animal_store_rate_limiter_subjects"] >= 2.0, "the key and the address");
    assert!(samples.contains_key("animal_store_db_pool_connections{state=\"idle\"}"));
    assert!(samples["process_resident_memory_bytes"] > 1_000_000.0);
    assert!(samples["process_open_fds"] > 3.0);
    assert!(samples.contains_key("process_cpu_seconds_total"));

    // Nothing of the caller in any label.
    let key_id = key.split('_').nth(2).expect("a key id");
    for secret in [key.as_str(), key_id, "127.0.0.1", "987654"] {
        assert!(!exposition.contains(secret), "{secret:?} appears in the metrics");
    }
}

#[tokio::test]
async fn a_thousand_unknown_paths_add_no_series() {
    let db = Db::sqlite();
    let server =
        Server::start(&db.url, db.path().to_path_buf(), &["--per-address-per-minute", "100000"]);
    let http = reqwest::Client::new();
    // One of each kind first: an unknown path, an unknown method, a scrape.
    let unknown = |i: usize| server.url(&format!("/v1/nothing/{i}/here?x={i}"));
    assert_eq!(http.get(unknown(0)).send().await.expect("an answer").status(), 404);
    let purge = reqwest::Method::from_bytes(b"PURGE").expect("a method");
    http.request(purge.clone(), unknown(0)).send().await.expect("an answer");
    scrape(&server).await;
    let before = samples(&scrape(&server).await);

    for i in 1..=1_000 {
        let method = if i % 10 == 0 { purge.clone() } else { reqwest::Method::GET };
        let resp = http.request(method, unknown(i)).send().await.expect("an answer");
        assert!(resp.status().is_client_error());
    }
    let after = samples(&scrape(&server).await);
    let added: Vec<&String> = after.keys().filter(|series| !before.contains_key(*series)).collect();
    assert!(added.is_empty(), "new series: {added:#?}");
    assert_eq!(before.len(), after.len());
    let unmatched = "http_server_request_duration_seconds_count{http_request_method=\"GET\",http_response_status_code=\"404\"}";
    assert_eq!(after[unmatched] - before[unmatched], 900.0, "all counted, in one series");
}

#[tokio::test]
async fn metrics_can_be_turned_off() {
    let db = Db::sqlite();
    let server = Server::start(&db.url, db.path().to_path_buf(), &["--metrics", "false"]);
    let resp = reqwest::get(server.url("/metrics")).await.expect("an answer");
    assert_eq!(resp.status(), 404);
    let body: serde_json::Value = resp.json().await.expect("the Error body");
    assert_eq!(body["code"], "not_found");
}
