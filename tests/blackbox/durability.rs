//! What survives a restart and a crash.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Client, Db, json, list_all};

async fn restart_keeps_the_data(db: &Db) {
    let key = db.key("business");
    let client = Client::new(&key);
    let server = db.start();
    let rex = json(
        client
            .post(&server.url("/v1/pets"), r#"{"name":"Rex","categoryId":2,"status":"sold"}"#)
            .await,
    )
    .await;
    assert!(server.stop());
    let server = db.start();
    let listed = json(client.get(&server.url("/v1/pets")).await).await;
    assert_eq!(listed, serde_json::json!([rex]));
    let next =
        json(client.post(&server.url("/v1/pets"), r#"{"name":"Max","categoryId":2}"#).await).await;
    assert!(next["id"].as_i64() > rex["id"].as_i64(), "ids go on growing");
}

#[tokio::test]
async fn a_restart_keeps_the_data_on_sqlite() {
    restart_keeps_the_data(&Db::sqlite()).await;
}

#[tokio::test]
async fn a_restart_keeps_the_data_on_postgres() {
    if let Some(db) = Db::postgres().await {
        restart_keeps_the_data(&db).await;
    }
}

/// Clients write as fast as they can; the server is killed with SIGKILL in the middle.
/// Every pet acknowledged with a 201 must be there, exactly, after the restart.
#[tokio::test]
async fn every_acknowledged_pet_survives_kill_9() {
    let db = Db::sqlite();
    let key = db.key("business");
    let server = db.start();
    let base = server.base.clone();
    let acknowledged: Arc<Mutex<BTreeMap<i64, Value>>> = Arc::default();

    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (client, base, acknowledged) =
                (Client::new(&key), base.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for i in 0..2_000 {
                    let body = format!(r#"{{"name":"writer {w} pet {i}","categoryId":{}}}"#, w + 1);
                    let Ok(resp) = client
                        .raw()
                        .post(format!("{base}/v1/pets"))
                        .bearer_auth(client.key())
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                    else {
                        return;
                    };
                    if resp.status() != 201 {
                        return;
                    }
                    let Ok(pet) = resp.json::<Value>().await else {
                        return;
                    };
                    let id = pet["id"].as_i64().expect("an id");
                    acknowledged.lock().expect("lock").insert(id, pet);
                }
            })
        })
        .collect();

    // Let a good number of writes land, then pull the plug.
    for _ in 0..200 {
        if acknowledged.lock().expect("lock").len() >= 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    server.kill();
    for writer in writers {
        writer.await.expect("a writer");
    }
    let acknowledged = acknowledged.lock().expect("lock").clone();
    assert!(acknowledged.len() >= 100, "only {} writes were acknowledged", acknowledged.len());

    let server = db.start();
    let stored = list_all(&Client::new(&key), &server).await;
    for (id, pet) in &acknowledged {
        assert_eq!(stored.get(id), Some(pet), "acknowledged pet {id} is lost or changed");
    }
}

/// A request under way when SIGTERM arrives is answered, and stored, before the server
/// exits.
#[tokio::test]
async fn sigterm_lets_an_in_flight_request_finish() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let db = Db::sqlite();
    let key = db.key("free");
    let server = db.start();
    let addr = server.base.trim_start_matches("http://").to_owned();
    let body = r#"{"name":"Late","categoryId":3}"#;
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write the head");
    stream.write_all(&body.as_bytes()[..5]).await.expect("write part of the body");
    stream.flush().await.expect("flush");
    tokio::time::sleep(Duration::from_millis(200)).await;

    let pid = server.pid();
    let status = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    assert!(status.is_ok_and(|s| s.success()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(&body.as_bytes()[5..]).await.expect("the connection is still open");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .expect("an answer within 10 s")
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(server.wait(), "the server then exits cleanly");

    let server = db.start();
    let all = json(Client::new(&key).get(&server.url("/v1/pets")).await).await;
    assert_eq!(all[0]["name"], "Late", "the in-flight pet was stored");
}
