//! The time of one request through the whole app, in process: the layers, the operation,
//! the stores and the body, with the service's log lines formatted (to a sink) as `serve`
//! formats them; on memory stores, then with the pets on SQLite. No network: what is left is
//! the request path itself, so that a change to it shows here within a few percent, where a
//! load run's noise would hide it. Compare two versions with criterion's baselines:
//!
//! `cargo bench -p animal-store --bench request_path -- --save-baseline before`, change,
//! then `cargo bench -p animal-store --bench request_path -- --baseline before`.

#![expect(missing_docs, reason = "criterion's macros generate undocumented functions")]

use animal_store::testkit::TestKit;
use common::{get, seeded};

// As the server allocates (`crates/bin/src/main.rs`): a profile of the request path on
// another allocator is a profile of that allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
mod common;

use std::sync::Arc;

use animal_store_infra::Database;
use poem::endpoint::BoxEndpoint;
use poem::{Endpoint, Request, Response};

fn requests(c: &mut Criterion) {
    // As `serve` logs, in its text format, to a sink.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(std::io::sink)
        .with_ansi(false)
        .init();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let (database, memory, sqlite) = runtime.block_on(async {
        let database = Database::connect(&url).await.expect("an SQLite database");
        database.migrate().await.expect("migrated");
        let memory = seeded(TestKit::new()).await;
        let sqlite = seeded(TestKit::new().with_pets(Arc::new(database.pets()))).await;
        (database, memory, sqlite)
    });
    let mut group = c.benchmark_group("request");
    let mut run = |name: &str,
                   (endpoint, key): &(BoxEndpoint<'static, Response>, String),
                   request: &dyn Fn(&str, u64) -> Request| {
        let mut n = 0;
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    n += 1;
                    request(key, n)
                },
                |request| {
                    runtime.block_on(async {
                        let response = endpoint.get_response(request).await;
                        assert!(response.status().is_success(), "{}", response.status());
                        response.into_body().into_bytes().await
                    })
                },
                BatchSize::SmallInput,
            );
        });
    };
    let list = |key: &str, _| get("/v1/pets?limit=20", key);
    let one = |key: &str, n| get(&format!("/v1/pets/{}", n % 2_000 + 1), key);
    let hundred = |key: &str, _| get("/v1/pets?limit=100", key);
    let coded = |coding: &'static str| {
        move |key: &str, _| {
            let mut request = get("/v1/pets?limit=100", key);
            let value = poem::http::HeaderValue::from_static(coding);
            request.headers_mut().insert(poem::http::header::ACCEPT_ENCODING, value);
            request
        }
    };
    run("listPets (20 of 2,000), memory", &memory, &list);
    run("getPet, memory", &memory, &one);
    run("listPets (100 of 2,000), memory", &memory, &hundred);
    for coding in ["gzip", "br", "zstd"] {
        run(&format!("listPets (100 of 2,000) in {coding}, memory"), &memory, &coded(coding));
    }
    run("listPets (20 of 2,000), SQLite", &sqlite, &list);
    run("getPet, SQLite", &sqlite, &one);
    group.finish();
    drop((memory, sqlite));
    runtime.block_on(database.close());
}

criterion_group!(benches, requests);
criterion_main!(benches);
