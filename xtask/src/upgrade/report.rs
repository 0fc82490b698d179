//! What the upgrade drill saw: the clients' outcomes by phase, the writes found afterwards,
//! the table, and whether the drill failed.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::{INSTANCES, SETTLE};
use crate::faults::traffic::{Outcome, Seen};

/// The markers of the table in docs/operations.md.
const BEGIN: &str = "<!-- xtask upgrade-drill: begin -->";
const END: &str = "<!-- xtask upgrade-drill: end -->";

/// A step of the drill and when it began.
pub struct Phase {
    pub name: String,
    pub began: Instant,
}

/// What the drill saw.
pub struct Report {
    pub phases: Vec<Phase>,
    pub seen: Vec<Seen>,
    /// Pets and orders acknowledged (201) that the service does not have afterwards.
    pub lost: Vec<String>,
    /// How many acknowledged writes were found.
    pub found: usize,
}

/// What the clients saw in one phase.
#[derive(Default)]
struct Counts {
    requests: usize,
    success: usize,
    client_errors: usize,
    server_errors: usize,
    broken: usize,
    writes: usize,
    replays: usize,
    /// Replays that did not get the first answer back.
    unlike: usize,
}

impl Counts {
    fn add(&mut self, outcome: &Outcome) {
        self.requests += 1;
        match outcome {
            Outcome::Answer { status, added, placed, replayed, .. } => {
                match status {
                    200..=299 => self.success += 1,
                    400..=499 => self.client_errors += 1,
                    _ => self.server_errors += 1,
                }
                self.writes += usize::from(added.is_some()) + usize::from(placed.is_some());
                self.replays += usize::from(replayed.is_some());
                self.unlike += usize::from(*replayed == Some(false));
            }
            Outcome::Broken(_) => self.broken += 1,
        }
    }

    fn row(&self, name: &str) -> String {
        let Self {
            requests,
            success,
            client_errors,
            server_errors,
            broken,
            writes,
            replays,
            unlike,
        } = self;
        format!(
            "| {name} | {requests} | {success} | {client_errors} | {server_errors} | {broken} | {writes} | {replays} | {unlike} |\n"
        )
    }
}

impl Report {
    /// The counts of each phase, in order.
    fn counts(&self) -> Vec<Counts> {
        let mut counts: Vec<Counts> = self.phases.iter().map(|_| Counts::default()).collect();
        for one in &self.seen {
            let phase = self.phases.iter().rposition(|phase| phase.began <= one.at).unwrap_or(0);
            counts[phase].add(&one.outcome);
        }
        counts
    }

    pub fn table(&self, base: &str) -> String {
        let mut table = format!(
            "From `{base}` to the working tree, {INSTANCES} instances on PostgreSQL behind nginx, \
             4 clients through nginx (each a read, a keyed createPet, a keyed placeOrder \
             for that pet, and the createPet again with its key, every 10 ms; nginx spreads \
             the requests over the instances, so a replay may meet another version than the \
             first answer), {} s between steps:\n\n\
             | phase | requests | 2xx | 4xx | 5xx | connection errors | writes acknowledged \
             | replays | replays unlike the first answer |\n\
             |---|---|---|---|---|---|---|---|---|\n",
            SETTLE.as_secs()
        );
        let counts = self.counts();
        let mut total = Counts::default();
        for (phase, count) in self.phases.iter().zip(&counts) {
            table.push_str(&count.row(&phase.name));
        }
        for one in &self.seen {
            total.add(&one.outcome);
        }
        table.push_str(&total.row("**all**"));
        let _ = write!(
            table,
            "\nWrites acknowledged: {}; found afterwards: {}; lost: {}.\n",
            total.writes,
            self.found,
            self.lost.len()
        );
        for lost in self.lost.iter().take(5) {
            let _ = writeln!(table, "- lost: {lost}");
        }
        let broken = self.seen.iter().filter_map(|one| match &one.outcome {
            Outcome::Broken(error) => Some(error),
            Outcome::Answer { .. } => None,
        });
        for error in broken.take(5) {
            let _ = writeln!(table, "- connection error: {error}");
        }
        table
    }

    /// Why the drill failed, if it did.
    pub fn failure(&self) -> Option<String> {
        let mut total = Counts::default();
        for one in &self.seen {
            total.add(&one.outcome);
        }
        let failed = total.requests - total.success;
        match (failed, self.lost.len(), total.unlike) {
            (0, 0, 0) => None,
            (failed, lost, unlike) => Some(format!(
                "{failed} request(s) failed, {lost} write(s) lost, {unlike} replay(s) unlike \
                 the first answer"
            )),
        }
    }
}

pub fn write_docs(root: &Path, table: &str) -> Result<()> {
    let path = root.join("docs/operations.md");
    let doc =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let (before, rest) =
        doc.split_once(BEGIN).context("docs/operations.md has no drill markers")?;
    let (_, after) = rest.split_once(END).context("docs/operations.md has no drill end marker")?;
    let section = format!("{BEGIN}\nMeasured by `cargo xtask upgrade-drill`. {table}{END}");
    std::fs::write(&path, format!("{before}{section}{after}"))?;
    println!("written to docs/operations.md");
    Ok(())
}
