//! Shared by the bench targets (`mod common;` in each): the criterion
//! configuration, full or quick.
//!
//! `SCALECHAN_BENCH_QUICK=1` selects the quick mode that `benches/quick.sh`
//! uses: short warm-up and measurement, the minimum of 10 samples and fewer
//! bootstrap resamples, so the whole comparison (several hundred benchmarks)
//! fits in a few minutes on 2 cores. The numbers are then rough (a sample is
//! tens of milliseconds), but every benchmark still runs and still checks the
//! messages it moved. Without the variable, `cargo bench` is the full run.

use criterion::Criterion;
use std::time::Duration;

/// True when `SCALECHAN_BENCH_QUICK` is set to anything but `0` or empty.
pub fn quick() -> bool {
    std::env::var("SCALECHAN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The criterion configuration for every group. Groups do not override it,
/// so the quick mode reaches all of them.
pub fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.sample_size(10)
            .warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(150))
            // The default 100 000 resamples take longer than the
            // measurement itself at this size; the median barely moves.
            .nresamples(2_000)
    } else {
        c.sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(2))
    }
}
