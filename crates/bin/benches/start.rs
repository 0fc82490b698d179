//! What a harness pays per restart, the reset of a `memory://` run: the CPU of
//! `animal-store serve` from spawn to its ready file, then a clean stop (SIGTERM), as user
//! and system time of the process. Reported as time per start; docs/benchmarks.md has the
//! figure.

#![expect(missing_docs, reason = "criterion's macros generate undocumented functions")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{Signal, kill};
use nix::sys::time::TimeValLike as _;
use nix::unistd::Pid;

/// The CPU time of this process's waited-for children so far.
fn children_cpu() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let micros = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// Starts the server on `memory://`, waits for its ready file, stops it; its CPU time.
fn start_and_stop(dir: &Path) -> Duration {
    let ready = dir.join("ready.json");
    let before = children_cpu();
    let mut child = Command::new(env!("CARGO_BIN_EXE_animal-store"))
        .args(["serve", "--bind", "127.0.0.1:0", "--ready-file"])
        .arg(&ready)
        .env_clear()
        .env("DATABASE_URL", "memory://")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    for _ in 0..10_000 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    assert!(ready.exists(), "the server wrote its ready file");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    assert!(child.wait().expect("wait").success(), "a clean stop");
    children_cpu().saturating_sub(before)
}

fn starts(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a directory");
    let mut group = c.benchmark_group("memory:// start to ready file and clean stop, CPU");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    group.bench_function("per start", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| start_and_stop(dir.path())).sum());
    });
    group.finish();
}

criterion_group!(benches, starts);
criterion_main!(benches);
