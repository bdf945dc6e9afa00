//! Channel benchmarks: scalechan against crossbeam-channel, flume and kanal
//! (sync API), all through one harness (the [`Lib`] trait), so every library
//! runs exactly the same code. Throughput is in messages, so criterion reports
//! time per message.
//!
//! ```text
//! cargo bench --bench chan                                   # full run
//! cargo bench --bench chan -- --warm-up-time 0.5 --measurement-time 1 chan_sync
//! ```
//!
//! Groups:
//! - `chan_uncontended`: one thread, `bounded(100)`: 100 sends then 100 receives.
//! - `chan_nonblocking`: `try_recv` on an empty `bounded(1)` and `bounded(0)`.
//! - `chan_closed`: `try_recv` on a closed, empty channel.
//! - `chan_sync`: ping-pong over two `bounded(0)` channels, 2 threads.
//! - `chan_sync_one_cpu`: the same with both threads pinned to one CPU (Linux).
//! - `chan_prod_cons_{0,10,100}`: 1, 2, 4, 8 producer/consumer pairs over
//!   `bounded(cap)`, 10 000 messages per iteration.
//! - `unbounded_mpmc`: the same over `unbounded()`.
//!
//! Every benchmark checks that the right messages arrived.

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// The message type of every benchmark.
type Msg = u64;

/// What a non-blocking receive found.
#[derive(Debug, PartialEq, Eq)]
enum Try {
    Msg(Msg),
    Empty,
    Closed,
}

/// The common face of the four libraries. Errors where none is expected
/// panic: a benchmark that loses a message must not report a time.
trait Lib {
    const NAME: &'static str;
    type Tx: Clone + Send + Sync + 'static;
    type Rx: Clone + Send + Sync + 'static;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx);
    fn unbounded() -> (Self::Tx, Self::Rx);
    fn send(tx: &Self::Tx, msg: Msg);
    fn recv(rx: &Self::Rx) -> Msg;
    fn try_recv(rx: &Self::Rx) -> Try;
}

struct Scalechan;
struct Crossbeam;
struct Flume;
struct Kanal;

impl Lib for Scalechan {
    const NAME: &'static str = "scalechan";
    type Tx = scalechan::Sender<Msg>;
    type Rx = scalechan::Receiver<Msg>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        scalechan::bounded(cap)
    }
    fn unbounded() -> (Self::Tx, Self::Rx) {
        scalechan::unbounded()
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("scalechan: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("scalechan: recv failed")
    }
    #[inline]
    fn try_recv(rx: &Self::Rx) -> Try {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(scalechan::TryRecvError::Empty) => Try::Empty,
            Err(scalechan::TryRecvError::Closed) => Try::Closed,
        }
    }
}

impl Lib for Crossbeam {
    const NAME: &'static str = "crossbeam-channel";
    type Tx = crossbeam_channel::Sender<Msg>;
    type Rx = crossbeam_channel::Receiver<Msg>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(cap)
    }
    fn unbounded() -> (Self::Tx, Self::Rx) {
        crossbeam_channel::unbounded()
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("crossbeam: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("crossbeam: recv failed")
    }
    #[inline]
    fn try_recv(rx: &Self::Rx) -> Try {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(crossbeam_channel::TryRecvError::Empty) => Try::Empty,
            Err(crossbeam_channel::TryRecvError::Disconnected) => Try::Closed,
        }
    }
}

impl Lib for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<Msg>;
    type Rx = flume::Receiver<Msg>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        flume::bounded(cap)
    }
    fn unbounded() -> (Self::Tx, Self::Rx) {
        flume::unbounded()
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("flume: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("flume: recv failed")
    }
    #[inline]
    fn try_recv(rx: &Self::Rx) -> Try {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(flume::TryRecvError::Empty) => Try::Empty,
            Err(flume::TryRecvError::Disconnected) => Try::Closed,
        }
    }
}

impl Lib for Kanal {
    const NAME: &'static str = "kanal";
    type Tx = kanal::Sender<Msg>;
    type Rx = kanal::Receiver<Msg>;
    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        kanal::bounded(cap)
    }
    fn unbounded() -> (Self::Tx, Self::Rx) {
        kanal::unbounded()
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("kanal: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("kanal: recv failed")
    }
    #[inline]
    fn try_recv(rx: &Self::Rx) -> Try {
        match rx.try_recv() {
            Ok(Some(m)) => Try::Msg(m),
            Ok(None) => Try::Empty,
            Err(_) => Try::Closed,
        }
    }
}

/// Runs `$f::<L>($args)` for each library, in a fixed order.
macro_rules! for_each_lib {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        $f::<Scalechan>($($arg),*);
        $f::<Crossbeam>($($arg),*);
        $f::<Flume>($($arg),*);
        $f::<Kanal>($($arg),*);
    }};
}

// ---------------------------------------------------------------------------
// Single-threaded.

fn uncontended<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>) {
    let (tx, rx) = L::bounded(100);
    g.bench_function(L::NAME, |b| {
        b.iter(|| {
            for i in 0..100 {
                L::send(&tx, black_box(i));
            }
            let mut sum = 0;
            for _ in 0..100 {
                sum += L::recv(&rx);
            }
            assert_eq!(sum, 99 * 100 / 2);
        })
    });
    assert_eq!(L::try_recv(&rx), Try::Empty);
}

fn nonblocking<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>, cap: usize) {
    let (_tx, rx) = L::bounded(cap);
    g.bench_function(BenchmarkId::new(L::NAME, format!("bounded({cap})")), |b| {
        b.iter(|| assert_eq!(L::try_recv(black_box(&rx)), Try::Empty))
    });
}

fn closed<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>) {
    let (tx, rx) = L::bounded(1);
    drop(tx); // the last sender: the channel is closed (disconnected)
    g.bench_function(L::NAME, |b| {
        b.iter(|| assert_eq!(L::try_recv(black_box(&rx)), Try::Closed))
    });
}

// ---------------------------------------------------------------------------
// Multi-threaded: each criterion sample spawns its threads once and moves
// `iters` iterations' worth of messages, so thread start-up is amortized.

/// Pins the calling thread to `cpu` (Linux only).
#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data, zeroed is a valid (empty) set, and
    // sched_setaffinity reads exactly size_of::<cpu_set_t>() bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(rc, 0, "sched_setaffinity({cpu}) failed");
    }
}

/// The lowest CPU this process may run on ("CPU 0" unless restricted).
#[cfg(target_os = "linux")]
fn first_allowed_cpu() -> usize {
    // SAFETY: as in pin_to; sched_getaffinity writes at most the given size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(rc, 0, "sched_getaffinity failed");
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .expect("no allowed CPU")
    }
}

/// `iters` round trips over two rendezvous channels; both threads pinned to
/// `pin` if given.
fn ping_pong<L: Lib>(iters: u64, pin: Option<usize>) -> Duration {
    let (tx1, rx1) = L::bounded(0);
    let (tx2, rx2) = L::bounded(0);
    let pin_me = move || {
        #[cfg(target_os = "linux")]
        if let Some(cpu) = pin {
            pin_to(cpu);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = pin;
    };
    thread::scope(|s| {
        s.spawn(|| {
            pin_me();
            for _ in 0..iters {
                let v = L::recv(&rx1);
                L::send(&tx2, v + 1);
            }
        });
        s.spawn(|| {
            pin_me();
            let start = Instant::now();
            for i in 0..iters {
                L::send(&tx1, i);
                assert_eq!(L::recv(&rx2), i + 1, "{}: ping-pong mismatch", L::NAME);
            }
            start.elapsed()
        })
        .join()
        .unwrap()
    })
}

fn sync<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>, pin: Option<usize>) {
    g.bench_function(L::NAME, |b| {
        b.iter_custom(|iters| ping_pong::<L>(iters, pin))
    });
}

/// Messages moved per iteration in the producer/consumer benchmarks.
const MSGS: u64 = 10_000;

/// `pairs` producers and `pairs` consumers move `iters * MSGS` messages over
/// one channel (`cap` None: unbounded). Each producer sends `0..n` and each
/// consumer takes exactly `n`, where `n = iters * MSGS / pairs`; the count and
/// the sum received are checked.
fn prod_cons<L: Lib>(cap: Option<usize>, pairs: u64, iters: u64) -> Duration {
    let total = iters * MSGS;
    assert_eq!(total % pairs, 0);
    let per_thread = total / pairs;
    let (tx, rx) = match cap {
        Some(cap) => L::bounded(cap),
        None => L::unbounded(),
    };
    let barrier = Barrier::new(2 * pairs as usize + 1);
    let (elapsed, received, sum) = thread::scope(|s| {
        for _ in 0..pairs {
            let tx = tx.clone();
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    L::send(&tx, i);
                }
            });
        }
        let consumers: Vec<_> = (0..pairs)
            .map(|_| {
                let rx = rx.clone();
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let mut sum = 0u64;
                    for _ in 0..per_thread {
                        sum += L::recv(&rx);
                    }
                    (per_thread, sum)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let (mut received, mut sum) = (0u64, 0u64);
        for c in consumers {
            let (n, s) = c.join().unwrap();
            received += n;
            sum += s;
        }
        (start.elapsed(), received, sum)
    });
    assert_eq!(received, total, "{}: wrong number of messages", L::NAME);
    assert_eq!(
        sum,
        pairs * (per_thread * (per_thread - 1) / 2),
        "{}: wrong messages received",
        L::NAME
    );
    assert_eq!(
        L::try_recv(&rx),
        Try::Empty,
        "{}: messages left over",
        L::NAME
    );
    elapsed
}

fn prod_cons_group<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>, cap: Option<usize>) {
    for pairs in [1u64, 2, 4, 8] {
        g.bench_with_input(BenchmarkId::new(L::NAME, pairs), &pairs, |b, &pairs| {
            b.iter_custom(|iters| prod_cons::<L>(cap, pairs, iters))
        });
    }
}

// ---------------------------------------------------------------------------

fn benches(c: &mut Criterion) {
    {
        let mut g = c.benchmark_group("chan_uncontended");
        g.throughput(Throughput::Elements(100));
        for_each_lib!(uncontended(&mut g));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("chan_nonblocking");
        g.throughput(Throughput::Elements(1));
        for cap in [1, 0] {
            for_each_lib!(nonblocking(&mut g, cap));
        }
        g.finish();
    }
    {
        let mut g = c.benchmark_group("chan_closed");
        g.throughput(Throughput::Elements(1));
        for_each_lib!(closed(&mut g));
        g.finish();
    }
    {
        // One iteration is a round trip: two messages.
        let mut g = c.benchmark_group("chan_sync");
        g.throughput(Throughput::Elements(2));
        for_each_lib!(sync(&mut g, None));
        g.finish();
    }
    #[cfg(target_os = "linux")]
    {
        let cpu = first_allowed_cpu();
        let mut g = c.benchmark_group("chan_sync_one_cpu");
        g.throughput(Throughput::Elements(2));
        for_each_lib!(sync(&mut g, Some(cpu)));
        g.finish();
    }
    for cap in [0, 10, 100] {
        let mut g = c.benchmark_group(format!("chan_prod_cons_{cap}"));
        g.throughput(Throughput::Elements(MSGS));
        for_each_lib!(prod_cons_group(&mut g, Some(cap)));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("unbounded_mpmc");
        g.throughput(Throughput::Elements(MSGS));
        for_each_lib!(prod_cons_group(&mut g, None));
        g.finish();
    }
}

criterion_group! {
    name = chan;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(chan);
