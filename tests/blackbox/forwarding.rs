//! Behind a trusted proxy, the client is the first entry of the forwarding header, read from
//! the right, that is not a trusted proxy, whatever its form: a client cannot pick its own
//! quota by writing entries to the left, or by appending a port.

use crate::harness::{Client, Db, Server};

/// The statuses of requests without a key, each with its own `X-Forwarded-For`.
async fn statuses(server: &Server, forwarded: impl Iterator<Item = String>) -> Vec<u16> {
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for value in forwarded {
        let resp = http
            .get(server.url("/v1/pets"))
            .header("x-forwarded-for", value)
            .send()
            .await
            .expect("an answer");
        statuses.push(resp.status().as_u16());
    }
    statuses
}

#[tokio::test]
async fn forged_entries_to_the_left_of_the_client_get_no_fresh_quota() {
    let db = Db::sqlite();
    let args = ["--trusted-proxy", "127.0.0.1", "--per-address-per-minute", "3"];
    let server = Server::start(&db.url, db.path().to_path_buf(), &args);
    let forged = (0..5).map(|i| format!("6.6.6.{i}, 203.0.113.7:51234"));
    assert_eq!(statuses(&server, forged).await, [401, 401, 401, 429, 429], "one client, one quota");

    let named = (0..5).map(|i| format!("7.7.7.{i}, unknown"));
    assert_eq!(statuses(&server, named).await, [401, 401, 401, 429, 429], "a name is a client too");

    // One IPv6 host holds a /64: its addresses share one quota; another /64 has its own.
    let v6 = (1..=4).map(|i| format!("[2001:db8:1:2::{i}]:443"));
    assert_eq!(statuses(&server, v6).await, [401, 401, 401, 429]);
    let other = std::iter::once("2001:db8:1:3::1".to_owned());
    assert_eq!(statuses(&server, other).await, [401]);

    // A key's own quota is untouched by any of it.
    let key = db.key("free");
    let resp = Client::new(&key).get(&server.url("/v1/pets")).await;
    assert_eq!(resp.status(), 200);
}
