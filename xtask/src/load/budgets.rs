//! The guards a run of `cargo xtask load` is judged by (docs/benchmarks.md, "Budgets"): what
//! the service may cost, and no more. Each row is marked with the guards it misses, and a
//! run that misses any fails.

use super::Row;
use super::scenarios::{EVENTS, EVENTS_BY_TYPE, INVENTORY, KEYED_CREATE, WITH_ENDPOINT};

/// The page kinds: the first page, a filtered page and a deep page.
const PAGES: [&str; 3] = ["first page", "filtered page", "deep page"];
/// The reads whose cost must not grow with the table: the pages, the inventory and the
/// events.
pub(super) const SCALED: [&str; 6] =
    ["first page", "filtered page", "deep page", INVENTORY, EVENTS, EVENTS_BY_TYPE];
/// The most a table of 1,000,000 pets may add to a page's p50 at 10,000.
const SCALE: f64 = 1.10;
/// The most anonymous resident memory of a server under load, in MiB.
const RSS_MIB: f64 = 64.0;
/// The most CPU a page asked again may cost an SQLite server, as a multiple of the ceiling's
/// CPU a request.
const PAGE_CPU: f64 = 1.8;
/// The fewest durable adds a second on PostgreSQL.
const POSTGRES_ADDS: f64 = 5_000.0;

/// Marks every row of `rows` with the budgets it misses.
pub fn judge(rows: &mut [Row]) {
    let p50s: Vec<(&'static str, u64, &'static str, f64)> =
        rows.iter().map(|row| (row.backend, row.pets, row.scenario, row.service.p50_ms)).collect();
    let smallest = rows.iter().map(|row| row.pets).min();
    for row in rows.iter_mut() {
        let mut missed = Vec::new();
        let sqlite = row.backend == "SQLite";
        let page = PAGES.contains(&row.scenario);
        let mut at_least = |budget: f64, what: &str, value: f64| {
            if value < budget {
                missed.push(format!("{what} {value:.2} < {budget:.2}"));
            }
        };
        match (sqlite, row.scenario) {
            (true, scenario) if PAGES.contains(&scenario) => at_least(0.65, "ratio", row.ratio),
            (false, scenario) if PAGES.contains(&scenario) => at_least(0.17, "ratio", row.ratio),
            (true, "getPet" | "createPet") => at_least(0.25, "ratio", row.ratio),
            (false, "createPet") => {
                at_least(POSTGRES_ADDS, "adds a second", row.service.requests_per_second);
            }
            (_, KEYED_CREATE) => {
                if let Some(paired) = row.paired {
                    at_least(0.75, "keyed over createPet", paired.plain);
                }
            }
            (_, WITH_ENDPOINT) => {
                if let Some(paired) = row.paired {
                    at_least(0.85, "with one endpoint over none", paired.plain);
                }
                if let Some(rate) = row.delivered {
                    at_least(1000.0, "deliveries a second", rate);
                }
            }
            _ => {}
        }
        if sqlite && page && row.service.p99_ms >= 5.0 {
            missed.push(format!("p99 {:.2} ms >= 5 ms", row.service.p99_ms));
        }
        if sqlite && page && row.cpu_ratio > PAGE_CPU {
            missed.push(format!(
                "CPU a request {:.2}× the ceiling's > {PAGE_CPU:.2}×",
                row.cpu_ratio
            ));
        }
        if SCALED.contains(&row.scenario) && Some(row.pets) != smallest {
            let base = p50s.iter().find(|(backend, pets, scenario, _)| {
                *backend == row.backend && Some(*pets) == smallest && *scenario == row.scenario
            });
            if let Some((.., base)) = base {
                let scale = row.service.p50_ms / base;
                if scale > SCALE {
                    missed.push(format!("p50 {scale:.2} of the smallest table's > {SCALE:.2}"));
                }
            }
        }
        if row.rss_mib >= RSS_MIB {
            missed.push(format!("RssAnon {:.1} MiB >= {RSS_MIB} MiB", row.rss_mib));
        }
        row.missed = missed;
    }
}
