//! Faults never lock a client out: a request whose key cannot be checked is answered 503 and
//! counted against nothing, so an outage of the key store lasts as long as it lasts and not a
//! second longer, and leaves the client address's quota as it found it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::harness::{Client, Db, Server, json};
use crate::relay::{Relay, postgres_address};

/// A key of the right shape that no server issued.
const WRONG_KEY: &str = "as_live_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

// Two workers: the relay's tasks run while the harness waits for the server to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_a_503_while_it_lasts_and_never_spends_the_address_quota() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let key = db.unlimited_key();
    let relay = Relay::to(postgres_address(&db.url)).await;
    // A small per-address quota: counted against the address, the outage would spend it in
    // a tenth of a second.
    let server = Server::start(
        &relay.postgres_url(&db.url),
        db.path().to_path_buf(),
        &["--per-address-per-minute", "5"],
    );
    let client = Client::new(&key);
    let pets = server.url("/v1/pets?limit=1");
    assert_eq!(client.get(&pets).await.status(), 200);

    relay.cut();
    // Three times as long as a key stays cached: every lookup meets the outage.
    let mut statuses = BTreeMap::new();
    let ends = Instant::now() + Duration::from_secs(3);
    while Instant::now() < ends {
        let resp = client.get(&pets).await;
        let status = resp.status().as_u16();
        *statuses.entry(status).or_insert(0_u32) += 1;
        if status == 503 {
            assert!(resp.headers().contains_key("retry-after"), "a 503 says when to retry");
            assert_eq!(json(resp).await["code"], "service_unavailable");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        statuses.keys().copied().collect::<Vec<_>>(),
        [503],
        "every answer during the outage is 503: {statuses:?}"
    );

    relay.mend();
    let mended = Instant::now();
    loop {
        let status = client.get(&pets).await.status().as_u16();
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "only 503 until the database is back");
        assert!(mended.elapsed() < Duration::from_secs(5), "no 200 within 5 s of the outage");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for i in 0..20 {
        assert_eq!(client.get(&pets).await.status(), 200, "request {i} after the outage");
    }

    // The address's quota is whole: the outage spent none of it.
    let wrong = Client::new(WRONG_KEY);
    for i in 0..5 {
        assert_eq!(wrong.get(&pets).await.status(), 401, "wrong guess {i} is within the quota");
    }
    assert_eq!(wrong.get(&pets).await.status(), 429, "the sixth is over it");
}
