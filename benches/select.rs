//! Select benchmarks: scalechan's `select!` against crossbeam-channel's
//! `select!` and flume's `Selector`, on the shapes of Go's
//! `BenchmarkSelect*` (runtime/chan_test.go; seeds 000 and 003). Every
//! library implements the same select shapes (the [`Lib`] trait) and runs
//! them through one harness, so the loops around the selects are identical.
//! Throughput is in elements, so criterion reports time per select (or per
//! message for the producer/consumer group).
//!
//! ```text
//! cargo bench --bench select                                  # full run
//! cargo bench --bench select -- --warm-up-time 0.5 --measurement-time 2
//! SCALECHAN_BENCH_QUICK=1 cargo bench --bench select          # quick mode (benches/common)
//! ```
//!
//! Groups (an "op" is what the reported time is per):
//! - `select_uncontended`: one thread, two `bounded(1)` channels.
//!   `recv`: Go's `BenchmarkSelectUncontended`: one token; each op selects a
//!   receive over both channels and sends the token on the other one with a
//!   plain send. `send`: its mirror image: one channel full, each op selects
//!   a send over both (exactly one has room) and then empties the other one
//!   with a plain receive, so the send arm fires on alternate channels.
//! - `select_contended`: Go's `BenchmarkSelectAsyncContended`: 1 to 16
//!   threads, each with one token, share two `bounded(threads)` channels;
//!   each op selects a receive over both and sends the token on the other.
//!   (Go sizes the channels to the thread count; with `bounded(1)` most
//!   threads would sit in the plain send, which is not what is measured.)
//! - `select_sync_contended`: Go's `BenchmarkSelectSyncContended`: 1 to 16
//!   receiver threads each select a receive over three shared rendezvous
//!   channels; each has a helper thread that selects a send over the three
//!   plus a receive on a `done` channel (which stops it).
//! - `select_prodcons_{0,1,10}`: after Go's `BenchmarkSelectProdCons`: 1 to
//!   16 producer/consumer pairs on one `bounded(cap)` channel. Producers
//!   select a send on it or a receive on a quit channel or an hour-long timer
//!   (neither ever ready); consumers select a receive on it or the same two.
//!   Go's ~100-instruction "local work" between selects is left out: with
//!   two cores it would only dilute the select cost.
//! - `chan_popular`: Go's `BenchmarkChanPopular`, 1 to 16 workers, each
//!   selecting over one shared channel that never fires and its own.
//! - `select_nonblock`: Go's `BenchmarkSelectNonblock`, one thread, nothing
//!   ever ready. `single`: Go's op, four one-case selects with `default`
//!   (receive on an empty rendezvous channel, send on a rendezvous channel
//!   with no receiver, receive on an empty `bounded(1)`, send on a full
//!   `bounded(1)`). `multi`: one select over the same four cases plus
//!   `default`.
//!
//! flume is left out of `select_sync_contended` (a flume `Selector` with
//! several send arms can deliver on more than one of them, which that
//! group's check catches) and runs `select_prodcons_*` with one pair only
//! (with more, a consumer's `Selector` can miss the close and park forever).
//!
//! flume has no `default` arm and no timer channels: its non-blocking select
//! is `wait_timeout(Duration::ZERO)` (which registers and withdraws a hook per
//! case), and its "timer" is a channel nobody sends on.
//!
//! Every benchmark checks the number of messages moved and, where a sum is
//! cheap, their sum; a run that loses or invents a message panics instead of
//! reporting a time.

mod common;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// The message type of every benchmark.
type Msg = u64;

/// An hour: long enough that the timer cases never fire during a run.
const HOUR: Duration = Duration::from_secs(3600);

/// Messages (or selects) per criterion iteration in the multi-threaded
/// groups: each sample spawns its threads once, and a batch this size makes
/// thread start-up small next to the work even when an op costs microseconds.
const BATCH: u64 = 1000;

/// The common face of the three libraries: the channel basics plus one
/// method per select shape. Each method is a single select, so the harness
/// loops are shared; errors where none is expected panic.
trait Lib {
    const NAME: &'static str;
    type Tx: Clone + Send + Sync + 'static;
    type Rx: Clone + Send + Sync + 'static;
    /// A receiver that does not become ready during a run (Go's
    /// `time.After(time.Hour)`).
    type Timer;

    fn bounded(cap: usize) -> (Self::Tx, Self::Rx);
    fn timer() -> Self::Timer;
    fn send(tx: &Self::Tx, msg: Msg);
    fn recv(rx: &Self::Rx) -> Msg;
    /// A message if one is there now; `None` if empty (or closed and empty).
    fn try_recv(rx: &Self::Rx) -> Option<Msg>;

    /// `select { recv(a), recv(b) }`: which arm fired, and its message.
    fn recv2(a: &Self::Rx, b: &Self::Rx) -> (usize, Msg);
    /// `select { send(a, msg), send(b, msg) }`: which arm fired.
    fn send2(a: &Self::Tx, b: &Self::Tx, msg: Msg) -> usize;
    /// `select { recv(c[0]), recv(c[1]), recv(c[2]) }`.
    fn recv3(c: &[Self::Rx; 3]) -> Msg;
    /// `select { send(c[0..3], msg), recv(done) }`: `true` if sent, `false`
    /// if `done` was closed.
    fn send3_or_done(c: &[Self::Tx; 3], done: &Self::Rx, msg: Msg) -> bool;
    /// `select { send(tx, msg), recv(quit), recv(timer) }`.
    fn send_or_quit(tx: &Self::Tx, quit: &Self::Rx, timer: &Self::Timer, msg: Msg);
    /// `select { recv(rx), recv(quit), recv(timer) }`: `None` once `rx` is
    /// closed and drained.
    fn recv_or_quit(rx: &Self::Rx, quit: &Self::Rx, timer: &Self::Timer) -> Option<Msg>;
    /// Four one-case selects with `default` (see [`Nonblock`]): how many
    /// took `default`.
    fn nonblock_single(c: &Nonblock<Self>) -> u64;
    /// One select over the four cases of [`Nonblock`] plus `default`:
    /// whether it took `default`.
    fn nonblock_multi(c: &Nonblock<Self>) -> bool;
}

/// The channels of `select_nonblock`; none of the four cases is ever ready.
struct Nonblock<L: Lib + ?Sized> {
    /// Receive side of an empty rendezvous channel.
    empty_sync: L::Rx,
    /// Send side of a rendezvous channel nobody receives on.
    lonely_sync: L::Tx,
    /// Receive side of an empty `bounded(1)`.
    empty_async: L::Rx,
    /// Send side of a full `bounded(1)`.
    full_async: L::Tx,
    /// The other ends, held so that no channel is closed.
    _keep: (L::Tx, L::Rx, L::Tx, L::Rx),
}

impl<L: Lib> Nonblock<L> {
    fn new() -> Self {
        let (keep_a, empty_sync) = L::bounded(0);
        let (lonely_sync, keep_b) = L::bounded(0);
        let (keep_c, empty_async) = L::bounded(1);
        let (full_async, keep_d) = L::bounded(1);
        L::send(&full_async, 7);
        Nonblock {
            empty_sync,
            lonely_sync,
            empty_async,
            full_async,
            _keep: (keep_a, keep_b, keep_c, keep_d),
        }
    }
}

struct Scalechan;
struct Crossbeam;
struct Flume;

impl Lib for Scalechan {
    const NAME: &'static str = "scalechan";
    type Tx = scalechan::Sender<Msg>;
    type Rx = scalechan::Receiver<Msg>;
    type Timer = scalechan::Receiver<Instant>;

    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        scalechan::bounded(cap)
    }
    fn timer() -> Self::Timer {
        scalechan::after(HOUR)
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("scalechan: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("scalechan: recv failed")
    }
    fn try_recv(rx: &Self::Rx) -> Option<Msg> {
        rx.try_recv().ok()
    }

    #[inline]
    fn recv2(a: &Self::Rx, b: &Self::Rx) -> (usize, Msg) {
        scalechan::select! {
            recv(a) -> m => (0, m.expect("scalechan: closed")),
            recv(b) -> m => (1, m.expect("scalechan: closed")),
        }
    }
    #[inline]
    fn send2(a: &Self::Tx, b: &Self::Tx, msg: Msg) -> usize {
        scalechan::select! {
            send(a, msg) -> r => { r.expect("scalechan: closed"); 0 }
            send(b, msg) -> r => { r.expect("scalechan: closed"); 1 }
        }
    }
    #[inline]
    fn recv3(c: &[Self::Rx; 3]) -> Msg {
        scalechan::select! {
            recv(c[0]) -> m => m.expect("scalechan: closed"),
            recv(c[1]) -> m => m.expect("scalechan: closed"),
            recv(c[2]) -> m => m.expect("scalechan: closed"),
        }
    }
    #[inline]
    fn send3_or_done(c: &[Self::Tx; 3], done: &Self::Rx, msg: Msg) -> bool {
        scalechan::select! {
            send(c[0], msg) -> r => { r.expect("scalechan: closed"); true }
            send(c[1], msg) -> r => { r.expect("scalechan: closed"); true }
            send(c[2], msg) -> r => { r.expect("scalechan: closed"); true }
            recv(done) -> m => { assert!(m.is_err(), "scalechan: message on done"); false }
        }
    }
    #[inline]
    fn send_or_quit(tx: &Self::Tx, quit: &Self::Rx, timer: &Self::Timer, msg: Msg) {
        scalechan::select! {
            send(tx, msg) -> r => r.expect("scalechan: closed"),
            recv(quit) -> _ => panic!("scalechan: quit fired"),
            recv(timer) -> _ => panic!("scalechan: timer fired"),
        }
    }
    #[inline]
    fn recv_or_quit(rx: &Self::Rx, quit: &Self::Rx, timer: &Self::Timer) -> Option<Msg> {
        scalechan::select! {
            recv(rx) -> m => m.ok(),
            recv(quit) -> _ => panic!("scalechan: quit fired"),
            recv(timer) -> _ => panic!("scalechan: timer fired"),
        }
    }
    #[inline]
    fn nonblock_single(c: &Nonblock<Self>) -> u64 {
        let mut defaults = 0;
        scalechan::select! {
            recv(c.empty_sync) -> _ => {}
            default => defaults += 1,
        }
        scalechan::select! {
            send(c.lonely_sync, 0) -> _ => {}
            default => defaults += 1,
        }
        scalechan::select! {
            recv(c.empty_async) -> _ => {}
            default => defaults += 1,
        }
        scalechan::select! {
            send(c.full_async, 0) -> _ => {}
            default => defaults += 1,
        }
        defaults
    }
    #[inline]
    fn nonblock_multi(c: &Nonblock<Self>) -> bool {
        scalechan::select! {
            recv(c.empty_sync) -> _ => false,
            send(c.lonely_sync, 0) -> _ => false,
            recv(c.empty_async) -> _ => false,
            send(c.full_async, 0) -> _ => false,
            default => true,
        }
    }
}

impl Lib for Crossbeam {
    const NAME: &'static str = "crossbeam-channel";
    type Tx = crossbeam_channel::Sender<Msg>;
    type Rx = crossbeam_channel::Receiver<Msg>;
    type Timer = crossbeam_channel::Receiver<Instant>;

    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(cap)
    }
    fn timer() -> Self::Timer {
        crossbeam_channel::after(HOUR)
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("crossbeam: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("crossbeam: recv failed")
    }
    fn try_recv(rx: &Self::Rx) -> Option<Msg> {
        rx.try_recv().ok()
    }

    #[inline]
    fn recv2(a: &Self::Rx, b: &Self::Rx) -> (usize, Msg) {
        crossbeam_channel::select! {
            recv(a) -> m => (0, m.expect("crossbeam: closed")),
            recv(b) -> m => (1, m.expect("crossbeam: closed")),
        }
    }
    #[inline]
    fn send2(a: &Self::Tx, b: &Self::Tx, msg: Msg) -> usize {
        crossbeam_channel::select! {
            send(a, msg) -> r => { r.expect("crossbeam: closed"); 0 }
            send(b, msg) -> r => { r.expect("crossbeam: closed"); 1 }
        }
    }
    #[inline]
    fn recv3(c: &[Self::Rx; 3]) -> Msg {
        crossbeam_channel::select! {
            recv(c[0]) -> m => m.expect("crossbeam: closed"),
            recv(c[1]) -> m => m.expect("crossbeam: closed"),
            recv(c[2]) -> m => m.expect("crossbeam: closed"),
        }
    }
    #[inline]
    fn send3_or_done(c: &[Self::Tx; 3], done: &Self::Rx, msg: Msg) -> bool {
        crossbeam_channel::select! {
            send(c[0], msg) -> r => { r.expect("crossbeam: closed"); true }
            send(c[1], msg) -> r => { r.expect("crossbeam: closed"); true }
            send(c[2], msg) -> r => { r.expect("crossbeam: closed"); true }
            recv(done) -> m => { assert!(m.is_err(), "crossbeam: message on done"); false }
        }
    }
    #[inline]
    fn send_or_quit(tx: &Self::Tx, quit: &Self::Rx, timer: &Self::Timer, msg: Msg) {
        crossbeam_channel::select! {
            send(tx, msg) -> r => r.expect("crossbeam: closed"),
            recv(quit) -> _ => panic!("crossbeam: quit fired"),
            recv(timer) -> _ => panic!("crossbeam: timer fired"),
        }
    }
    #[inline]
    fn recv_or_quit(rx: &Self::Rx, quit: &Self::Rx, timer: &Self::Timer) -> Option<Msg> {
        crossbeam_channel::select! {
            recv(rx) -> m => m.ok(),
            recv(quit) -> _ => panic!("crossbeam: quit fired"),
            recv(timer) -> _ => panic!("crossbeam: timer fired"),
        }
    }
    #[inline]
    fn nonblock_single(c: &Nonblock<Self>) -> u64 {
        let mut defaults = 0;
        crossbeam_channel::select! {
            recv(c.empty_sync) -> _ => {}
            default => defaults += 1,
        }
        crossbeam_channel::select! {
            send(c.lonely_sync, 0) -> _ => {}
            default => defaults += 1,
        }
        crossbeam_channel::select! {
            recv(c.empty_async) -> _ => {}
            default => defaults += 1,
        }
        crossbeam_channel::select! {
            send(c.full_async, 0) -> _ => {}
            default => defaults += 1,
        }
        defaults
    }
    #[inline]
    fn nonblock_multi(c: &Nonblock<Self>) -> bool {
        crossbeam_channel::select! {
            recv(c.empty_sync) -> _ => false,
            send(c.lonely_sync, 0) -> _ => false,
            recv(c.empty_async) -> _ => false,
            send(c.full_async, 0) -> _ => false,
            default => true,
        }
    }
}

impl Lib for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<Msg>;
    type Rx = flume::Receiver<Msg>;
    /// flume has no timers: a channel whose sender is kept alive and never
    /// used stands in (it costs a hook per blocking select, not a clock read).
    type Timer = (flume::Sender<Instant>, flume::Receiver<Instant>);

    fn bounded(cap: usize) -> (Self::Tx, Self::Rx) {
        flume::bounded(cap)
    }
    fn timer() -> Self::Timer {
        flume::bounded(0)
    }
    #[inline]
    fn send(tx: &Self::Tx, msg: Msg) {
        tx.send(msg).expect("flume: send failed");
    }
    #[inline]
    fn recv(rx: &Self::Rx) -> Msg {
        rx.recv().expect("flume: recv failed")
    }
    fn try_recv(rx: &Self::Rx) -> Option<Msg> {
        rx.try_recv().ok()
    }

    #[inline]
    fn recv2(a: &Self::Rx, b: &Self::Rx) -> (usize, Msg) {
        flume::Selector::new()
            .recv(a, |m| (0, m.expect("flume: closed")))
            .recv(b, |m| (1, m.expect("flume: closed")))
            .wait()
    }
    #[inline]
    fn send2(a: &Self::Tx, b: &Self::Tx, msg: Msg) -> usize {
        flume::Selector::new()
            .send(a, msg, |r| {
                r.expect("flume: closed");
                0
            })
            .send(b, msg, |r| {
                r.expect("flume: closed");
                1
            })
            .wait()
    }
    #[inline]
    fn recv3(c: &[Self::Rx; 3]) -> Msg {
        flume::Selector::new()
            .recv(&c[0], |m| m.expect("flume: closed"))
            .recv(&c[1], |m| m.expect("flume: closed"))
            .recv(&c[2], |m| m.expect("flume: closed"))
            .wait()
    }
    #[inline]
    fn send3_or_done(c: &[Self::Tx; 3], done: &Self::Rx, msg: Msg) -> bool {
        let sent = |r: Result<(), flume::SendError<Msg>>| {
            r.expect("flume: closed");
            true
        };
        flume::Selector::new()
            .send(&c[0], msg, sent)
            .send(&c[1], msg, sent)
            .send(&c[2], msg, sent)
            .recv(done, |m| {
                assert!(m.is_err(), "flume: message on done");
                false
            })
            .wait()
    }
    #[inline]
    fn send_or_quit(tx: &Self::Tx, quit: &Self::Rx, timer: &Self::Timer, msg: Msg) {
        flume::Selector::new()
            .send(tx, msg, |r| r.expect("flume: closed"))
            .recv(quit, |_| panic!("flume: quit fired"))
            .recv(&timer.1, |_| panic!("flume: timer fired"))
            .wait()
    }
    #[inline]
    fn recv_or_quit(rx: &Self::Rx, quit: &Self::Rx, timer: &Self::Timer) -> Option<Msg> {
        flume::Selector::new()
            .recv(rx, |m| m.ok())
            .recv(quit, |_| panic!("flume: quit fired"))
            .recv(&timer.1, |_| panic!("flume: timer fired"))
            .wait()
    }
    #[inline]
    fn nonblock_single(c: &Nonblock<Self>) -> u64 {
        // `Err(Timeout)` is flume's `default`.
        let miss = |r: Result<(), flume::select::SelectError>| r.is_err() as u64;
        miss(
            flume::Selector::new()
                .recv(&c.empty_sync, |_| ())
                .wait_timeout(Duration::ZERO),
        ) + miss(
            flume::Selector::new()
                .send(&c.lonely_sync, 0, |_| ())
                .wait_timeout(Duration::ZERO),
        ) + miss(
            flume::Selector::new()
                .recv(&c.empty_async, |_| ())
                .wait_timeout(Duration::ZERO),
        ) + miss(
            flume::Selector::new()
                .send(&c.full_async, 0, |_| ())
                .wait_timeout(Duration::ZERO),
        )
    }
    #[inline]
    fn nonblock_multi(c: &Nonblock<Self>) -> bool {
        flume::Selector::new()
            .recv(&c.empty_sync, |_| false)
            .send(&c.lonely_sync, 0, |_| false)
            .recv(&c.empty_async, |_| false)
            .send(&c.full_async, 0, |_| false)
            .wait_timeout(Duration::ZERO)
            .unwrap_or(true)
    }
}

/// Runs `$f::<L>($args)` for each library, in a fixed order.
macro_rules! for_each_lib {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        $f::<Scalechan>($($arg),*);
        $f::<Crossbeam>($($arg),*);
        $f::<Flume>($($arg),*);
    }};
}

/// Splits `total` into `parts` shares that differ by at most one.
fn shares(total: u64, parts: u64) -> impl Iterator<Item = u64> {
    (0..parts).map(move |k| total / parts + u64::from(k < total % parts))
}

// ---------------------------------------------------------------------------
// Single-threaded. Fresh channels per sample (untimed); `iters` ops timed.

/// Go's shape: the token is received by the select and sent back on the
/// other channel, so the receive arms fire alternately. The token counts
/// the ops it went through.
fn uncontended_recv<L: Lib>(iters: u64) -> Duration {
    let (tx1, rx1) = L::bounded(1);
    let (tx2, rx2) = L::bounded(1);
    L::send(&tx1, 0);
    let mut firsts = 0u64;
    let start = Instant::now();
    for _ in 0..iters {
        let (arm, token) = L::recv2(&rx1, &rx2);
        if arm == 0 {
            firsts += 1;
            L::send(&tx2, token + 1);
        } else {
            L::send(&tx1, token + 1);
        }
    }
    let elapsed = start.elapsed();
    // Only one channel was ever ready, so the arms must have alternated.
    assert_eq!(firsts, iters.div_ceil(2), "{}: wrong arm", L::NAME);
    let token = L::try_recv(&rx1).or_else(|| L::try_recv(&rx2));
    assert_eq!(token, Some(iters), "{}: token lost", L::NAME);
    assert_eq!(L::try_recv(&rx1).or_else(|| L::try_recv(&rx2)), None);
    elapsed
}

/// The mirror image: one channel full, the select sends on the one with
/// room, then a plain receive empties the other. Message `i + 1` is sent in
/// op `i` and received in op `i + 1`.
fn uncontended_send<L: Lib>(iters: u64) -> Duration {
    let (tx1, rx1) = L::bounded(1);
    let (tx2, rx2) = L::bounded(1);
    L::send(&tx1, 0);
    let (mut seconds, mut sum) = (0u64, 0u64);
    let start = Instant::now();
    for i in 0..iters {
        let arm = L::send2(&tx1, &tx2, i + 1);
        let other = if arm == 0 {
            &rx2
        } else {
            seconds += 1;
            &rx1
        };
        sum += L::recv(other);
    }
    let elapsed = start.elapsed();
    assert_eq!(seconds, iters.div_ceil(2), "{}: wrong arm", L::NAME);
    assert_eq!(
        sum,
        iters * iters.saturating_sub(1) / 2,
        "{}: wrong messages",
        L::NAME
    );
    let last = L::try_recv(&rx1).or_else(|| L::try_recv(&rx2));
    assert_eq!(last, Some(iters), "{}: last message lost", L::NAME);
    elapsed
}

fn nonblock_single<L: Lib>(iters: u64) -> Duration {
    let c = Nonblock::<L>::new();
    let mut defaults = 0;
    let start = Instant::now();
    for _ in 0..iters {
        defaults += L::nonblock_single(&c);
    }
    let elapsed = start.elapsed();
    assert_eq!(defaults, 4 * iters, "{}: a case fired", L::NAME);
    elapsed
}

fn nonblock_multi<L: Lib>(iters: u64) -> Duration {
    let c = Nonblock::<L>::new();
    let mut defaults = 0u64;
    let start = Instant::now();
    for _ in 0..iters {
        defaults += u64::from(L::nonblock_multi(&c));
    }
    let elapsed = start.elapsed();
    assert_eq!(defaults, iters, "{}: a case fired", L::NAME);
    elapsed
}

fn uncontended<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.bench_function(BenchmarkId::new(L::NAME, "recv"), |b| {
        b.iter_custom(uncontended_recv::<L>)
    });
    g.bench_function(BenchmarkId::new(L::NAME, "send"), |b| {
        b.iter_custom(uncontended_send::<L>)
    });
}

fn nonblock<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.bench_function(BenchmarkId::new(L::NAME, "single"), |b| {
        b.iter_custom(nonblock_single::<L>)
    });
    g.bench_function(BenchmarkId::new(L::NAME, "multi"), |b| {
        b.iter_custom(nonblock_multi::<L>)
    });
}

// ---------------------------------------------------------------------------
// Multi-threaded: each sample spawns its threads, lines them up on a
// barrier, and times from the barrier to the last worker's exit.

/// Go's async contended shape: `threads` tokens circulate over two
/// `bounded(threads)` channels (so the plain send never blocks); each token
/// counts the hops it made, so the tokens' sum is the number of ops.
fn async_contended<L: Lib>(threads: u64, iters: u64) -> Duration {
    let total = iters * BATCH;
    let (tx1, rx1) = L::bounded(threads as usize);
    let (tx2, rx2) = L::bounded(threads as usize);
    // Go puts each goroutine's token in before its loop; here before the
    // clock starts.
    for _ in 0..threads {
        L::send(&tx1, 0);
    }
    let barrier = Barrier::new(threads as usize + 1);
    let elapsed = thread::scope(|s| {
        let workers: Vec<_> = shares(total, threads)
            .map(|ops| {
                let (tx1, rx1, tx2, rx2) = (&tx1, &rx1, &tx2, &rx2);
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    for _ in 0..ops {
                        let (arm, token) = L::recv2(rx1, rx2);
                        L::send(if arm == 0 { tx2 } else { tx1 }, token + 1);
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for w in workers {
            w.join().unwrap();
        }
        start.elapsed()
    });
    let (mut tokens, mut hops) = (0u64, 0u64);
    while let Some(t) = L::try_recv(&rx1).or_else(|| L::try_recv(&rx2)) {
        tokens += 1;
        hops += t;
    }
    assert_eq!(tokens, threads, "{}: tokens lost", L::NAME);
    assert_eq!(hops, total, "{}: wrong number of ops", L::NAME);
    elapsed
}

/// Go's ChanPopular: `threads` workers each select a receive over one
/// shared rendezvous channel that never fires and its own rendezvous
/// channel, which the main thread feeds round-robin. Every select that parks
/// registers on the popular channel and withdraws from it when its own
/// message comes, so the popular channel sees a crowd of waiters come and
/// go. Go runs 1000 goroutines; threads are dearer, so the crowd is the
/// thread count. Each worker checks that it got its own `0..rounds`, in
/// order.
fn popular<L: Lib>(threads: u64, iters: u64) -> Duration {
    let rounds = iters * POPULAR_BATCH / threads;
    let (_popular_tx, popular_rx) = L::bounded(0);
    let barrier = Barrier::new(threads as usize + 1);
    thread::scope(|s| {
        let mut own_txs = Vec::new();
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (tx, rx) = L::bounded(0);
                own_txs.push(tx);
                let (popular_rx, barrier) = (&popular_rx, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..rounds {
                        let (arm, m) = L::recv2(popular_rx, &rx);
                        assert_eq!((arm, m), (1, i), "{}: wrong message", L::NAME);
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for i in 0..rounds {
            for tx in &own_txs {
                L::send(tx, i);
            }
        }
        for w in workers {
            w.join().unwrap();
        }
        start.elapsed()
    })
}

/// Messages per criterion iteration of `chan_popular`: divisible by every
/// thread count in [`THREADS`], so each worker gets the same share.
const POPULAR_BATCH: u64 = 960;

/// Go's sync contended shape: `threads` receivers select over three shared
/// rendezvous channels, fed by `threads` helpers that select a send over the
/// same three or a receive on `done`. Helpers send their own running count,
/// and what they sent must equal what the receivers got.
fn sync_contended<L: Lib>(threads: u64, iters: u64) -> Duration {
    let total = iters * BATCH;
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| L::bounded(0)).unzip();
    let txs: [L::Tx; 3] = txs.try_into().ok().unwrap();
    let rxs: [L::Rx; 3] = rxs.try_into().ok().unwrap();
    let (done_tx, done_rx) = L::bounded(0);
    let barrier = Barrier::new(threads as usize + 1);
    let (elapsed, received, sent) = thread::scope(|s| {
        let helpers: Vec<_> = (0..threads)
            .map(|_| {
                let (txs, done_rx) = (&txs, &done_rx);
                s.spawn(move || {
                    let (mut count, mut sum) = (0u64, 0u64);
                    while L::send3_or_done(txs, done_rx, count) {
                        sum += count;
                        count += 1;
                    }
                    (count, sum)
                })
            })
            .collect();
        let workers: Vec<_> = shares(total, threads)
            .map(|ops| {
                let (rxs, barrier) = (&rxs, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut sum = 0u64;
                    for _ in 0..ops {
                        sum += L::recv3(rxs);
                    }
                    (ops, sum)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let received = workers.into_iter().fold((0, 0), |acc, w| {
            let (n, s) = w.join().unwrap();
            (acc.0 + n, acc.1 + s)
        });
        let elapsed = start.elapsed();
        // A rendezvous send completes only with a receive, so once the
        // receivers are done the helpers are parked; closing `done` stops
        // them.
        drop(done_tx);
        let sent = helpers.into_iter().fold((0, 0), |acc, h| {
            let (n, s) = h.join().unwrap();
            (acc.0 + n, acc.1 + s)
        });
        (elapsed, received, sent)
    });
    assert_eq!(received.0, total);
    assert_eq!(sent, received, "{}: sent (count, sum) != received", L::NAME);
    elapsed
}

/// After Go's select producer/consumer shape: `pairs` producers each send
/// `0..n` with a select that also watches a quit channel and a timer, and
/// `pairs` consumers select-receive (with the same two extra cases) until
/// the channel is closed. The count and the sum received are checked.
fn prod_cons<L: Lib>(cap: usize, pairs: u64, iters: u64) -> Duration {
    let total = iters * BATCH;
    let (tx, rx) = L::bounded(cap);
    // Never sent on, never closed during the run (held until the end).
    let (quit_tx, quit_rx) = L::bounded(0);
    let barrier = Barrier::new(2 * pairs as usize + 1);
    let (elapsed, received, sum, expected_sum) = thread::scope(|s| {
        let mut expected_sum = 0;
        for n in shares(total, pairs) {
            expected_sum += n * n.saturating_sub(1) / 2;
            let tx = tx.clone();
            let (quit_rx, barrier) = (&quit_rx, &barrier);
            s.spawn(move || {
                let timer = L::timer();
                barrier.wait();
                for i in 0..n {
                    L::send_or_quit(&tx, quit_rx, &timer, i);
                }
                // `tx` dropped here: the last producer's drop closes.
            });
        }
        let consumers: Vec<_> = (0..pairs)
            .map(|_| {
                let (rx, quit_rx, barrier) = (&rx, &quit_rx, &barrier);
                s.spawn(move || {
                    let timer = L::timer();
                    barrier.wait();
                    let (mut count, mut sum) = (0u64, 0u64);
                    while let Some(m) = L::recv_or_quit(rx, quit_rx, &timer) {
                        count += 1;
                        sum += m;
                    }
                    (count, sum)
                })
            })
            .collect();
        // The producers hold the only senders now.
        drop(tx);
        barrier.wait();
        let start = Instant::now();
        let (mut received, mut sum) = (0u64, 0u64);
        for c in consumers {
            let (n, s) = c.join().unwrap();
            received += n;
            sum += s;
        }
        (start.elapsed(), received, sum, expected_sum)
    });
    drop(quit_tx);
    assert_eq!(received, total, "{}: wrong number of messages", L::NAME);
    assert_eq!(sum, expected_sum, "{}: wrong messages received", L::NAME);
    assert_eq!(L::try_recv(&rx), None, "{}: messages left over", L::NAME);
    elapsed
}

const THREADS: [u64; 5] = [1, 2, 4, 8, 16];

fn contended_group<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>, sync: bool) {
    for threads in THREADS {
        g.bench_with_input(BenchmarkId::new(L::NAME, threads), &threads, |b, &t| {
            if sync {
                b.iter_custom(|iters| sync_contended::<L>(t, iters))
            } else {
                b.iter_custom(|iters| async_contended::<L>(t, iters))
            }
        });
    }
}

fn popular_group<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>) {
    for threads in THREADS {
        g.bench_with_input(BenchmarkId::new(L::NAME, threads), &threads, |b, &t| {
            b.iter_custom(|iters| popular::<L>(t, iters))
        });
    }
}

fn prod_cons_group<L: Lib>(g: &mut BenchmarkGroup<'_, WallTime>, cap: usize, pairs: &[u64]) {
    for &pairs in pairs {
        g.bench_with_input(BenchmarkId::new(L::NAME, pairs), &pairs, |b, &p| {
            b.iter_custom(|iters| prod_cons::<L>(cap, p, iters))
        });
    }
}

// ---------------------------------------------------------------------------

fn benches(c: &mut Criterion) {
    {
        let mut g = c.benchmark_group("select_uncontended");
        g.throughput(Throughput::Elements(1));
        for_each_lib!(uncontended(&mut g));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("select_nonblock");
        g.throughput(Throughput::Elements(1));
        for_each_lib!(nonblock(&mut g));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("select_contended");
        g.throughput(Throughput::Elements(BATCH));
        for_each_lib!(contended_group(&mut g, false));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("select_sync_contended");
        g.throughput(Throughput::Elements(BATCH));
        // No flume: its Selector can complete more than one of the helper's
        // three send arms (each arm's hook holds its own copy of the
        // message), so receivers get more messages than the helpers' selects
        // report sent and the check below fails; the time would be for a
        // different operation.
        contended_group::<Scalechan>(&mut g, true);
        contended_group::<Crossbeam>(&mut g, true);
        g.finish();
    }
    {
        let mut g = c.benchmark_group("chan_popular");
        g.throughput(Throughput::Elements(POPULAR_BATCH));
        for_each_lib!(popular_group(&mut g));
        g.finish();
    }
    for cap in [0, 1, 10] {
        let mut g = c.benchmark_group(format!("select_prodcons_{cap}"));
        g.throughput(Throughput::Elements(BATCH));
        prod_cons_group::<Scalechan>(&mut g, cap, &THREADS);
        prod_cons_group::<Crossbeam>(&mut g, cap, &THREADS);
        // flume only with one pair: with two or more, a consumer's Selector
        // parks for good after the channel is closed (every other thread has
        // exited; seen with each capacity), and the benchmark never ends.
        prod_cons_group::<Flume>(&mut g, cap, &[1]);
        g.finish();
    }
}

criterion_group! {
    name = select;
    config = common::config();
    targets = benches
}
criterion_main!(select);
