//! The ceiling of `cargo xtask load`: the least a poem-openapi server with bearer
//! authentication can do for `GET /v1/pets?limit=20`. It checks the key against one fixed
//! string and answers a fixed 20-pet array, serialized per request as an operation would;
//! no storage, no rate limit, no logging. Every figure of the service is reported as a
//! ratio to this one, measured in the same run, so that figures from different machines
//! compare.
//!
//! It allocates with mimalloc, as the server does (`crates/bin/src/main.rs`): on glibc's
//! allocator the same ceiling served about 57,000 requests a second for its first seconds
//! under wrk and about 28,000 from then on, so that a ratio to it depended on when it was
//! measured (docs/benchmarks.md).
//!
//! `cargo run --release -p animal-store-api --example ceiling -- ADDRESS KEY`

use poem::listener::TcpListener;
use poem::{Route, Server};
use poem_openapi::auth::Bearer;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, OpenApiService, SecurityScheme};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The key every request must carry.
#[derive(SecurityScheme)]
#[oai(ty = "bearer", checker = "check_key")]
struct Key(());

/// The expected key, from the command line (shared: poem adds it to every request).
#[derive(Clone)]
struct Expected(std::sync::Arc<str>);

#[allow(clippy::unused_async, reason = "poem-openapi awaits its checkers")]
async fn check_key(req: &poem::Request, bearer: Bearer) -> Option<()> {
    let expected = req.data::<Expected>()?;
    (bearer.token == *expected.0).then_some(())
}

/// A pet, as the service answers it.
#[derive(Object, Clone)]
#[oai(rename_all = "camelCase")]
struct Pet {
    id: i64,
    name: String,
    category_id: i64,
    status: String,
}

struct Ceiling {
    pets: Vec<Pet>,
}

#[OpenApi]
impl Ceiling {
    /// A fixed page of 20 pets.
    #[oai(path = "/pets", method = "get")]
    #[allow(clippy::unused_async, reason = "operations are async")]
    async fn list_pets(&self, _key: Key) -> Json<Vec<Pet>> {
        Json(self.pets.clone())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(address), Some(key)) = (args.next(), args.next()) else {
        eprintln!("usage: ceiling ADDRESS KEY");
        std::process::exit(2);
    };
    let pets = (1..=20)
        .map(|id| Pet {
            id,
            name: format!("Pet {id}"),
            category_id: 7,
            status: "available".to_owned(),
        })
        .collect();
    let service = OpenApiService::new(Ceiling { pets }, "ceiling", "1");
    let app = poem::EndpointExt::data(Route::new().nest("/v1", service), Expected(key.into()));
    Server::new(TcpListener::bind(address)).run(app).await
}
