//! A suspended key stays suspended however many new client addresses press on the limiter's
//! capacity: addresses never push keys out of their counters.

use futures_util::future::join_all;

use crate::harness::{Client, Db, Server, TestClock, json};

/// The time of the server's clock file, which stands still: the minute's window never turns
/// between the key's 60th request and its 61st.
const NOW: u64 = 1_795_305_605;

async fn suspended_key_survives_a_flood_of_addresses(limiter: &str, capacity: &str) {
    let db = Db::sqlite();
    let key = db.key("free");
    let args = [
        "--rate-limiter",
        limiter,
        "--limiter-capacity",
        capacity,
        "--suspend-after",
        "0",
        "--trusted-proxy",
        "127.0.0.1",
    ];
    let clock = TestClock::at(db.path(), NOW);
    let server =
        Server::start(&db.url, db.path().to_path_buf(), &[&args[..], &clock.flag()].concat());
    let client = Client::new(&key);
    let pets = server.url("/v1/pets");
    for _ in 0..60 {
        assert_eq!(client.get(&pets).await.status(), 200);
    }
    assert_eq!(client.get(&pets).await.status(), 429, "limited");
    let suspended = client.get(&pets).await;
    assert_eq!(json(suspended).await["code"], "api_key_suspended");

    // 2,000 requests without a key, each from a new address.
    let http = reqwest::Client::new();
    for batch in 0..50_u32 {
        let requests = (0..40_u32).map(|i| {
            let address = format!("10.{}.{}.{}", batch, i, (batch * 40 + i) % 250);
            http.get(&pets).header("x-forwarded-for", address).send()
        });
        for resp in join_all(requests).await {
            let status = resp.expect("an answer").status().as_u16();
            assert!(status == 401 || status == 429, "{status}");
        }
    }
    let after = client.get(&pets).await;
    assert_eq!(after.status(), 429);
    assert_eq!(json(after).await["code"], "api_key_suspended", "{limiter}: still suspended");
}

#[tokio::test]
async fn the_moka_limiter_keeps_a_suspension_under_pressure() {
    suspended_key_survives_a_flood_of_addresses("moka", "64").await;
}

/// `memory`, the name of the in-process limiter before it was moka's, still names it.
#[tokio::test]
async fn the_in_process_limiter_answers_to_its_former_name() {
    suspended_key_survives_a_flood_of_addresses("memory", "640").await;
}
