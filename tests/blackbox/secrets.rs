//! Passwords never show in what the binary prints, wherever they sit in a URL, and each
//! cause of an error is printed once, the real one kept.

use std::process::Command;

use crate::harness::BIN;

/// Runs `animal-store --database-url URL migrate` and returns its exit code and stderr.
fn migrate(url: &str) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(["--database-url", url, "migrate"])
        .env_clear()
        .output()
        .expect("the binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A port on 127.0.0.1 where nothing listens.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

#[test]
fn passwords_in_database_urls_never_show_in_errors() {
    let port = closed_port();
    for url in [
        format!("postgres://alice:S3cretPW@127.0.0.1:{port}/db"),
        format!("postgres://alice@127.0.0.1:{port}/db?password=S3cretPW"),
        "postgres://alice:S3cretPW@127.0.0.1:notaport/db".to_owned(),
        "mysql://alice:S3cretPW@127.0.0.1/db".to_owned(),
        "redis://:S3cretPW@127.0.0.1:6379".to_owned(),
    ] {
        let (code, stderr) = migrate(&url);
        assert_eq!(code, Some(2), "{url}: {stderr}");
        assert!(!stderr.contains("S3cretPW"), "{url}: the password shows: {stderr}");
        assert!(stderr.contains("***"), "{url}: the URL is shown, masked: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert_eq!(stderr.matches("cannot open the database").count(), 1, "once: {stderr}");
    }
}

#[test]
fn a_refused_connection_says_so() {
    let (code, stderr) = migrate(&format!("postgres://alice:pw@127.0.0.1:{}/db", closed_port()));
    assert_eq!(code, Some(2));
    assert!(stderr.to_lowercase().contains("refused"), "the real cause: {stderr}");
    assert!(!stderr.contains("pool timed out"), "{stderr}");
}
