//! The scenarios of `cargo xtask load`, and how one backend's rounds are measured.

use std::path::Path;

use anyhow::Result;

use super::receiver::Receiver;
use super::wrk::Threads;
use super::{Bins, DatabaseUrl, Instance, Paired, Row, Target};
use super::{is_chosen, resident_mib, start_instance, wrk};
use crate::cmd;

const LIST: &str = "/v1/pets?limit=20";
/// A durable add with a fresh `Idempotency-Key` per request.
pub(super) const KEYED_CREATE: &str = "keyed createPet";
/// A durable add built per request like the keyed one, a fresh `X-Load-Sequence` (a
/// header the service ignores) in the key's place. Each round of keyed createPet runs
/// createPet and this one beside it on the same server, seconds apart: keyed over createPet
/// is what the key costs, wrk's building of each request included; keyed over this one
/// leaves out the building, which wrk does on the cores the service runs on.
const BUILT_CREATE: &str = "createPet, built per request";
/// A page of 100, asked with `Accept-Encoding: gzip`: beside "page of 100", what compressing
/// a list costs the server.
pub(super) const GZIPPED_PAGE: &str = "page of 100 gzipped";
/// A merge patch of a random animal's name, `If-Match: *`: beside createPet, what a durable
/// change costs.
pub(super) const UPDATE_PET: &str = "updatePet";
/// The count of each status, whose cost must not grow with the table.
pub(super) const INVENTORY: &str = "getInventory";
/// Durable adds while one webhook endpoint is enabled, its deliveries made beside them by
/// the same server: each round also runs createPet with the endpoint disabled, before it in
/// one round and after it in the next. Then the deliveries a second the server makes with
/// no request beside them.
pub(super) const WITH_ENDPOINT: &str = "createPet with one endpoint";
/// The first page of the events, and a page of one type that none of the reader's are:
/// their cost must not grow with the table.
pub(super) const EVENTS: &str = "listEvents";
pub(super) const EVENTS_BY_TYPE: &str = "listEvents by type";
const SCENARIOS: [&str; 14] = [
    "first page",
    "filtered page",
    "deep page",
    "page of 100",
    GZIPPED_PAGE,
    "getPet",
    INVENTORY,
    EVENTS,
    EVENTS_BY_TYPE,
    "90/10 mix",
    "createPet",
    KEYED_CREATE,
    WITH_ENDPOINT,
    UPDATE_PET,
];

/// The path and the script of a scenario on an instance.
fn scenario<'a>(name: &str, instance: &'a Instance) -> (String, Option<&'a Path>) {
    let scripts = &instance.scripts;
    match name {
        "first page" => (LIST.to_owned(), None),
        "page of 100" => ("/v1/pets?limit=100".to_owned(), None),
        GZIPPED_PAGE => ("/v1/pets?limit=100".to_owned(), Some(&scripts.gzip)),
        "filtered page" => ("/v1/pets?status=pending&limit=20".to_owned(), None),
        // A cursor 100 pets before the end (its format is the API's own,
        // crates/api/src/wire/cursor.rs).
        "deep page" => (
            format!("/v1/pets?limit=20&cursor={}", cursor(instance.pets.saturating_sub(100))),
            None,
        ),
        "getPet" => ("/".to_owned(), Some(&scripts.get_pet)),
        INVENTORY => ("/v1/store/inventory".to_owned(), None),
        EVENTS => ("/v1/events?limit=20".to_owned(), None),
        EVENTS_BY_TYPE => ("/v1/events?type=order.placed&limit=20".to_owned(), None),
        UPDATE_PET => ("/".to_owned(), Some(&scripts.update_pet)),
        "90/10 mix" => ("/".to_owned(), Some(&scripts.mix)),
        KEYED_CREATE => ("/v1/pets".to_owned(), Some(&scripts.keyed_create)),
        BUILT_CREATE => ("/v1/pets".to_owned(), Some(&scripts.built_create)),
        _ => ("/v1/pets".to_owned(), Some(&scripts.create)),
    }
}

/// Every scenario on one backend. The servers of all sizes run at once and each scenario
/// alternates the ceiling and every size, `rounds` times (ABCABC...), so that machine noise
/// hits the sizes alike and their p50s compare within one minute. A figure is the median of
/// a size's rounds, and its ratio the median of its rounds' ratios to the ceiling measured
/// just before: one round the machine slowed down moves neither.
pub(super) fn configuration(
    bins: &Bins,
    dir: &Path,
    backend: &'static str,
    url: &DatabaseUrl<'_>,
    sizes: &[u64],
    (ceiling, receiver): (&Target, &Receiver),
    (seconds, rounds): (u32, u32),
) -> Result<Vec<Row>> {
    let instances = sizes
        .iter()
        .map(|&pets| start_instance(bins, dir, backend, (&url(pets), &receiver.url), pets))
        .collect::<Result<Vec<_>>>()?;
    let warm = seconds.min(3);
    wrk::measure(&format!("{}{LIST}", ceiling.base), &ceiling.auth, None, warm)?;
    for instance in &instances {
        let service = &instance.service;
        wrk::measure(&format!("{}{LIST}", service.base), &service.auth, None, warm)?;
    }
    let mut rows = Vec::new();
    for name in SCENARIOS.into_iter().filter(|name| is_chosen("LOAD_SCENARIOS", name)) {
        cmd::header(&format!("{backend}: {name}"));
        // Per instance, each round's figures and its ratio to that round's ceiling (and, for
        // keyed createPet, to the adds without a key run beside it).
        let mut runs: Vec<Vec<Round>> = instances.iter().map(|_| Vec::new()).collect();
        let (seconds, rounds) =
            if name == KEYED_CREATE { keyed_rounds(seconds, rounds) } else { (seconds, rounds) };
        for round in 0..rounds {
            let top = wrk::on_server(ceiling.pid, seconds, || {
                let url = format!("{}{LIST}", ceiling.base);
                wrk::measure_with(Threads::One, &url, &ceiling.auth, None, seconds)
            })?;
            for (instance, runs) in instances.iter().zip(&mut runs) {
                let service = &instance.service;
                let run = |name: &str| {
                    let (path, script) = scenario(name, instance);
                    let url = format!("{}{path}", service.base);
                    wrk::on_server(service.pid, seconds, || {
                        wrk::measure_with(Threads::One, &url, &service.auth, script, seconds)
                    })
                };
                let (figures, beside) = if name == KEYED_CREATE {
                    let (figures, plain, built) = keyed_round(round, &run)?;
                    (figures, Some((plain, built)))
                } else if name == WITH_ENDPOINT {
                    let (with, without) = endpoint_round(round, instance, &run)?;
                    (with, Some((without, without)))
                } else {
                    (run(name)?, None)
                };
                let ratio = figures.requests_per_second / top.requests_per_second;
                let over =
                    |other: wrk::Figures| figures.requests_per_second / other.requests_per_second;
                let paired = beside.map(|(plain, built)| Paired {
                    plain: over(plain),
                    built: over(built),
                    rounds: 1,
                });
                let cpu_ratio = figures.cpu_us / top.cpu_us;
                runs.push(Round { figures, ratio, paired, cpu_ratio });
            }
        }
        let (two_threads, delivered): (Vec<f64>, Vec<Option<f64>>) =
            two_threads_round(name, &instances, (ceiling, receiver), seconds)?.into_iter().unzip();
        for (((instance, runs), two_threads), delivered) in
            instances.iter().zip(&runs).zip(two_threads).zip(delivered)
        {
            rows.push(row_of(backend, name, instance, runs, (two_threads, delivered))?);
        }
    }
    // The table lists one size after the other.
    rows.sort_by_key(|row| sizes.iter().position(|&pets| pets == row.pets));
    Ok(rows)
}

/// One round of a scenario on one instance: its figures, its ratio to the ceiling's rate
/// and CPU a request, and for the paired scenarios its ratios to the runs beside it.
struct Round {
    figures: wrk::Figures,
    ratio: f64,
    paired: Option<Paired>,
    cpu_ratio: f64,
}

/// The row of `name` on `instance`: the medians of its `runs`, beside the round with wrk on
/// two threads and, for createPet with one endpoint, the deliveries a second.
fn row_of(
    backend: &'static str,
    name: &'static str,
    instance: &Instance,
    runs: &[Round],
    (two_threads, delivered): (f64, Option<f64>),
) -> Result<Row> {
    let ratios: Vec<f64> = runs.iter().map(|round| round.ratio).collect();
    let spread = (
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let figures = wrk::Figures {
        requests_per_second: median(runs.iter().map(|r| r.figures.requests_per_second)),
        p50_ms: median(runs.iter().map(|r| r.figures.p50_ms)),
        p99_ms: median(runs.iter().map(|r| r.figures.p99_ms)),
        cpu_us: median(runs.iter().map(|r| r.figures.cpu_us)),
    };
    let ratio = median(ratios.iter().copied());
    let cpu_ratio = median(runs.iter().map(|round| round.cpu_ratio));
    let paired =
        runs.iter().map(|round| round.paired).collect::<Option<Vec<_>>>().map(|paired| Paired {
            plain: median(paired.iter().map(|p| p.plain)),
            built: median(paired.iter().map(|p| p.built)),
            rounds: paired.len(),
        });
    let rss_mib = resident_mib(instance.server.0.id())?;
    println!(
        "{} pets: {:.0} req/s ({ratio:.2} of the ceiling), {:.1} µs of CPU a request \
         ({cpu_ratio:.2}× the ceiling's), p50 {:.2} ms, p99 {:.2} ms, RssAnon {rss_mib:.1} MiB",
        instance.pets, figures.requests_per_second, figures.cpu_us, figures.p50_ms, figures.p99_ms
    );
    Ok(Row {
        backend,
        pets: instance.pets,
        scenario: name,
        service: figures,
        ratio,
        spread,
        cpu_ratio,
        two_threads,
        missed: Vec::new(),
        paired,
        delivered,
        rss_mib,
    })
}

/// How long each run of keyed createPet lasts, and how many rounds it runs, when the other
/// scenarios run `rounds` of `seconds`: runs two fifths as long (2 s for 5) and four times as
/// many rounds (12 for 3), in about the time five rounds of full runs take. Its figure is a
/// ratio of two runs seconds apart, each as noisy as any scenario's run, and on this kind of
/// machine the noise comes in bursts and drifts over minutes: shorter runs put the two of a
/// ratio closer together, and a median of more of them moves less from one run of the task
/// to the next.
pub(super) fn keyed_rounds(seconds: u32, rounds: u32) -> (u32, u32) {
    ((seconds * 2).div_ceil(5).max(1), 4 * rounds)
}

/// One round of keyed createPet with `run`: the keyed adds, createPet and the adds built per
/// request, in that order's mirror every other round (createPet, built, keyed; then keyed,
/// built, createPet). Each run of adds leaves work behind for the next one (a larger table,
/// the database's autovacuum and checkpoints, SQLite's WAL), and so none of them always runs
/// after the other two.
fn keyed_round(
    round: u32,
    run: &impl Fn(&str) -> Result<wrk::Figures>,
) -> Result<(wrk::Figures, wrk::Figures, wrk::Figures)> {
    if round.is_multiple_of(2) {
        let plain = run("createPet")?;
        let built = run(BUILT_CREATE)?;
        Ok((run(KEYED_CREATE)?, plain, built))
    } else {
        let keyed = run(KEYED_CREATE)?;
        let built = run(BUILT_CREATE)?;
        Ok((keyed, run("createPet")?, built))
    }
}

/// One more round of `name` with wrk on two threads, for the figure beside the budgets':
/// each instance's ratio to the ceiling; for createPet with one endpoint, then the
/// deliveries a second its server makes with no request beside them.
fn two_threads_round(
    name: &str,
    instances: &[Instance],
    (ceiling, receiver): (&Target, &Receiver),
    seconds: u32,
) -> Result<Vec<(f64, Option<f64>)>> {
    let top = wrk::measure(&format!("{}{LIST}", ceiling.base), &ceiling.auth, None, seconds)?;
    let mut figures = Vec::new();
    for instance in instances {
        let (path, script) = scenario(name, instance);
        let url = format!("{}{path}", instance.service.base);
        if name == WITH_ENDPOINT {
            instance.endpoint_enabled(true)?;
        }
        let run = wrk::measure(&url, &instance.service.auth, script, seconds)?;
        let delivered = if name == WITH_ENDPOINT {
            let rate = deliveries_per_second(receiver, seconds);
            instance.endpoint_enabled(false)?;
            Some(rate)
        } else {
            None
        };
        figures.push((run.requests_per_second / top.requests_per_second, delivered));
    }
    Ok(figures)
}

/// One round of createPet with one endpoint with `run`: the adds with the instance's
/// endpoint disabled and enabled, in one order then the other every other round; returns
/// (enabled, disabled). The endpoint is disabled afterwards, and the deliveries it leaves
/// waiting stay so until the next enabled run.
fn endpoint_round(
    round: u32,
    instance: &Instance,
    run: &impl Fn(&str) -> Result<wrk::Figures>,
) -> Result<(wrk::Figures, wrk::Figures)> {
    let measure = |enabled: bool| {
        instance.endpoint_enabled(enabled)?;
        run("createPet")
    };
    let measured = if round.is_multiple_of(2) {
        let without = measure(false)?;
        (measure(true)?, without)
    } else {
        let with = measure(true)?;
        (with, measure(false)?)
    };
    instance.endpoint_enabled(false)?;
    Ok(measured)
}

/// The deliveries a second `receiver` gets over `seconds` (or until they stop coming, for
/// half a second), with the endpoint enabled and no request beside them: the adds of the
/// enabled runs before left tens of thousands waiting.
fn deliveries_per_second(receiver: &Receiver, seconds: u32) -> f64 {
    let start = std::time::Instant::now();
    let first = receiver.received();
    let (mut last, mut last_at) = (first, start);
    while start.elapsed() < std::time::Duration::from_secs(seconds.into()) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let now = receiver.received();
        if now != last {
            (last, last_at) = (now, std::time::Instant::now());
        } else if last_at.elapsed() > std::time::Duration::from_millis(500) {
            break;
        }
    }
    let elapsed = last_at.duration_since(start).as_secs_f64().max(0.001);
    #[expect(clippy::cast_precision_loss, reason = "a count of deliveries")]
    let rate = (last - first) as f64 / elapsed;
    println!("deliveries to the local receiver: {rate:.0} a second");
    rate
}

/// The median of `values` (the mean of the middle two when there are evenly many).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => f64::midpoint(values[n / 2 - 1], values[n / 2]),
    }
}

/// The API's cursor for the page after pet `after`.
fn cursor(after: u64) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("after:{after}"))
}
