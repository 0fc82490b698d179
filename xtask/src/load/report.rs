//! The figures of `cargo xtask load`: a table on stdout and in `docs/benchmarks.md`, and a
//! chart in `docs/load.svg`, both generated from the figures of the run.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::Row;
use crate::cmd;

const BEGIN: &str = "<!-- xtask load: begin -->";
const END: &str = "<!-- xtask load: end -->";

/// Prints the table of a run that measured some rows only.
pub fn print(rows: &[Row]) {
    cmd::header("summary (some scenarios only: the docs are left as they are)");
    println!("{}", table(rows));
}

/// Prints the table and writes it, with the chart, into the docs.
pub fn write(root: &Path, rows: &[Row], (seconds, rounds): (u32, u32)) -> Result<()> {
    let (keyed_seconds, keyed_rounds) = super::scenarios::keyed_rounds(seconds, rounds);
    let table = table(rows);
    cmd::header("summary");
    println!("{table}");
    let path = root.join("docs/benchmarks.md");
    let doc =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let (before, rest) = doc.split_once(BEGIN).context("docs/benchmarks.md has no load markers")?;
    let (_, after) = rest.split_once(END).context("docs/benchmarks.md has no end marker")?;
    let section = format!(
        "{BEGIN}\nMeasured by `cargo xtask load` {}. The servers of both sizes run at once, and each scenario runs on the ceiling and on every size in turn, {} times (ABCABC...; keyed createPet {} times, in runs of {} s): each figure is the median of its rounds, each ratio the median of its rounds' ratios to the ceiling run just before, and noise hits the sizes alike.\n\n{table}\n![The figures as a chart](load.svg)\n{END}",
        machine(),
        rounds,
        keyed_rounds,
        keyed_seconds,
    );
    std::fs::write(&path, format!("{before}{section}{after}"))?;
    std::fs::write(root.join("docs/load.svg"), chart(rows))?;
    println!("written to docs/benchmarks.md and docs/load.svg");
    Ok(())
}

fn table(rows: &[Row]) -> String {
    let mut table = String::from(
        "| database | pets | scenario | requests/s | of the ceiling | its rounds | CPU a request | of the ceiling's | wrk on 2 threads | p50 | p99 | server RssAnon | guards |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let budgets = if row.missed.is_empty() {
            "met".to_owned()
        } else {
            format!("**missed**: {}", row.missed.join("; "))
        };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.0} | {:.2} | {:.2}–{:.2} | {:.1} µs | {:.2}× | {:.2} | {:.2} ms | {:.2} ms | {:.1} MiB | {budgets} |",
            row.backend,
            row.pets,
            row.scenario,
            row.service.requests_per_second,
            row.ratio,
            row.spread.0,
            row.spread.1,
            row.service.cpu_us,
            row.cpu_ratio,
            row.two_threads,
            row.service.p50_ms,
            row.service.p99_ms,
            row.rss_mib
        );
    }
    // What a fresh Idempotency-Key per request costs a durable add: keyed over the adds
    // without a key run beside it on the same server in every round, seconds apart.
    let any_keyed = rows.iter().any(|r| r.scenario == super::scenarios::KEYED_CREATE);
    if any_keyed {
        let _ = writeln!(
            table,
            "\nKeyed createPet (a fresh Idempotency-Key per request) over createPet, run beside it on the same server in every round, before it in one round and after it in the next (the median of the rounds' ratios); then over the same requests built per request with a fresh X-Load-Sequence header (ignored by the service) in the key's place, run between them; then as the table's rows give it (runs minutes apart), in requests/s:\n"
        );
    }
    for keyed in rows.iter().filter(|r| r.scenario == super::scenarios::KEYED_CREATE) {
        let as_is = rows.iter().find(|r| {
            r.pets == keyed.pets && r.backend == keyed.backend && r.scenario == "createPet"
        });
        let Some(paired) = keyed.paired else { continue };
        // A run without the createPet scenario has no row to compare with.
        let rows = as_is.map_or_else(String::new, |as_is| {
            let ratio = keyed.service.requests_per_second / as_is.service.requests_per_second;
            format!("; the table's rows: {ratio:.2}")
        });
        let _ = writeln!(
            table,
            "- {}, {} pets, {} rounds: {:.2} (built per request: {:.2}{rows})",
            keyed.backend, keyed.pets, paired.rounds, paired.plain, paired.built,
        );
    }
    // What one webhook endpoint costs the adds, and how fast its deliveries go.
    let with_endpoint = super::scenarios::WITH_ENDPOINT;
    if rows.iter().any(|r| r.scenario == with_endpoint) {
        let _ = writeln!(
            table,
            "\ncreatePet with one webhook endpoint enabled (its deliveries made meanwhile by the same server, to a receiver on the same machine) over createPet with none enabled, run beside it on the same server in every round, before it in one round and after it in the next (the median of the rounds' ratios); then the deliveries a second the server made with no request beside them:\n"
        );
    }
    for row in rows.iter().filter(|r| r.scenario == with_endpoint) {
        let (Some(paired), Some(delivered)) = (row.paired, row.delivered) else { continue };
        let _ = writeln!(
            table,
            "- {}, {} pets, {} rounds: {:.2}; {delivered:.0} deliveries a second",
            row.backend, row.pets, paired.rounds, paired.plain,
        );
    }
    // What compressing a list costs: the gzipped page over the same page unencoded.
    over_the_rows_beside(
        &mut table,
        rows,
        (super::scenarios::GZIPPED_PAGE, "page of 100"),
        "A page of 100 asked with `Accept-Encoding: gzip` over the same page unencoded",
    );
    // A durable change against a durable add, on the same server.
    over_the_rows_beside(
        &mut table,
        rows,
        (super::scenarios::UPDATE_PET, "createPet"),
        "updatePet (a merge patch of a random animal's name) over createPet",
    );
    // The cost of the page kinds, the inventory and the events at the largest table against
    // the smallest.
    let sizes: Vec<u64> = rows.iter().map(|r| r.pets).collect();
    if let (Some(&small), Some(&large)) = (sizes.iter().min(), sizes.iter().max())
        && small != large
    {
        {
            let _ = writeln!(table, "\np50 at {large} pets over p50 at {small}:\n");
            let scaled = |scenario: &str| super::budgets::SCALED.contains(&scenario);
            for row in rows.iter().filter(|r| r.pets == large && scaled(r.scenario)) {
                let base = rows.iter().find(|r| {
                    r.pets == small && r.backend == row.backend && r.scenario == row.scenario
                });
                if let Some(base) = base {
                    let _ = writeln!(
                        table,
                        "- {}, {}: {:.2}",
                        row.backend,
                        row.scenario,
                        row.service.p50_ms / base.service.p50_ms
                    );
                }
            }
        }
    }
    table
}

/// The requests a second of each row of `scenario` over those of `base` on the same
/// database and table, under `heading`.
fn over_the_rows_beside(
    table: &mut String,
    rows: &[Row],
    (scenario, base): (&str, &str),
    heading: &str,
) {
    let measured: Vec<&Row> = rows.iter().filter(|r| r.scenario == scenario).collect();
    if !measured.is_empty() {
        let _ = writeln!(table, "\n{heading}, in requests/s (the table's rows):\n");
    }
    for row in measured {
        let beside = rows
            .iter()
            .find(|r| r.pets == row.pets && r.backend == row.backend && r.scenario == base);
        if let Some(beside) = beside {
            let ratio = row.service.requests_per_second / beside.service.requests_per_second;
            let _ = writeln!(table, "- {}, {} pets: {ratio:.2}", row.backend, row.pets);
        }
    }
}

/// The machine the figures were measured on, and how wrk runs, for "Measured by `TASK` on
/// ...".
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    format!(
        "on {cores} cores ({cpu}), shared by the servers and wrk; wrk with 32 connections, on 1 thread for the figures the budgets judge (so that wrk and the servers each have a core), and on 2 threads for one more round beside them"
    )
}

/// Throughput as bars (the ceiling's ratio as their length), p50 and p99 as marks, one row
/// per scenario and configuration.
#[allow(clippy::cast_precision_loss, reason = "a few dozen rows")]
fn chart(rows: &[Row]) -> String {
    let (left, bar_width, row_height) = (300.0, 420.0, 22.0);
    let height = 60.0 + row_height * rows.len() as f64;
    let max_p99 = rows.iter().map(|r| r.service.p99_ms).fold(1.0, f64::max);
    let latency_left = left + bar_width + 40.0;
    let latency_width = 300.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"20\" font-weight=\"bold\">Throughput, as a share of the ceiling (1.0 at the line)</text>\n\
         <text x=\"{latency_left}\" y=\"20\" font-weight=\"bold\">Latency: p50 (dot) and p99 (bar), 0 to {max_p99:.1} ms</text>\n\
         <line x1=\"{x1}\" y1=\"30\" x2=\"{x1}\" y2=\"{y2}\" stroke=\"black\" stroke-dasharray=\"4\"/>\n",
        w = latency_left + latency_width + 20.0,
        x1 = left + bar_width * 0.8,
        y2 = height - 10.0,
    );
    for (i, row) in rows.iter().enumerate() {
        let y = 40.0 + row_height * i as f64;
        let share = (row.ratio / 1.25).min(1.0) * bar_width;
        let p50 = row.service.p50_ms / max_p99 * latency_width;
        let p99 = row.service.p99_ms / max_p99 * latency_width;
        let _ = write!(
            svg,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{} {} · {}</text>\n\
             <rect x=\"{left}\" y=\"{y}\" width=\"{share:.1}\" height=\"{h}\" fill=\"#4c78a8\"/>\n\
             <text x=\"{vx:.1}\" y=\"{ty}\">{:.0}/s ({:.2})</text>\n\
             <rect x=\"{latency_left}\" y=\"{y}\" width=\"{p99:.1}\" height=\"{h}\" fill=\"#f2cf5b\"/>\n\
             <circle cx=\"{cx:.1}\" cy=\"{cy}\" r=\"4\" fill=\"#e45756\"/>\n",
            row.backend,
            row.pets,
            row.scenario,
            row.service.requests_per_second,
            row.ratio,
            lx = left - 8.0,
            ty = y + 13.0,
            h = row_height - 6.0,
            vx = left + share + 4.0,
            cx = latency_left + p50,
            cy = y + (row_height - 6.0) / 2.0,
        );
    }
    svg.push_str("</svg>\n");
    svg
}
