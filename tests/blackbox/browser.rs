//! The docs page in a real browser: headless Chromium, driven through `chromedriver` (the
//! W3C `WebDriver` protocol), opens `/v1/docs`, authorizes with a key, runs "Try it out" on `listPets`, and
//! the response shows the animal the server holds: the page calls the server that served it.
//!
//! Needs Debian's `chromium` and `chromium-driver`; `cargo xtask ci` installs them as root
//! and sets `ANIMAL_STORE_REQUIRE_BROWSER`, which turns a missing browser into a failure
//! rather than a skip.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use serde_json::json;

use crate::harness::{Client, Db};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const REQUIRE: &str = "ANIMAL_STORE_REQUIRE_BROWSER";

/// `chromedriver` on a free port of 127.0.0.1, stopped on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        // Owned at once, so that a failure below stops it.
        let driver = Self { child, url: format!("http://127.0.0.1:{port}") };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return driver;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not listen within 10 s");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Headless Chromium with a profile of its own in `profile`, and no background traffic.
async fn browser(driver: &Driver, profile: &Path) -> Browser {
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,2000",
        &format!("--user-data-dir={}", profile.display()),
    ];
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".to_owned(), json!({"binary": CHROMIUM, "args": args}));
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

/// Clicks the first element `css` finds, waiting up to 10 s for it.
async fn click(browser: &Browser, css: &str) {
    let element = browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    element.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
}

/// The text of the first element `css` finds once it contains `expected`, within 10 s.
async fn text_containing(browser: &Browser, css: &str, expected: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(element) = browser.find(Locator::Css(css)).await {
            last = element.text().await.unwrap_or_default();
            if last.contains(expected) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{css} did not show {expected:?} within 10 s; it showed {last:?}");
}

#[tokio::test]
async fn try_it_out_on_the_docs_page_calls_the_server_that_served_it() {
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        assert!(std::env::var_os(REQUIRE).is_none(), "{REQUIRE} is set but Chromium is missing");
        eprintln!("skipped: no {CHROMIUM} and {CHROMEDRIVER} (Debian's chromium, chromium-driver)");
        return;
    }
    let db = Db::sqlite();
    let key = db.key("business");
    let server = db.start();
    let client = Client::new(&key);
    let created =
        client.post(&server.url("/v1/pets"), r#"{"name":"Browser Rex","categoryId":7}"#).await;
    assert_eq!(created.status(), 201);

    let driver = Driver::start().await;
    let profile = tempfile::tempdir().expect("a profile directory");
    let browser = browser(&driver, profile.path()).await;
    browser.goto(&server.url("/v1/docs")).await.expect("the docs page opens");
    let servers = text_containing(&browser, ".servers", "/v1").await;
    assert!(servers.starts_with("/v1"), "the page's own server comes first: {servers:?}");

    click(&browser, "button.authorize").await;
    let field = browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(".modal-ux input"))
        .await
        .expect("the key's field");
    field.send_keys(&key).await.expect("type the key");
    click(&browser, ".modal-ux .auth-btn-wrapper button.authorize").await;
    click(&browser, ".modal-ux button.btn-done").await;

    click(&browser, "#operations-animals-listPets .opblock-summary").await;
    click(&browser, "#operations-animals-listPets .try-out__btn").await;
    click(&browser, "#operations-animals-listPets .execute").await;
    let status = text_containing(
        &browser,
        "#operations-animals-listPets .live-responses-table tr.response .response-col_status",
        "200",
    )
    .await;
    assert!(status.starts_with("200"), "{status}");
    let body = text_containing(
        &browser,
        "#operations-animals-listPets .live-responses-table tr.response .response-col_description",
        "Browser Rex",
    )
    .await;
    assert!(body.contains("\"categoryId\": 7"), "{body}");

    let shot = browser.screenshot().await.expect("a screenshot");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(dir.join("docs-page-try-it-out.png"), shot).expect("save the screenshot");
    browser.close().await.expect("close the browser");
}
