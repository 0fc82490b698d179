//! What a fault drill found: each fault's row, judged from what the clients saw, and the
//! table printed and written into `docs/operations.md`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::RECOVERY;
use super::options::{FULL_SECS, Fault};
use super::traffic::{Client, Outcome, Seen};

const BEGIN: &str = "<!-- xtask faults: begin -->";
const END: &str = "<!-- xtask faults: end -->";

/// What one fault did to the clients.
pub struct Row {
    pub fault: Fault,
    held: Duration,
    requests: usize,
    succeeded: usize,
    unavailable: usize,
    errors: usize,
    limited: usize,
    broken: Vec<String>,
    without_retry_after: usize,
    acknowledged: usize,
    lost: usize,
    recovery: Option<Duration>,
}

impl Row {
    pub fn judge(
        fault: Fault,
        held: Duration,
        clients: &[Client],
        seen: &[Seen],
        stored: &std::collections::BTreeMap<i64, String>,
        ended: Instant,
        down: &[(Instant, Instant)],
    ) -> Self {
        let mut row = Self {
            fault,
            held,
            requests: seen.len(),
            succeeded: 0,
            unavailable: 0,
            errors: 0,
            limited: 0,
            broken: Vec::new(),
            without_retry_after: 0,
            acknowledged: 0,
            lost: 0,
            recovery: None,
        };
        let mut first_after = vec![None; clients.len()];
        for one in seen {
            match &one.outcome {
                Outcome::Answer { status, retry_after, added, .. } => {
                    match status {
                        200..=299 => {
                            row.succeeded += 1;
                            if one.at >= ended && first_after[one.client].is_none() {
                                first_after[one.client] = Some(one.at - ended);
                            }
                        }
                        503 => {
                            row.unavailable += 1;
                            row.without_retry_after += usize::from(!retry_after);
                        }
                        429 => row.limited += 1,
                        500..=599 => row.errors += 1,
                        _ => {}
                    }
                    if let Some((id, name)) = added {
                        row.acknowledged += 1;
                        row.lost += usize::from(stored.get(id) != Some(name));
                    }
                }
                Outcome::Broken(error) => {
                    let while_down = down.iter().any(|(from, to)| (*from..=*to).contains(&one.at));
                    if !while_down {
                        row.broken.push(format!("{}: {error}", clients[one.client].name));
                    }
                }
            }
        }
        row.recovery = first_after
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .and_then(|all| all.into_iter().max());
        row
    }

    pub fn passed(&self) -> bool {
        self.errors == 0
            && self.limited == 0
            && self.broken.is_empty()
            && self.without_retry_after == 0
            && self.lost == 0
            && self.recovery.is_some_and(|recovery| recovery <= RECOVERY)
    }
}

pub fn table(rows: &[Row]) -> String {
    let mut table = String::from(
        "| fault | held | requests | 2xx | 503 | 500 | 429 under quota | broken | 503 without Retry-After | writes acknowledged | lost | first 2xx after the end | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let recovery =
            row.recovery.map_or_else(|| "none".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()));
        let _ = writeln!(
            table,
            "| {} | {:.0} s | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.fault.name(),
            row.held.as_secs_f64(),
            row.requests,
            row.succeeded,
            row.unavailable,
            row.errors,
            row.limited,
            row.broken.len(),
            row.without_retry_after,
            row.acknowledged,
            row.lost,
            recovery,
            if row.passed() { "pass" } else { "FAIL" },
        );
    }
    for row in rows {
        for broken in row.broken.iter().take(3) {
            let _ = writeln!(table, "\n{}: broken: {broken}", row.fault.name());
        }
    }
    table
}

pub fn write_docs(root: &Path, table: &str) -> Result<()> {
    let path = root.join("docs/operations.md");
    let doc =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let Some((before, rest)) = doc.split_once(BEGIN) else {
        bail!("docs/operations.md has no faults markers");
    };
    let (_, after) = rest.split_once(END).context("docs/operations.md has no end marker")?;
    let section = format!(
        "{BEGIN}\nMeasured by `cargo xtask faults` against the release binary, each fault held {FULL_SECS} s:\n\n{table}{END}"
    );
    std::fs::write(&path, format!("{before}{section}{after}"))?;
    println!("written to docs/operations.md");
    Ok(())
}
