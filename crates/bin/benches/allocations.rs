//! Allocations per request: the app wired as `serve` wires it (the test kit, memory stores),
//! called in process for `listPets`, `getPet`, `createPet` and keyed `createPet`. Each
//! request is built before counting starts and its body read after it ends, so the figures
//! are the service's own: the layers, the operation, the stores and the body. Printed as a
//! table; docs/benchmarks.md keeps it.
//!
//! `cargo bench -p animal-store --bench allocations`

mod common;

use std::alloc::System;

use animal_store::testkit::TestKit;
use common::{get, post, seeded};
use poem::{Endpoint, Request};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Requests counted per operation, after as many to warm up.
const REQUESTS: usize = 1_000;

/// One operation's request, the `n`th of its run.
struct Scenario {
    name: &'static str,
    request: fn(key: &str, n: usize) -> Request,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario { name: "listPets (20 of 2,000)", request: |key, _| get("/v1/pets?limit=20", key) },
    Scenario { name: "getPet", request: |key, n| get(&format!("/v1/pets/{}", n % 2_000 + 1), key) },
    Scenario { name: "createPet", request: |key, _| post(key, None) },
    Scenario {
        name: "createPet with an Idempotency-Key",
        request: |key, n| post(key, Some(format!("bench-{n}"))),
    },
];

fn main() {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let (endpoint, key) = seeded(TestKit::new()).await;
        println!("| operation | allocations per request | bytes allocated per request |");
        println!("|---|---|---|");
        for scenario in SCENARIOS {
            let mut counted = (0, 0);
            for round in 0..2 {
                for n in 0..REQUESTS {
                    let request = (scenario.request)(&key, round * REQUESTS + n);
                    let region = Region::new(GLOBAL);
                    let response = endpoint.get_response(request).await;
                    let change = region.change();
                    assert!(
                        response.status().is_success(),
                        "{}: {}",
                        scenario.name,
                        response.status()
                    );
                    let _body = response.into_body().into_bytes().await;
                    if round == 1 {
                        counted.0 += change.allocations + change.reallocations;
                        counted.1 += change.bytes_allocated;
                    }
                }
            }
            println!("| {} | {} | {} |", scenario.name, counted.0 / REQUESTS, counted.1 / REQUESTS);
        }
    });
}
