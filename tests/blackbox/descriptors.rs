//! Out of file descriptors: the connection cap, derived from the descriptor limit, refuses
//! first; and where the operator set it higher, the server backs off instead of spinning,
//! says so once, and serves again when connections close.

use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{Db, Server};

/// The CPU time the process has used so far, in clock ticks (100 a second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process's stat");
    // The fields after the command name, which is in parentheses: utime and stime are the
    // 14th and 15th fields of the line.
    let after = stat.rsplit_once(')').expect("a command name").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

fn open_idle(server: &Server, count: usize) -> Vec<TcpStream> {
    let address = server.base.trim_start_matches("http://").to_owned();
    (0..count).filter_map(|_| TcpStream::connect(&address).ok()).collect()
}

async fn serves(server: &Server) -> bool {
    let client =
        reqwest::Client::builder().timeout(Duration::from_secs(3)).build().expect("a client");
    client.get(server.url("/livez")).send().await.is_ok_and(|r| r.status() == 200)
}

#[tokio::test]
async fn the_derived_cap_refuses_before_the_kernel_does() {
    let db = Db::sqlite();
    let server = Server::start_with_descriptors(&db.url, db.path().to_path_buf(), &[], 128);
    let cap: usize = server.stderr_line(|line| {
        line.contains("connection cap")
            .then(|| line.split("max_connections=").nth(1)?.split_whitespace().next()?.parse().ok())
            .flatten()
    });
    assert_eq!(cap, 64, "the descriptor limit, 128, less what the process needs");
    let mut idle = open_idle(&server, cap);
    assert_eq!(idle.len(), cap);
    // One more: the cap's 503, not a kernel refusal or a silent wait.
    let mut over = open_idle(&server, 1).pop().expect("a connection");
    over.set_read_timeout(Some(Duration::from_secs(5))).expect("a timeout");
    let mut answer = String::new();
    let _ = over.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(!server.stderr_contains("out of file descriptors"));
    idle.clear();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(serves(&server).await, "serves again once connections close");
}

#[tokio::test]
async fn out_of_descriptors_the_server_backs_off_says_so_once_and_recovers() {
    let db = Db::sqlite();
    let args = ["--max-connections", "1000"];
    let server = Server::start_with_descriptors(&db.url, db.path().to_path_buf(), &args, 128);
    let mut idle = open_idle(&server, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = cpu_ticks(server.pid());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let used = cpu_ticks(server.pid()) - before;
    assert!(used < 20, "under a tenth of a core while exhausted: {used} ticks in 2 s");
    server.stderr_line(|line| line.contains("out of file descriptors").then_some(()));
    assert_eq!(server.stderr_count("out of file descriptors"), 1, "logged once per episode");

    idle.clear();
    let mut recovered = false;
    for _ in 0..50 {
        if serves(&server).await {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "serves again once connections close");
    server.stderr_line(|line| line.contains("accepting connections again").then_some(()));
}
