//! Running `wrk` and reading its report.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cmd, system};

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The server's CPU a request, in microseconds (see [`on_server`]); 0 when not measured.
    pub cpu_us: f64,
}

/// Runs `measure`, a run of wrk for `seconds` against the server whose process is `pid`,
/// and adds to its figures the server's CPU a request: its user and system time over the
/// run, read from `/proc`, over the requests it answered. Two shared cores move the rates
/// from one run to the next; the CPU a request moves least.
pub fn on_server(
    pid: u32,
    seconds: u32,
    measure: impl FnOnce() -> Result<Figures>,
) -> Result<Figures> {
    let before = cpu_seconds(pid)?;
    let mut figures = measure()?;
    let spent = cpu_seconds(pid)? - before;
    let requests = figures.requests_per_second * f64::from(seconds);
    figures.cpu_us = if requests > 0.0 { spent * 1e6 / requests } else { 0.0 };
    Ok(figures)
}

/// The user and system time process `pid` has spent, in seconds: fields 14 and 15 of
/// `/proc/PID/stat`, in clock ticks of 1/100 s (Linux's `USER_HZ` on every architecture it
/// runs on here).
fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name, in parentheses, may hold spaces: count the fields after it.
    let fields: Vec<&str> =
        stat.rsplit_once(')').context("a stat line")?.1.split_whitespace().collect();
    let ticks = |n: usize| -> Result<f64> {
        Ok(fields.get(n).context("a short stat line")?.parse::<f64>()?)
    };
    // Fields 14 and 15 of the line are the 12th and 13th after the name (field 2).
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

/// How many threads wrk runs: one for the figures the budgets judge, so that wrk and the
/// server each have one of the two cores; two for the figure beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    One,
    Two,
}

/// Runs wrk (2 threads, 32 connections, `seconds`) against `url` with the `Authorization`
/// header and an optional Lua script, and reads its report.
pub fn measure(url: &str, auth: &str, script: Option<&Path>, seconds: u32) -> Result<Figures> {
    measure_with(Threads::Two, url, auth, script, seconds)
}

/// [`measure`] with wrk on `threads` threads.
pub fn measure_with(
    threads: Threads,
    url: &str,
    auth: &str,
    script: Option<&Path>,
    seconds: u32,
) -> Result<Figures> {
    let duration = format!("{seconds}s");
    let threads = match threads {
        Threads::One => "-t1",
        Threads::Two => "-t2",
    };
    let mut command = Command::new("wrk");
    command.args([threads, "-c32", "-d", &duration, "--latency", "-H", auth]);
    if let Some(script) = script {
        command.arg("-s").arg(script);
    }
    command.arg(url);
    let output = cmd::run_quiet(&mut command)?;
    let report = String::from_utf8(output.stdout).context("wrk's report is not UTF-8")?;
    Figures::read(&report).with_context(|| format!("reading wrk's report:\n{report}"))
}

impl Figures {
    fn read(report: &str) -> Result<Self> {
        let field = |prefix: &str| {
            report
                .lines()
                .map(str::trim)
                .find_map(|line| line.strip_prefix(prefix))
                .map(str::trim)
                .with_context(|| format!("no {prefix:?} in wrk's report"))
        };
        let errors = report.lines().any(|line| line.trim_start().starts_with("Non-2xx"));
        if errors {
            bail!("some answers were not 2xx");
        }
        Ok(Self {
            cpu_us: 0.0,
            requests_per_second: field("Requests/sec:")?
                .parse()
                .context("Requests/sec is not a number")?,
            p50_ms: milliseconds(field("50%")?)?,
            p99_ms: milliseconds(field("99%")?)?,
        })
    }
}

/// wrk's `812.00us`, `3.41ms`, `1.02s` in milliseconds.
fn milliseconds(text: &str) -> Result<f64> {
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        bail!("{text:?} is not a duration");
    };
    Ok(number.parse::<f64>().context("not a number")? * factor)
}

/// Installs wrk on Debian as root when it is missing.
pub fn ensure() -> Result<()> {
    if Command::new("wrk").arg("-v").output().is_ok() {
        return Ok(());
    }
    if system::is_root()? && system::is_debian() {
        return system::apt_install(&["wrk"]);
    }
    bail!("wrk is not installed; install it with: sudo apt-get install -y wrk")
}

/// The Lua scripts of the scenarios, written into `dir`.
pub struct Scripts {
    pub create: std::path::PathBuf,
    pub keyed_create: std::path::PathBuf,
    pub built_create: std::path::PathBuf,
    pub get_pet: std::path::PathBuf,
    pub mix: std::path::PathBuf,
    pub gzip: std::path::PathBuf,
    pub update_pet: std::path::PathBuf,
}

const NEW_PET: &str = r#"{"name":"Load test","categoryId":7,"status":"pending"}"#;

/// The lines of a script's `init` that format a request once, by the Lua expression
/// `whole`, with the marker `\1` where each call splices its own part in: `head` is the
/// request up to the marker, `tail` what follows it.
fn split_at_marker(whole: &str) -> String {
    format!(
        "  local whole = {whole}\n  local at = string.find(whole, \"\\1\", 1, true)\n  head, tail = string.sub(whole, 1, at - 1), string.sub(whole, at + 1)\n"
    )
}

impl Scripts {
    /// Scripts for a table of `pets` pets, sending `key`.
    pub fn write(dir: &Path, pets: u64, key: &str) -> Result<Self> {
        let create = dir.join("create.lua");
        std::fs::write(
            &create,
            format!(
                "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = '{NEW_PET}'\n"
            ),
        )?;
        // A fresh key per request: the run's start second and the thread's number, then a
        // counter, so that no round replays another's keys. The request is formatted once,
        // with a marker in the key's place, and each call splices the counter in: one string
        // concatenation, so that building requests costs wrk, on the cores the service runs
        // on, as little as it can. The same requests with another header in the key's place
        // make the baseline built the same way.
        let per_request = |header: &str| {
            format!(
                "local threads = 0\nfunction setup(thread)\n  threads = threads + 1\n  thread:set(\"prefix\", os.time() .. \"-\" .. threads .. \"-\")\nend\nlocal head, tail\nfunction init(args)\n  local headers = {{[\"Authorization\"] = \"Bearer {key}\", [\"Content-Type\"] = \"application/json\", [\"{header}\"] = \"\\1\"}}\n{}  head = head .. prefix\nend\nlocal n = 0\nrequest = function()\n  n = n + 1\n  return head .. n .. tail\nend\n",
                split_at_marker(&format!(
                    "wrk.format(\"POST\", \"/v1/pets\", headers, '{NEW_PET}')"
                ))
            )
        };
        let keyed_create = dir.join("keyed-create.lua");
        std::fs::write(&keyed_create, per_request("Idempotency-Key"))?;
        let built_create = dir.join("built-create.lua");
        std::fs::write(&built_create, per_request("X-Load-Sequence"))?;
        // A random pet of the table, the request built as the keyed ones are: formatted once
        // (with the command line's headers), the id spliced in per call.
        let get_pet = dir.join("get-pet.lua");
        std::fs::write(
            &get_pet,
            format!(
                "local head, tail\nfunction init(args)\n{}end\nrequest = function()\n  return head .. math.random(1, {pets}) .. tail\nend\n",
                split_at_marker("wrk.format(nil, \"/v1/pets/\\1\")")
            ),
        )?;
        // Nine listings for one add, both requests formatted once. They carry their headers
        // whole: a table given to wrk.format replaces the command line's.
        let mix = dir.join("mix.lua");
        std::fs::write(
            &mix,
            format!(
                "local n = 0\nlocal get, post\nfunction init(args)\n  get = wrk.format(\"GET\", \"/v1/pets?limit=20\", {{[\"Authorization\"] = \"Bearer {key}\"}})\n  post = wrk.format(\"POST\", \"/v1/pets\", {{[\"Authorization\"] = \"Bearer {key}\", [\"Content-Type\"] = \"application/json\"}}, '{NEW_PET}')\nend\nrequest = function()\n  n = n + 1\n  if n % 10 == 0 then\n    return post\n  end\n  return get\nend\n"
            ),
        )?;
        // The command line's request, asking for gzip as most HTTP clients do.
        let gzip = dir.join("gzip.lua");
        std::fs::write(&gzip, "wrk.headers[\"Accept-Encoding\"] = \"gzip\"\n")?;
        // A merge patch of a random animal's name, as a client would send it: the precondition
        // `*` (the animal exists), no change of status, so no order is looked up.
        let update_pet = dir.join("update-pet.lua");
        std::fs::write(
            &update_pet,
            format!(
                "local patch = {{[\"Authorization\"] = \"Bearer {key}\", [\"Content-Type\"] = \"application/merge-patch+json\", [\"If-Match\"] = \"*\"}}\nlocal n = 0\nrequest = function()\n  n = n + 1\n  return wrk.format(\"PATCH\", \"/v1/pets/\" .. math.random(1, {pets}), patch, '{{\"name\":\"Renamed ' .. n .. '\"}}')\nend\n"
            ),
        )?;
        Ok(Self { create, keyed_create, built_create, get_pet, mix, gzip, update_pet })
    }
}
