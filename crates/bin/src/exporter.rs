//! The Prometheus recorder behind `GET /metrics`: installed once per process, with the
//! histogram buckets of each metric, the process metrics, and the gauges read at scrape
//! time (`docs/operations.md#metrics`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use animal_store_api::telemetry::{self, DURATION_BUCKETS, MetricsExporter, REQUEST_DURATION};
use animal_store_infra::{BATCH_SIZE_METRIC, POOL_METRIC, PoolMetrics, READ_CACHE_METRIC};
use anyhow::Context;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// The buckets of the write batch size: the writer commits 1 to 64 writes at once.
const BATCH_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
/// How often recorded histogram samples are folded into their buckets.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// The process's recorder, once installed.
static RECORDER: OnceLock<PrometheusHandle> = OnceLock::new();

/// What `/metrics` renders.
pub struct PrometheusExporter {
    handle: PrometheusHandle,
    process: metrics_process::Collector,
    pool: Option<PoolMetrics>,
}

impl PrometheusExporter {
    /// Installs the recorder (once per process; later calls share it) and returns the
    /// exporter, reporting `pool` too when there is one. Must run inside the runtime: it
    /// starts the histograms' upkeep.
    pub fn install(pool: Option<PoolMetrics>) -> anyhow::Result<Arc<Self>> {
        let handle = recorder()?;
        let process = metrics_process::Collector::default();
        process.describe();
        Ok(Arc::new(Self { handle, process, pool }))
    }
}

/// The gauge that says which build runs: 1, labelled with its version and schema level.
pub const BUILD_INFO: &str = "animal_store_build_info";

/// The process's recorder: installed, with its histograms' upkeep, on the first call.
fn recorder() -> anyhow::Result<PrometheusHandle> {
    if let Some(handle) = RECORDER.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(REQUEST_DURATION.into()), &DURATION_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(BATCH_SIZE_METRIC.into()), &BATCH_BUCKETS)
        })
        .context("the metrics' buckets")?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(UPKEEP_INTERVAL).await;
            upkeep.run_upkeep();
        }
    });
    telemetry::describe();
    metrics::describe_histogram!(
        BATCH_SIZE_METRIC,
        "Writes committed together in one transaction."
    );
    metrics::describe_gauge!(POOL_METRIC, "Connections of the database readers' pool, by state.");
    metrics::describe_counter!(
        READ_CACHE_METRIC,
        "Pet reads on SQLite by result: hit (answered from the read cache) or miss."
    );
    crate::deliveries::describe_metrics();
    metrics::describe_gauge!(
        BUILD_INFO,
        "1, with the version of the running binary and its schema level as labels."
    );
    let schema = animal_store_infra::Database::schema_level().to_string();
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION"), "schema" => schema)
        .set(1.0);
    Ok(RECORDER.get_or_init(|| handle).clone())
}

impl MetricsExporter for PrometheusExporter {
    fn render(&self) -> String {
        self.process.collect();
        if let Some(pool) = &self.pool {
            pool.record();
        }
        self.handle.render()
    }
}
