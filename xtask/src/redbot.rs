//! `cargo xtask redbot`: the HTTP linter `redbot` (from the Python Package Index) on the
//! answers of a server started for it: listPets, listOrders, getOrder, getPet, a 404, a 429,
//! createPet's 201, getRateLimit, the document and the docs page, each with a key, and
//! `/livez`. Any note `redbot` marks bad, and any warning in its caching category, fails the
//! task.
//!
//! `redbot` is installed on first use into a virtual environment under `target/tools`, as
//! `openapi-spec-validator` is. Each answer is checked by `xtask/redbot_check.py` in a
//! process of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cmd;
use crate::system::MemoryServer;

const REDBOT: &str = "redbot==2.7.1";

/// Keys, pets and an order for the answers to check: `shop` has room, `tight` one request a
/// minute (its second is the 429).
const FIXTURES: &str = r#"{
  "keys": [{"name": "shop", "plan": "enterprise", "perMinute": 1000, "perDay": 10000},
           {"name": "tight", "plan": "enterprise", "perMinute": 1, "perDay": 10000}],
  "pets": [{"name": "Rex", "categoryId": 1}, {"name": "Mia", "categoryId": 2},
           {"name": "Tom", "categoryId": 3}, {"name": "Bella", "categoryId": 4},
           {"name": "Max", "categoryId": 5}, {"name": "Luna", "categoryId": 6},
           {"name": "Oscar", "categoryId": 7}, {"name": "Coco", "categoryId": 1},
           {"name": "Milo", "categoryId": 2}, {"name": "Daisy", "categoryId": 3},
           {"name": "Rocky", "categoryId": 4}, {"name": "Lola", "categoryId": 5},
           {"name": "Buddy", "categoryId": 6}, {"name": "Nala", "categoryId": 7},
           {"name": "Simba", "categoryId": 1}, {"name": "Zoe", "categoryId": 2},
           {"name": "Leo", "categoryId": 3}, {"name": "Ruby", "categoryId": 4},
           {"name": "Jack", "categoryId": 5}, {"name": "Lily", "categoryId": 6}],
  "orders": [{"key": "shop", "petId": 1, "status": "placed"}]
}"#;

/// One answer to check: what, the request, and the key that makes it (`None`: no key).
struct Check {
    what: &'static str,
    method: &'static str,
    path: &'static str,
    key: Option<&'static str>,
    body: Option<&'static str>,
}

const CHECKS: [Check; 11] = [
    Check { what: "listPets", method: "GET", path: "/v1/pets", key: Some("shop"), body: None },
    Check { what: "getPet", method: "GET", path: "/v1/pets/2", key: Some("shop"), body: None },
    Check { what: "a 404", method: "GET", path: "/v1/pets/9999", key: Some("shop"), body: None },
    Check { what: "a 429", method: "GET", path: "/v1/pets", key: Some("tight"), body: None },
    Check {
        what: "createPet's 201",
        method: "POST",
        path: "/v1/pets",
        key: Some("shop"),
        body: Some(r#"{"name":"Rex","categoryId":1}"#),
    },
    Check {
        what: "listOrders",
        method: "GET",
        path: "/v1/store/orders",
        key: Some("shop"),
        body: None,
    },
    Check {
        what: "getOrder",
        method: "GET",
        path: "/v1/store/orders/1",
        key: Some("shop"),
        body: None,
    },
    Check {
        what: "getRateLimit",
        method: "GET",
        path: "/v1/rate_limit",
        key: Some("shop"),
        body: None,
    },
    Check {
        what: "the document",
        method: "GET",
        path: "/v1/openapi.json",
        key: Some("shop"),
        body: None,
    },
    Check { what: "the docs page", method: "GET", path: "/v1/docs", key: Some("shop"), body: None },
    Check { what: "/livez", method: "GET", path: "/livez", key: None, body: None },
];

/// Installs `redbot` if needed and returns the virtual environment's Python.
fn ensure(root: &Path) -> Result<PathBuf> {
    Ok(crate::python::tools(root, "redbot", &[REDBOT])?.join("bin/python"))
}

/// Checks every answer of [`CHECKS`] on the test build of the server (the binary the
/// workspace's tests run, so that after `cargo xtask ci`'s tests nothing is built) and
/// fails on a bad note or a caching warning.
pub fn run(root: &Path) -> Result<()> {
    let python = ensure(root)?;
    cmd::header("cargo build --workspace --tests");
    cmd::run(cmd::cargo(root).args(["build", "--workspace", "--tests"]))?;
    let server = MemoryServer::start(root, FIXTURES)?;
    let base = server.base.clone();
    // The tight key's one request of the minute, so that the next is the 429.
    spend(&base, &server.key("tight")?)?;
    let mut failed = Vec::new();
    for check in &CHECKS {
        let mut headers = Vec::new();
        if let Some(name) = check.key {
            let key = server.key(name)?;
            headers.push(["Authorization".to_owned(), format!("Bearer {key}")]);
        }
        if check.body.is_some() {
            headers.push(["Content-Type".to_owned(), "application/json".to_owned()]);
        }
        let mut command = Command::new(&python);
        command
            .arg(root.join("xtask/redbot_check.py"))
            .arg(format!("{base}{}", check.path))
            .arg(check.method)
            .arg(serde_json::to_string(&headers)?);
        if let Some(body) = check.body {
            command.arg(body);
        }
        let out = cmd::run_quiet(&mut command)
            .with_context(|| format!("REDbot could not check {}", check.what))?;
        let problems = problems(check.what, &String::from_utf8_lossy(&out.stdout))?;
        failed.extend(problems);
    }
    if failed.is_empty() {
        println!("REDbot: no bad note and no caching warning in {} answers", CHECKS.len());
        Ok(())
    } else {
        bail!("REDbot found {} problem(s):\n{}", failed.len(), failed.join("\n"))
    }
}

/// The notes of one check's output that fail it, each as a line; prints every note that
/// is not good.
fn problems(what: &str, output: &str) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut status = None;
    for line in output.lines().filter(|line| !line.trim().is_empty()) {
        let note: Value = serde_json::from_str(line)
            .with_context(|| format!("{what}: REDbot printed {line:?}"))?;
        if let Some(code) = note["status"].as_str() {
            status = Some(code.to_owned());
            continue;
        }
        let (level, category) = (note["level"].as_str(), note["category"].as_str());
        let text = format!(
            "{what}: {} {} {}: {}",
            level.unwrap_or("?"),
            category.unwrap_or("?"),
            note["name"].as_str().unwrap_or("?"),
            note["summary"].as_str().unwrap_or("?"),
        );
        if level != Some("good") {
            println!("  {text}");
        }
        if level == Some("bad") || (level == Some("warning") && category == Some("CACHING")) {
            problems.push(text);
        }
    }
    println!("{what}: {}", status.as_deref().unwrap_or("no answer"));
    Ok(problems)
}

/// One `GET /v1/pets` with `key`.
fn spend(base: &str, key: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let request = reqwest::Client::new().get(format!("{base}/v1/pets")).bearer_auth(key).send();
    let status = runtime.block_on(request)?.status();
    if !status.is_success() {
        bail!("spending the tight key's minute: {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::problems;

    #[test]
    fn bad_notes_and_caching_warnings_fail_and_nothing_else_does() {
        let output = [
            r#"{"status": "200"}"#,
            r#"{"level": "good", "category": "CACHING", "name": "A", "summary": "a"}"#,
            r#"{"level": "warning", "category": "GENERAL", "name": "B", "summary": "b"}"#,
            r#"{"level": "info", "category": "CACHING", "name": "C", "summary": "c"}"#,
        ]
        .join("\n");
        assert!(problems("ok", &output).expect("read").is_empty());
        let caching = r#"{"level": "warning", "category": "CACHING", "name": "FRESHNESS_HEURISTIC", "summary": "d"}"#;
        let bad = r#"{"level": "bad", "category": "GENERAL", "name": "E", "summary": "e"}"#;
        let found = problems("x", &format!("{output}\n{caching}\n{bad}")).expect("read");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("FRESHNESS_HEURISTIC"), "{found:?}");
        assert!(problems("x", "not json").is_err());
    }
}
