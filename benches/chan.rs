//! The reference comparison: scalechan against crossbeam-channel, flume,
//! kanal (sync API) and `std::sync::mpsc`, on Go's channel benchmark shapes
//! (runtime/chan_test.go, as listed in seeds 000 and 003) and the segment
//! channel article's producer/consumer throughput (seed 004). All libraries
//! run exactly the same code through one harness, the [`Lib`] trait.
//!
//! ```text
//! cargo bench --bench chan                         # full run
//! SCALECHAN_BENCH_QUICK=1 cargo bench --bench chan # quick run (benches/quick.sh)
//! cargo bench --bench chan -- chan_sync            # one group (criterion filter)
//! ```
//!
//! Every benchmark id is `<group>/<library>/<P>`. `P` is the thread count in
//! the sense of Go's `-cpu` flag and runs over 1, 2, 4, 8 and 16: the
//! `RunParallel` shapes run P threads, the producer/consumer shapes P
//! producers *and* P consumers, the ping-pong shapes P pairs. On a 2-core
//! machine most of these are oversubscribed on purpose: they measure how a
//! channel behaves when its threads are preempted (spinning versus parking),
//! not parallel scaling.
//!
//! One criterion iteration is one message (one round trip for the ping-pong
//! shapes, one batch of 100 for the uncontended and contended shapes; the
//! group's `Throughput` says which), so criterion reports time per message
//! and the iteration count can be small enough for the quick mode. Each
//! sample spawns its threads, lines them up on a barrier, and times from the
//! barrier to the last thread's end; `iters` is split as evenly as possible
//! over the threads.
//!
//! One group is not Go's: `chan_recv_timeout` is `chan_uncontended` with
//! every receive a `recv_timeout` that finds its message waiting (a worker
//! that polls for a shutdown between jobs receives this way).
//!
//! Every benchmark checks the number of messages moved and, where the values
//! are numbers, their sum, and that nothing is left in the channel: a
//! broken path panics instead of looking fast.
//!
//! `std::sync::mpsc` is single-consumer: where a shape has several
//! receiving threads (P > 1 in `chan_nonblocking`, `chan_closed`,
//! `chan_contended`, `chan_sem`, the producer/consumer groups), its
//! `Receiver` is shared behind a `Mutex` ([`Lib::receivers`]), so those rows
//! measure `Mutex<Receiver>`, not mpsc alone. With one receiving thread it is
//! used bare. Bounded channels are `sync_channel`, unbounded `channel()`.

mod common;

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The thread counts (Go's `-cpu` values) every workload runs at.
const THREADS: [usize; 5] = [1, 2, 4, 8, 16];

/// Messages per batch in `chan_uncontended` and `chan_contended` (Go's `C`).
const BATCH: u64 = 100;

/// Units of [`local_work`] per message in the `*_work` shapes (Go uses 100).
const WORK: u32 = 100;

/// What a non-blocking receive found.
#[derive(Debug, PartialEq, Eq)]
enum Try<T> {
    Msg(T),
    Empty,
    Closed,
}

/// The common face of the five libraries. Errors where none is expected
/// panic: a benchmark that loses a message must not report a time.
trait Lib {
    const NAME: &'static str;
    type Tx<T: Send + 'static>: Clone + Send + Sync + 'static;
    type Rx<T: Send + 'static>: Send + 'static;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>);
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>);
    /// `n` receiving handles on `rx`'s channel, one per receiving thread.
    /// Clones for the MPMC libraries; see [`StdMpsc`] for std.
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>>;
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T);
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T;
    /// A receive with a timeout ([`TIMEOUT`]) that must not expire.
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T;
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T>;
}

/// The timeout of `chan_recv_timeout`'s receives: long enough never to
/// expire, so that only the cost of a timed receive is measured.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `n` clones of `rx` (the original among them), for the MPMC libraries.
fn clones<R: Clone>(rx: R, n: usize) -> Vec<R> {
    let mut v: Vec<R> = (1..n).map(|_| rx.clone()).collect();
    v.push(rx);
    v
}

struct Scalechan;
struct Crossbeam;
struct Flume;
struct Kanal;
struct StdMpsc;

impl Lib for Scalechan {
    const NAME: &'static str = "scalechan";
    type Tx<T: Send + 'static> = scalechan::Sender<T>;
    type Rx<T: Send + 'static> = scalechan::Receiver<T>;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        scalechan::bounded(cap)
    }
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>) {
        scalechan::unbounded()
    }
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>> {
        clones(rx, n)
    }
    #[inline]
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T) {
        tx.send(msg).expect("scalechan: send failed");
    }
    #[inline]
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv().expect("scalechan: recv failed")
    }
    #[inline]
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv_timeout(TIMEOUT)
            .expect("scalechan: recv_timeout failed")
    }
    #[inline]
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T> {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(scalechan::TryRecvError::Empty) => Try::Empty,
            Err(scalechan::TryRecvError::Closed) => Try::Closed,
        }
    }
}

impl Lib for Crossbeam {
    const NAME: &'static str = "crossbeam-channel";
    type Tx<T: Send + 'static> = crossbeam_channel::Sender<T>;
    type Rx<T: Send + 'static> = crossbeam_channel::Receiver<T>;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        crossbeam_channel::bounded(cap)
    }
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>) {
        crossbeam_channel::unbounded()
    }
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>> {
        clones(rx, n)
    }
    #[inline]
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T) {
        tx.send(msg).expect("crossbeam: send failed");
    }
    #[inline]
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv().expect("crossbeam: recv failed")
    }
    #[inline]
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv_timeout(TIMEOUT)
            .expect("crossbeam: recv_timeout failed")
    }
    #[inline]
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T> {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(crossbeam_channel::TryRecvError::Empty) => Try::Empty,
            Err(crossbeam_channel::TryRecvError::Disconnected) => Try::Closed,
        }
    }
}

impl Lib for Flume {
    const NAME: &'static str = "flume";
    type Tx<T: Send + 'static> = flume::Sender<T>;
    type Rx<T: Send + 'static> = flume::Receiver<T>;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        flume::bounded(cap)
    }
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>) {
        flume::unbounded()
    }
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>> {
        clones(rx, n)
    }
    #[inline]
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T) {
        tx.send(msg).expect("flume: send failed");
    }
    #[inline]
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv().expect("flume: recv failed")
    }
    #[inline]
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv_timeout(TIMEOUT)
            .expect("flume: recv_timeout failed")
    }
    #[inline]
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T> {
        match rx.try_recv() {
            Ok(m) => Try::Msg(m),
            Err(flume::TryRecvError::Empty) => Try::Empty,
            Err(flume::TryRecvError::Disconnected) => Try::Closed,
        }
    }
}

impl Lib for Kanal {
    const NAME: &'static str = "kanal";
    type Tx<T: Send + 'static> = kanal::Sender<T>;
    type Rx<T: Send + 'static> = kanal::Receiver<T>;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        kanal::bounded(cap)
    }
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>) {
        kanal::unbounded()
    }
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>> {
        clones(rx, n)
    }
    #[inline]
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T) {
        tx.send(msg).expect("kanal: send failed");
    }
    #[inline]
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv().expect("kanal: recv failed")
    }
    #[inline]
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        rx.recv_timeout(TIMEOUT)
            .expect("kanal: recv_timeout failed")
    }
    #[inline]
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T> {
        match rx.try_recv() {
            Ok(Some(m)) => Try::Msg(m),
            Ok(None) => Try::Empty,
            Err(_) => Try::Closed,
        }
    }
}

/// std's two sender types behind one face: `sync_channel` for bounded
/// (capacity 0 is std's rendezvous), `channel()` for unbounded.
enum StdTx<T> {
    Bounded(mpsc::SyncSender<T>),
    Unbounded(mpsc::Sender<T>),
}

// By hand: `derive(Clone)` would demand `T: Clone`.
impl<T> Clone for StdTx<T> {
    fn clone(&self) -> Self {
        match self {
            StdTx::Bounded(s) => StdTx::Bounded(s.clone()),
            StdTx::Unbounded(s) => StdTx::Unbounded(s.clone()),
        }
    }
}

/// std's receiver: bare while one thread receives, behind a `Mutex` once
/// [`Lib::receivers`] is asked for several (mpsc has a single consumer).
enum StdRx<T> {
    Own(mpsc::Receiver<T>),
    Shared(Arc<Mutex<mpsc::Receiver<T>>>),
}

impl Lib for StdMpsc {
    const NAME: &'static str = "std mpsc";
    type Tx<T: Send + 'static> = StdTx<T>;
    type Rx<T: Send + 'static> = StdRx<T>;
    fn bounded<T: Send + 'static>(cap: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        let (tx, rx) = mpsc::sync_channel(cap);
        (StdTx::Bounded(tx), StdRx::Own(rx))
    }
    fn unbounded<T: Send + 'static>() -> (Self::Tx<T>, Self::Rx<T>) {
        let (tx, rx) = mpsc::channel();
        (StdTx::Unbounded(tx), StdRx::Own(rx))
    }
    fn receivers<T: Send + 'static>(rx: Self::Rx<T>, n: usize) -> Vec<Self::Rx<T>> {
        match rx {
            StdRx::Own(rx) if n == 1 => vec![StdRx::Own(rx)],
            StdRx::Own(rx) => {
                let shared = Arc::new(Mutex::new(rx));
                (0..n).map(|_| StdRx::Shared(shared.clone())).collect()
            }
            StdRx::Shared(shared) => (0..n).map(|_| StdRx::Shared(shared.clone())).collect(),
        }
    }
    #[inline]
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, msg: T) {
        let r = match tx {
            StdTx::Bounded(tx) => tx.send(msg),
            StdTx::Unbounded(tx) => tx.send(msg),
        };
        r.expect("std mpsc: send failed");
    }
    #[inline]
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        let r = match rx {
            StdRx::Own(rx) => rx.recv(),
            StdRx::Shared(rx) => rx.lock().unwrap().recv(),
        };
        r.expect("std mpsc: recv failed")
    }
    #[inline]
    fn recv_timeout<T: Send + 'static>(rx: &Self::Rx<T>) -> T {
        let r = match rx {
            StdRx::Own(rx) => rx.recv_timeout(TIMEOUT),
            StdRx::Shared(rx) => rx.lock().unwrap().recv_timeout(TIMEOUT),
        };
        r.expect("std mpsc: recv_timeout failed")
    }
    #[inline]
    fn try_recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Try<T> {
        let r = match rx {
            StdRx::Own(rx) => rx.try_recv(),
            StdRx::Shared(rx) => rx.lock().unwrap().try_recv(),
        };
        match r {
            Ok(m) => Try::Msg(m),
            Err(mpsc::TryRecvError::Empty) => Try::Empty,
            Err(mpsc::TryRecvError::Disconnected) => Try::Closed,
        }
    }
}

// ---------------------------------------------------------------------------
// The harness.

/// Thread `i`'s share when `total` is split over `n` threads: as even as
/// possible, the first `total % n` threads take one more.
fn share(total: u64, n: usize, i: usize) -> u64 {
    total / n as u64 + u64::from((i as u64) < total % n as u64)
}

/// Go's `localWork`: `w` dependent integer divisions the optimizer cannot
/// remove, standing in for the work a real program does per message.
#[inline(never)]
fn local_work(w: u32) {
    let mut acc = 0u64;
    for _ in 0..w {
        acc = black_box(acc) / (black_box(acc) + 1);
    }
    black_box(acc);
}

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

/// Runs `body(i, state)` on one thread per element of `states` (each thread
/// pinned to `pin` first, if given). The threads are spawned and line up on
/// a barrier before the clock starts, so thread start-up is not timed.
/// Returns the time from the first thread's start to the last thread's end,
/// and the threads' results in order.
///
/// The workers read the clock themselves: with more threads than cores, a
/// main thread that read it after the barrier could be scheduled only after
/// the workers had done much of the work, and the run would look faster
/// than it was.
fn run_threads<S: Send, R: Send>(
    states: Vec<S>,
    pin: Option<usize>,
    body: impl Fn(usize, S) -> R + Sync,
) -> (Duration, Vec<R>) {
    let barrier = Barrier::new(states.len() + 1);
    let (barrier, body) = (&barrier, &body);
    thread::scope(|s| {
        let handles: Vec<_> = states
            .into_iter()
            .enumerate()
            .map(|(i, state)| {
                s.spawn(move || {
                    #[cfg(target_os = "linux")]
                    if let Some(cpu) = pin {
                        pin_to(cpu);
                    }
                    #[cfg(not(target_os = "linux"))]
                    let _ = pin;
                    barrier.wait();
                    let start = Instant::now();
                    let r = body(i, state);
                    (start, Instant::now(), r)
                })
            })
            .collect();
        barrier.wait();
        let mut span: Option<(Instant, Instant)> = None;
        let mut results = Vec::with_capacity(handles.len());
        for h in handles {
            let (start, end, r) = h.join().unwrap();
            span = Some(span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
            results.push(r);
        }
        let (start, end) = span.expect("no threads");
        (end - start, results)
    })
}

/// Sums pairs of (count, sum) from the threads.
fn totals(results: &[(u64, u64)]) -> (u64, u64) {
    results
        .iter()
        .fold((0, 0), |(n, s), &(dn, ds)| (n + dn, s + ds))
}

/// Panics if a message is still in the channel. Called after every thread
/// has joined: a consumer that checked while others were still receiving
/// could take a message that belongs to another consumer's count.
fn assert_left_empty<L: Lib, T: Send + 'static>(rx: &L::Rx<T>) {
    assert!(
        !matches!(L::try_recv(rx), Try::Msg(_)),
        "{}: messages left over",
        L::NAME
    );
}

/// `1 + 2 + ... + n`.
fn triangle(n: u64) -> u64 {
    n * (n + 1) / 2
}

// ---------------------------------------------------------------------------
// Go's shapes. Each function runs `iters` iterations at thread count `p`
// and returns the timed part.

/// ChanNonblocking: `p` threads poll one empty rendezvous channel with
/// `try_recv` (Go: `select { case <-myc: default: }`).
fn nonblocking<L: Lib>(p: usize, iters: u64) -> Duration {
    let (tx, rx) = L::bounded::<u64>(0);
    let states: Vec<_> = L::receivers(rx, p)
        .into_iter()
        .enumerate()
        .map(|(i, rx)| (rx, share(iters, p, i)))
        .collect();
    let (t, counts) = run_threads(states, None, |_, (rx, n)| {
        for _ in 0..n {
            assert!(matches!(L::try_recv(black_box(&rx)), Try::Empty));
        }
        n
    });
    assert_eq!(counts.iter().sum::<u64>(), iters, "{}: polls", L::NAME);
    drop(tx);
    t
}

/// ChanClosed: as [`nonblocking`] on a closed (all senders dropped), empty
/// rendezvous channel: every `try_recv` must report closed (Go CL 216818).
fn closed<L: Lib>(p: usize, iters: u64) -> Duration {
    let (tx, rx) = L::bounded::<u64>(0);
    drop(tx);
    let states: Vec<_> = L::receivers(rx, p)
        .into_iter()
        .enumerate()
        .map(|(i, rx)| (rx, share(iters, p, i)))
        .collect();
    let (t, counts) = run_threads(states, None, |_, (rx, n)| {
        for _ in 0..n {
            assert!(matches!(L::try_recv(black_box(&rx)), Try::Closed));
        }
        n
    });
    assert_eq!(counts.iter().sum::<u64>(), iters, "{}: polls", L::NAME);
    t
}

/// ChanUncontended: each of `p` threads has its own `bounded(100)` and per
/// iteration sends 100 messages, then receives them. With `timed`, the
/// receives are `recv_timeout`s that find their message waiting
/// (`chan_recv_timeout`, ours: the timed form of a worker's receive).
fn uncontended<L: Lib>(timed: bool, p: usize, iters: u64) -> Duration {
    let states: Vec<_> = (0..p)
        .map(|i| (L::bounded::<u64>(BATCH as usize), share(iters, p, i)))
        .collect();
    let (t, results) = run_threads(states, None, |_, ((tx, rx), batches)| {
        let mut sum = 0;
        for _ in 0..batches {
            for i in 1..=BATCH {
                L::send(&tx, black_box(i));
            }
            for _ in 0..BATCH {
                sum += if timed {
                    L::recv_timeout(&rx)
                } else {
                    L::recv(&rx)
                };
            }
        }
        assert!(
            matches!(L::try_recv(&rx), Try::Empty),
            "{}: left over",
            L::NAME
        );
        (batches * BATCH, sum)
    });
    assert_eq!(
        totals(&results),
        (iters * BATCH, iters * triangle(BATCH)),
        "{}",
        L::NAME
    );
    t
}

/// ChanContended: `p` threads share one `bounded(100 * p)`; per iteration
/// each sends 100 messages, then receives 100 (anyone's). The capacity keeps
/// every send from blocking, and a receiving thread always has its own
/// unreceived messages counted in the channel, so nothing can deadlock.
fn contended<L: Lib>(p: usize, iters: u64) -> Duration {
    let (tx, rx) = L::bounded::<u64>(BATCH as usize * p);
    let states: Vec<_> = L::receivers(rx, p)
        .into_iter()
        .enumerate()
        .map(|(i, rx)| (tx.clone(), rx, share(iters, p, i)))
        .collect();
    let (t, results) = run_threads(states, None, |_, (tx, rx, batches)| {
        let mut sum = 0;
        for _ in 0..batches {
            for i in 1..=BATCH {
                L::send(&tx, black_box(i));
            }
            for _ in 0..BATCH {
                sum += L::recv(&rx);
            }
        }
        ((batches * BATCH, sum), rx)
    });
    let (counts, rxs): (Vec<_>, Vec<_>) = results.into_iter().unzip();
    assert_eq!(
        totals(&counts),
        (iters * BATCH, iters * triangle(BATCH)),
        "{}",
        L::NAME
    );
    assert_left_empty::<L, _>(&rxs[0]);
    t
}

/// ChanSync / ChanSyncWork: `p` pairs of threads, each pair ping-ponging
/// over its own two rendezvous channels (one iteration is a round trip:
/// two messages). Go's version uses one channel both ways, which needs
/// both threads to receive from it; two channels move the same two
/// rendezvous hand-offs per round trip and keep std's receiver unshared.
/// With `work`, each thread does [`local_work`] after every operation, as
/// Go's ChanSyncWork does. `pin` puts every thread on one CPU.
fn sync<L: Lib>(work: bool, pin: Option<usize>, p: usize, iters: u64) -> Duration {
    let mut states = Vec::with_capacity(2 * p);
    for pair in 0..p {
        let (ping_tx, ping_rx) = L::bounded::<u64>(0);
        let (pong_tx, pong_rx) = L::bounded::<u64>(0);
        let rounds = share(iters, p, pair);
        states.push((true, ping_tx, pong_rx, rounds));
        states.push((false, pong_tx, ping_rx, rounds));
    }
    let (t, results) = run_threads(states, pin, |_, (starts, tx, rx, rounds)| {
        let mut checked = 0;
        for i in 0..rounds {
            if starts {
                L::send(&tx, i);
                if work {
                    local_work(WORK);
                }
                let v = L::recv(&rx);
                assert_eq!(v, i + 1, "{}: ping-pong mismatch", L::NAME);
                checked += 1;
            } else {
                let v = L::recv(&rx);
                if work {
                    local_work(WORK);
                }
                L::send(&tx, v + 1);
            }
            if work {
                local_work(WORK);
            }
        }
        checked
    });
    assert_eq!(
        results.iter().sum::<u64>(),
        iters,
        "{}: round trips",
        L::NAME
    );
    t
}

/// ChanProdCons{0,10,100} and ChanProdConsWork{0,10,100}, and seed 004's
/// throughput: `p` producers and `p` consumers over one channel (`cap`
/// None: unbounded). Producer `i` sends `1..=n_i` and consumer `i` takes
/// exactly `n_i` messages (Go hands out work through a shared counter and
/// ends with sentinels; fixed shares make the count and sum checkable).
/// With `work`, both sides do [`local_work`] per message.
fn prod_cons<L: Lib>(cap: Option<usize>, work: bool, p: usize, iters: u64) -> Duration {
    let (tx, rx) = match cap {
        Some(cap) => L::bounded::<u64>(cap),
        None => L::unbounded::<u64>(),
    };
    let mut states = Vec::with_capacity(2 * p);
    for i in 0..p {
        states.push((Some(tx.clone()), None, share(iters, p, i)));
    }
    for (i, rx) in L::receivers(rx, p).into_iter().enumerate() {
        states.push((None, Some(rx), share(iters, p, i)));
    }
    let (t, results) = run_threads(states, None, |_, (tx, rx, n)| {
        let mut sum = 0;
        if let Some(tx) = tx {
            for v in 1..=n {
                if work {
                    local_work(WORK);
                }
                L::send(&tx, v);
            }
            ((0, triangle(n)), None)
        } else {
            let rx = rx.unwrap();
            for _ in 0..n {
                sum += L::recv(&rx);
                if work {
                    local_work(WORK);
                }
            }
            ((n, sum), Some(rx))
        }
    });
    let sent: u64 = results[..p].iter().map(|r| r.0 .1).sum();
    let received: Vec<_> = results[p..].iter().map(|r| r.0).collect();
    assert_eq!(
        totals(&received),
        (iters, sent),
        "{}: messages received",
        L::NAME
    );
    assert_left_empty::<L, _>(results[p].1.as_ref().unwrap());
    drop(tx);
    t
}

/// ChanSem: a `bounded::<()>(p)` used as a semaphore by `p` threads: each
/// iteration acquires (send) and releases (receive).
fn sem<L: Lib>(p: usize, iters: u64) -> Duration {
    let (tx, rx) = L::bounded::<()>(p);
    let states: Vec<_> = L::receivers(rx, p)
        .into_iter()
        .enumerate()
        .map(|(i, rx)| (tx.clone(), rx, share(iters, p, i)))
        .collect();
    let (t, results) = run_threads(states, None, |_, (tx, rx, n)| {
        for _ in 0..n {
            L::send(&tx, ());
            L::recv(&rx);
        }
        (n, rx)
    });
    assert_eq!(
        results.iter().map(|r| r.0).sum::<u64>(),
        iters,
        "{}",
        L::NAME
    );
    assert_left_empty::<L, _>(&results[0].1);
    t
}

/// ChanCreation: `p` threads each create a `bounded(1)`, send one message
/// through it and drop it, per iteration.
fn creation<L: Lib>(p: usize, iters: u64) -> Duration {
    let states: Vec<_> = (0..p).map(|i| share(iters, p, i)).collect();
    let (t, results) = run_threads(states, None, |_, n| {
        let mut sum = 0;
        for v in 1..=n {
            let (tx, rx) = L::bounded::<u64>(1);
            L::send(&tx, black_box(v));
            sum += L::recv(&rx);
        }
        (n, sum)
    });
    let want: u64 = (0..p).map(|i| triangle(share(iters, p, i))).sum();
    assert_eq!(totals(&results), (iters, want), "{}", L::NAME);
    t
}

// ---------------------------------------------------------------------------

/// One benchmark `<group>/<L::NAME>/<p>`.
fn bench_one<L: Lib>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    p: usize,
    run: impl Fn(u64) -> Duration,
) {
    g.bench_with_input(BenchmarkId::new(L::NAME, p), &p, |b, _| b.iter_custom(&run));
}

/// Runs `$shape::<L>($args.., p, iters)` for every thread count and every
/// library, libraries innermost so that the peers at one thread count are
/// measured close together in time (the machine's state drifts).
macro_rules! sweep {
    ($g:expr, $shape:ident ( $($arg:expr),* )) => {{
        for p in THREADS {
            bench_one::<Scalechan>($g, p, |iters| $shape::<Scalechan>($($arg,)* p, iters));
            bench_one::<Crossbeam>($g, p, |iters| $shape::<Crossbeam>($($arg,)* p, iters));
            bench_one::<Flume>($g, p, |iters| $shape::<Flume>($($arg,)* p, iters));
            bench_one::<Kanal>($g, p, |iters| $shape::<Kanal>($($arg,)* p, iters));
            bench_one::<StdMpsc>($g, p, |iters| $shape::<StdMpsc>($($arg,)* p, iters));
        }
    }};
}

/// A group whose iterations move `per_iter` messages each.
fn group<'a>(c: &'a mut Criterion, name: &str, per_iter: u64) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(per_iter));
    g
}

fn benches(c: &mut Criterion) {
    {
        let mut g = group(c, "chan_nonblocking", 1);
        sweep!(&mut g, nonblocking());
        g.finish();
    }
    {
        let mut g = group(c, "chan_closed", 1);
        sweep!(&mut g, closed());
        g.finish();
    }
    {
        let mut g = group(c, "chan_uncontended", BATCH);
        sweep!(&mut g, uncontended(false));
        g.finish();
    }
    {
        let mut g = group(c, "chan_recv_timeout", BATCH);
        sweep!(&mut g, uncontended(true));
        g.finish();
    }
    {
        let mut g = group(c, "chan_contended", BATCH);
        sweep!(&mut g, contended());
        g.finish();
    }
    {
        let mut g = group(c, "chan_sync", 2);
        sweep!(&mut g, sync(false, None));
        g.finish();
    }
    #[cfg(target_os = "linux")]
    {
        let cpu = Some(first_allowed_cpu());
        let mut g = group(c, "chan_sync_one_cpu", 2);
        sweep!(&mut g, sync(false, cpu));
        g.finish();
    }
    {
        let mut g = group(c, "chan_sync_work", 2);
        sweep!(&mut g, sync(true, None));
        g.finish();
    }
    for (work, prefix) in [(false, "chan_prod_cons"), (true, "chan_prod_cons_work")] {
        for cap in [0, 10, 100] {
            let mut g = group(c, &format!("{prefix}_{cap}"), 1);
            sweep!(&mut g, prod_cons(Some(cap), work));
            g.finish();
        }
    }
    {
        let mut g = group(c, "chan_sem", 1);
        sweep!(&mut g, sem());
        g.finish();
    }
    {
        let mut g = group(c, "chan_creation", 1);
        sweep!(&mut g, creation());
        g.finish();
    }
    // Seed 004's producer/consumer throughput: its Unbounded and Bounded1K.
    {
        let mut g = group(c, "unbounded_mpmc", 1);
        sweep!(&mut g, prod_cons(None, false));
        g.finish();
    }
    {
        let mut g = group(c, "bounded_mpmc", 1);
        sweep!(&mut g, prod_cons(Some(1024), false));
        g.finish();
    }

    // Go's select shapes (SelectUncontended, SelectSyncContended,
    // SelectAsyncContended, SelectNonblock, SelectProdCons) and ChanPopular,
    // which is a select benchmark in Go, are in benches/select.rs: only
    // libraries with a select run them.
}

criterion_group! {
    name = chan;
    config = common::config();
    targets = benches
}
criterion_main!(chan);
