//! Scq (inline values, and `Scq (slots)` with out-of-line values) vs
//! crossbeam ArrayQueue vs concurrent-queue (bounded), and Lscq vs
//! crossbeam SegQueue vs concurrent-queue (unbounded), on the workloads of
//! the LSCQ article (seed 002) at 1, 2, 4, 8 and 16 threads.
//!
//! Every benchmark times the whole multi-threaded run (`iter_custom`) and
//! reports time per operation (per push+pop pair for `queue_pair`). Every
//! run checks that the number of values pushed equals the number popped plus
//! the number left in the queue. Peers run interleaved in one group, so they
//! see the same machine state (NOTES.md: cross-core latency moves 3-10x
//! between runs here).
//!
//! `cargo bench --bench queues -- --warm-up-time 1 --measurement-time 2`,
//! or `SCALECHAN_BENCH_QUICK=1` for the quick mode (benches/common/mod.rs).

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// Capacity of the bounded queues (and chunk size of `queue_enqueue_only`).
const CAP: usize = 1 << 12;

trait Queue: Send + Sync + 'static {
    const NAME: &'static str;
    fn make() -> Self;
    fn push(&self, v: u64) -> bool;
    fn pop(&self) -> Option<u64>;
}

impl Queue for scalechan::Scq<u64> {
    const NAME: &'static str = "Scq";
    fn make() -> Self {
        Self::with_capacity(CAP)
    }
    fn push(&self, v: u64) -> bool {
        scalechan::Scq::push(self, v).is_ok()
    }
    fn pop(&self) -> Option<u64> {
        scalechan::Scq::pop(self)
    }
}

impl Queue for crossbeam_queue::ArrayQueue<u64> {
    const NAME: &'static str = "crossbeam ArrayQueue";
    fn make() -> Self {
        Self::new(CAP)
    }
    fn push(&self, v: u64) -> bool {
        crossbeam_queue::ArrayQueue::push(self, v).is_ok()
    }
    fn pop(&self) -> Option<u64> {
        crossbeam_queue::ArrayQueue::pop(self)
    }
}

/// A `u64` too aligned for an entry's 8-byte payload: makes `Scq` and
/// `Lscq` use the out-of-line layout (slot array plus free-slot ring), so
/// the two layouts are measured against each other on the same values.
#[derive(Clone, Copy)]
#[repr(align(16))]
struct Wide(u64);

/// `Scq` with out-of-line values (see [`Wide`]).
struct ScqSlots(scalechan::Scq<Wide>);
impl Queue for ScqSlots {
    const NAME: &'static str = "Scq (slots)";
    fn make() -> Self {
        ScqSlots(scalechan::Scq::with_capacity(CAP))
    }
    fn push(&self, v: u64) -> bool {
        self.0.push(Wide(v)).is_ok()
    }
    fn pop(&self) -> Option<u64> {
        self.0.pop().map(|w| w.0)
    }
}

/// `Lscq` with out-of-line values (see [`Wide`]).
struct LscqSlots(scalechan::Lscq<Wide>);
impl Queue for LscqSlots {
    const NAME: &'static str = "Lscq (slots)";
    fn make() -> Self {
        LscqSlots(scalechan::Lscq::new())
    }
    fn push(&self, v: u64) -> bool {
        self.0.push(Wide(v));
        true
    }
    fn pop(&self) -> Option<u64> {
        self.0.pop().map(|w| w.0)
    }
}

struct CqBounded(concurrent_queue::ConcurrentQueue<u64>);
impl Queue for CqBounded {
    const NAME: &'static str = "concurrent-queue bounded";
    fn make() -> Self {
        CqBounded(concurrent_queue::ConcurrentQueue::bounded(CAP))
    }
    fn push(&self, v: u64) -> bool {
        self.0.push(v).is_ok()
    }
    fn pop(&self) -> Option<u64> {
        self.0.pop().ok()
    }
}

impl Queue for scalechan::Lscq<u64> {
    const NAME: &'static str = "Lscq";
    fn make() -> Self {
        Self::new()
    }
    fn push(&self, v: u64) -> bool {
        scalechan::Lscq::push(self, v);
        true
    }
    fn pop(&self) -> Option<u64> {
        scalechan::Lscq::pop(self)
    }
}

impl Queue for crossbeam_queue::SegQueue<u64> {
    const NAME: &'static str = "crossbeam SegQueue";
    fn make() -> Self {
        Self::new()
    }
    fn push(&self, v: u64) -> bool {
        crossbeam_queue::SegQueue::push(self, v);
        true
    }
    fn pop(&self) -> Option<u64> {
        crossbeam_queue::SegQueue::pop(self)
    }
}

struct CqUnbounded(concurrent_queue::ConcurrentQueue<u64>);
impl Queue for CqUnbounded {
    const NAME: &'static str = "concurrent-queue unbounded";
    fn make() -> Self {
        CqUnbounded(concurrent_queue::ConcurrentQueue::unbounded())
    }
    fn push(&self, v: u64) -> bool {
        self.0.push(v).is_ok()
    }
    fn pop(&self) -> Option<u64> {
        self.0.pop().ok()
    }
}

#[derive(Clone, Copy)]
enum Workload {
    Pair,
    EnqueueOnly,
    DequeueEmpty,
    /// Percentage of pushes in a random mix.
    Mix(u32),
}

/// Runs `iters` operations split over `threads` threads; returns the time
/// of the timed part: for the one-pass workloads, from the first thread's
/// start to the last thread's end, each thread reading the clock itself (a
/// single timing thread that is descheduled right after the barrier, likely
/// with more threads than cores, would start its clock late).
fn run<Q: Queue>(w: Workload, threads: usize, iters: u64) -> Duration {
    let q = Arc::new(Q::make());
    let pushed = Arc::new(AtomicU64::new(0));
    let popped = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads));
    let per = iters / threads as u64 + 1;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (q, pushed, popped, barrier) =
                (q.clone(), pushed.clone(), popped.clone(), barrier.clone());
            thread::spawn(move || -> (Duration, Option<(Instant, Instant)>) {
                let (mut ok_push, mut ok_pop) = (0u64, 0u64);
                let mut timed = Duration::ZERO;
                let mut span = None;
                match w {
                    Workload::EnqueueOnly => {
                        // Rounds of CAP pushes in all; the leader drains
                        // between rounds, untimed.
                        let chunk = (CAP / threads) as u64;
                        let mut left = per;
                        let rounds = per.div_ceil(chunk);
                        for _ in 0..rounds {
                            let n = left.min(chunk);
                            left -= n;
                            barrier.wait();
                            let start = Instant::now();
                            for i in 0..n {
                                ok_push += q.push(i) as u64;
                            }
                            barrier.wait();
                            if t == 0 {
                                timed += start.elapsed();
                                while q.pop().is_some() {
                                    ok_pop += 1;
                                }
                            }
                        }
                    }
                    _ => {
                        let mut rng = fastrand::Rng::with_seed(t as u64 + 1);
                        barrier.wait();
                        let start = Instant::now();
                        for i in 0..per {
                            match w {
                                Workload::Pair => {
                                    if q.push(i) {
                                        ok_push += 1;
                                        loop {
                                            if q.pop().is_some() {
                                                ok_pop += 1;
                                                break;
                                            }
                                            std::hint::spin_loop();
                                        }
                                    }
                                }
                                Workload::DequeueEmpty => {
                                    ok_pop += q.pop().is_some() as u64;
                                }
                                Workload::Mix(pct) => {
                                    if rng.u32(0..100) < pct {
                                        ok_push += q.push(i) as u64;
                                    } else {
                                        ok_pop += q.pop().is_some() as u64;
                                    }
                                }
                                Workload::EnqueueOnly => unreachable!(),
                            }
                        }
                        span = Some((start, Instant::now()));
                    }
                }
                pushed.fetch_add(ok_push, Ordering::Relaxed);
                popped.fetch_add(ok_pop, Ordering::Relaxed);
                (timed, span)
            })
        })
        .collect();
    let mut timed = Duration::ZERO;
    let mut span: Option<(Instant, Instant)> = None;
    for h in handles {
        let (t, s) = h.join().unwrap();
        timed += t;
        if let Some((start, end)) = s {
            span = Some(span.map_or((start, end), |(a, b)| (a.min(start), b.max(end))));
        }
    }
    if let Some((start, end)) = span {
        timed += end - start;
    }
    let mut left = 0u64;
    while q.pop().is_some() {
        left += 1;
    }
    let (pushed, popped) = (
        pushed.load(Ordering::Relaxed),
        popped.load(Ordering::Relaxed),
    );
    assert_eq!(
        pushed,
        popped + left,
        "{}: items lost or duplicated",
        Q::NAME
    );
    match w {
        Workload::Pair => assert_eq!(pushed, per * threads as u64, "{}: pair count", Q::NAME),
        Workload::EnqueueOnly => {
            assert_eq!(pushed, per * threads as u64, "{}: push count", Q::NAME)
        }
        Workload::DequeueEmpty => assert_eq!(popped, 0, "{}: popped from empty", Q::NAME),
        Workload::Mix(_) => {}
    }
    // Per operation as criterion sees it: scale to the requested count.
    timed.mul_f64(iters as f64 / (per * threads as u64) as f64)
}

fn bench_kind<A: Queue, S: Queue, B: Queue, C: Queue>(c: &mut Criterion, kind: &str) {
    let workloads = [
        ("queue_pair", Workload::Pair),
        ("queue_enqueue_only", Workload::EnqueueOnly),
        ("queue_dequeue_empty", Workload::DequeueEmpty),
        ("queue_50e50d", Workload::Mix(50)),
        ("queue_30e70d", Workload::Mix(30)),
        ("queue_70e30d", Workload::Mix(70)),
    ];
    for (name, w) in workloads {
        let mut g = c.benchmark_group(format!("{kind}/{name}"));
        g.sample_size(10);
        for threads in [1usize, 2, 4, 8, 16] {
            g.bench_function(BenchmarkId::new(A::NAME, threads), |b| {
                b.iter_custom(|iters| run::<A>(w, threads, iters))
            });
            g.bench_function(BenchmarkId::new(S::NAME, threads), |b| {
                b.iter_custom(|iters| run::<S>(w, threads, iters))
            });
            g.bench_function(BenchmarkId::new(B::NAME, threads), |b| {
                b.iter_custom(|iters| run::<B>(w, threads, iters))
            });
            g.bench_function(BenchmarkId::new(C::NAME, threads), |b| {
                b.iter_custom(|iters| run::<C>(w, threads, iters))
            });
        }
        g.finish();
    }
}

fn bounded(c: &mut Criterion) {
    bench_kind::<scalechan::Scq<u64>, ScqSlots, crossbeam_queue::ArrayQueue<u64>, CqBounded>(
        c, "bounded",
    );
}

fn unbounded(c: &mut Criterion) {
    bench_kind::<scalechan::Lscq<u64>, LscqSlots, crossbeam_queue::SegQueue<u64>, CqUnbounded>(
        c,
        "unbounded",
    );
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = bounded, unbounded
}
criterion_main!(benches);
