#!/usr/bin/env bash
# The whole comparison in quick mode, then the memory figure and the report:
#
#   benches/quick.sh            # all groups: channels, select, queues (about 3 min of benchmarks on 2 cores)
#   benches/quick.sh chan_sync  # only groups matching a criterion filter
#
# SCALECHAN_BENCH_QUICK=1 (benches/common/mod.rs) shortens every benchmark
# to 50 ms of warm-up, 150 ms of measurement and 10 samples. The full mode
# is plain `cargo bench`, followed by the last two commands below.
#
# The criterion results directory is emptied first, so the report only
# holds figures from this run.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

# Build first, so the timing below is the benchmarks alone.
cargo bench --no-run --bench chan --bench queues --bench select
cargo build --release --example bench_memory --example bench_report

rm -rf "$target/criterion"
start=$(date +%s)
if [ $# -gt 0 ]; then
    SCALECHAN_BENCH_QUICK=1 cargo bench --bench chan --bench queues --bench select -- "$@"
else
    SCALECHAN_BENCH_QUICK=1 cargo bench --bench chan --bench queues --bench select
fi
secs=$(($(date +%s) - start))
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- src benches 2>/dev/null || commit="$commit + uncommitted changes"
echo "quick mode (benches/quick.sh${*:+ $*}) at commit ${commit}: 50 ms warm-up, 150 ms measurement, 10 samples per benchmark; all benchmarks took ${secs} s of wall time" \
    >"$target/criterion/run-info.txt"
echo "benchmarks: ${secs} s wall time"

mkdir -p docs/bench
cargo run --release --example bench_memory -- docs/bench/memory.md
cargo run --release --example bench_report
