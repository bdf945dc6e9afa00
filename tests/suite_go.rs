//! Go's channel tests, scenario by scenario, against scalechan.
//!
//! Each test below re-expresses one scenario of Go's own test-suite in Rust
//! (same scenario, our code). Sources, by group:
//!
//! - `src/runtime/chan_test.go`: `TestChan` (every capacity: blocking,
//!   non-blocking, close, FIFO, many-to-many, len/cap), `TestNonblockRecvRace`,
//!   `TestNonblockSelectRace`, `TestNonblockSelectRace2`, `TestSelfSelect`,
//!   `TestSelectStress`, `TestSelectFairness`, `TestChanSendInterface` (plus
//!   other value kinds), `TestPseudoRandomSend`, `TestMultiConsumer`,
//!   `TestSelectDuplicateChannel`.
//! - `test/chan/*.go`: `doubleselect`, `fifo`, `goroutines`, `nonblock`,
//!   `select`, `select2`, `select3`, `select4`, `select5` (compact form),
//!   `select6`, `select7`, `select8`, `sendstmt`, `sieve1`, `powser1`,
//!   `zerosize`.
//! - crossbeam-channel's `tests/golang.rs`, which ports the above and also
//!   `test/closedchan.go`, `test/ken/chan.go` and `test/ken/chan1.go`; those
//!   three are here too.
//!
//! Mapping: a goroutine is a thread (most tests use 2-16; the `goroutines`
//! chain uses 100 and `powser1` about 100, all short-lived); `make(chan T, n)`
//! is `bounded(n)`; Go's `close(c)` is `close()`; a receive from a closed,
//! drained channel (Go: zero value, `ok == false`) is `Err(RecvError)`; a
//! send on a closed channel (Go: panic) is `Err(SendError(v))`, and a second
//! `close` (Go: panic) returns `false`; a `nil` channel in a select is
//! `never()` for receives and, for sends, a rendezvous channel whose receiver
//! is kept and never used; `time.After` is `scalechan::after` and
//! `time.Tick` is `scalechan::tick`. Iteration counts are scaled down to
//! suit a 2-core machine, and the long loops run under a time budget
//! (`Budget`: a fixed minimum, then up to Go's count while time remains),
//! so a loaded machine, where every hand-off waits for the scheduler, runs
//! fewer rounds instead of running long. Every multi-threaded test runs
//! under a 60 s watchdog so a deadlock fails instead of hanging.
//!
//! Skipped, and why:
//! - `src/runtime/select_test.go`: not in the source index searched.
//! - `TestShrinkStackDuringBlockedSend`, `TestNoShrinkStackWhileParking`,
//!   `TestSelectStackAdjust`: Go garbage-collector stack shrinking; Rust
//!   threads have fixed stacks and nothing to adjust.
//! - The `Benchmark*` functions: benchmarks, not tests (see `benches/`).
//! - `test/chan/perm.go`: compile-time errors for wrong channel directions;
//!   in Rust a `Sender` has no receive method and a `Receiver` no send
//!   method, and a compile-fail test would need a new dev-dependency.
//! - `test/chan/select2.go`'s memory bound: the allocation counter is
//!   process-global and other tests run beside it in this binary;
//!   `tests/memory.rs` measures select allocations in isolation. The
//!   scenario itself (many selects, a dummy case never chosen) is here.
//! - `test/chan/select5.go` is a generator of Go programs; its cases
//!   (evaluation order, default arm placement, dummy and nil cases around a
//!   real send or receive) are covered compactly, not enumerated.
//! - `test/chan/sieve2.go`, `powser2.go`: the same channel patterns as
//!   `sieve1` and `powser1` with a different algorithm / item type.
//!   `powser1`'s finite series (`finis` mark) and `Revert` (commented out in
//!   Go) are left out; every check that `powser1` runs is here.
//! - `test/chan/sendstmt.go`'s `sendprec`: Go parser precedence only.
//! - `src/runtime/chanbarrier_test.go`, `race/testdata/chan_test.go`: GC
//!   write barriers and the race detector.
//!
//! One test goes beyond Go: `select3_close_wakes_select_on_timer`, the
//! release of a select parked on a `never()` (nil) or `after` case by
//! closing that timer channel, which Go cannot express (a nil channel cannot
//! be closed) but SPEC.md implies.

use scalechan::{
    after, bounded, never, select, tick, unbounded, Receiver, RecvError, Select, SendError, Sender,
    TryRecvError, TrySendError,
};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ helpers

/// How long a "has it blocked yet?" check waits in the many-capacity loops
/// (Go: 1 ms). A thread that has not reached its blocking call yet makes
/// the check pass vacuously; it can never make it fail.
const BRIEF: Duration = Duration::from_millis(2);

/// The same for one-off checks.
const SETTLE: Duration = Duration::from_millis(20);

/// A generous bound for "this should happen soon".
const LONG: Duration = Duration::from_secs(5);

/// Watchdog for whole tests: only a deadlock gets near it.
const WATCHDOG_S: u64 = 60;

const KINDS: [Option<usize>; 3] = [Some(0), Some(3), None];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `None`: unbounded; `Some(c)`: `bounded(c)`.
fn chan<T>(kind: Option<usize>) -> (Sender<T>, Receiver<T>) {
    match kind {
        None => unbounded(),
        Some(c) => bounded(c),
    }
}

/// Go's nil channel on the sending side: a send on it is never ready
/// (a rendezvous channel whose receiver is kept alive and never used).
struct NilSend<T> {
    tx: Sender<T>,
    _rx: Receiver<T>,
}

fn nil_send<T>() -> NilSend<T> {
    let (tx, _rx) = bounded(0);
    NilSend { tx, _rx }
}

/// `N` fresh rendezvous channels (Go: `make(chan T)` each).
fn rendezvous<T, const N: usize>() -> [(Sender<T>, Receiver<T>); N] {
    std::array::from_fn(|_| bounded(0))
}

/// Runs `f(h)` on a new thread: `h` is the handle (often a clone) it owns.
fn spawn_with<H: Send + 'static, R: Send + 'static>(
    h: H,
    f: impl FnOnce(H) -> R + Send + 'static,
) -> JoinHandle<R> {
    thread::spawn(move || f(h))
}

/// Runs `f` on its own thread and fails if it has not finished within
/// `WATCHDOG_S` seconds (a deadlock); panics inside `f` propagate.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    use std::sync::mpsc;
    let (tx, rx) = mpsc::channel::<()>();
    let h = thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(Duration::from_secs(WATCHDOG_S)) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no progress in {WATCHDOG_S} s (deadlock?)")
        }
    }
}

/// Calls `f` until it returns `Some`, failing after `LONG`.
fn retry<R>(what: &str, mut f: impl FnMut() -> Option<R>) -> R {
    let start = Instant::now();
    loop {
        if let Some(r) = f() {
            return r;
        }
        assert!(start.elapsed() < LONG, "{what}: no progress in {LONG:?}");
    }
}

/// How much of a repeated scenario to run: at least `min` rounds, then more
/// while under `max` and within the time budget. On a loaded machine, where
/// every rendezvous hand-off waits for the scheduler, a test does less
/// rather than run long; unloaded it does the full count.
#[derive(Clone, Copy)]
struct Budget {
    min: usize,
    max: usize,
    until: Instant,
}

impl Budget {
    fn new(min: usize, max: usize, time: Duration) -> Self {
        Budget {
            min,
            max,
            until: Instant::now() + time,
        }
    }

    fn more(&self, done: usize) -> bool {
        done < self.min || (done < self.max && Instant::now() < self.until)
    }
}

// ================================================ src/runtime/chan_test.go

/// One capacity's worth of `TestChan`.
fn go_test_chan(kind: Option<usize>) {
    // Receive from an empty channel blocks; non-blocking receives do not.
    {
        let (tx, rx) = chan::<usize>(kind);
        let woke = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    assert_eq!(rx.recv(), Ok(0));
                    woke.fetch_add(1, SeqCst);
                });
            }
            thread::sleep(BRIEF);
            assert_eq!(
                woke.load(SeqCst),
                0,
                "chan[{kind:?}]: receive from empty chan"
            );
            select! {
                recv(rx) -> m => panic!("chan[{kind:?}]: non-blocking receive got {m:?}"),
                default => {}
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            tx.send(0).unwrap();
            tx.send(0).unwrap();
        });
        assert_eq!(woke.into_inner(), 2);
    }

    // Send to a full channel blocks; a non-blocking send does not.
    if let Some(cap) = kind {
        let (tx, rx) = bounded::<usize>(cap);
        for i in 0..cap {
            tx.send(i).unwrap();
        }
        let sent = AtomicBool::new(false);
        thread::scope(|s| {
            s.spawn(|| {
                tx.send(cap).unwrap();
                sent.store(true, SeqCst);
            });
            thread::sleep(BRIEF);
            assert!(!sent.load(SeqCst), "chan[{cap}]: send to full chan");
            let went = select! {
                send(tx, usize::MAX) -> _ => true,
                default => false,
            };
            assert!(!went, "chan[{cap}]: non-blocking send to full chan");
            assert_eq!(tx.try_send(7), Err(TrySendError::Full(7)));
            // cap 0: the blocked sender's value (0); else the oldest (0).
            assert_eq!(rx.recv(), Ok(0));
        });
        assert!(sent.load(SeqCst));
        let rest: Vec<usize> = rx.try_iter().collect();
        assert_eq!(rest, (1..=cap).collect::<Vec<_>>(), "chan[{cap}]");
    }

    // A closed channel still yields what was sent, in order, then Err
    // (Go: the zero value with ok == false), as often as asked.
    {
        let (tx, rx) = chan::<usize>(kind);
        let n = kind.unwrap_or(16);
        for i in 0..n {
            tx.send(i).unwrap();
        }
        assert!(tx.close());
        assert_eq!(tx.send(99), Err(SendError(99)), "Go panics here");
        for i in 0..n {
            assert_eq!(rx.recv(), Ok(i), "chan[{kind:?}]");
        }
        for _ in 0..3 {
            assert_eq!(rx.recv(), Err(RecvError));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        }
        let r = select! {
            recv(rx) -> m => m,
            default => panic!("chan[{kind:?}]: closed channel not ready in select"),
        };
        assert_eq!(r, Err(RecvError));
    }

    // Close unblocks a receive.
    {
        let (tx, rx) = chan::<usize>(kind);
        thread::scope(|s| {
            let h = s.spawn(|| rx.recv());
            thread::sleep(BRIEF);
            tx.close();
            assert_eq!(h.join().unwrap(), Err(RecvError), "chan[{kind:?}]");
        });
    }

    // 100 values arrive uncorrupted and in order, with both receive forms.
    {
        let (tx, rx) = chan::<usize>(kind);
        thread::scope(|s| {
            s.spawn(|| (0..100).for_each(|i| tx.send(i).unwrap()));
            for i in 0..100 {
                assert_eq!(rx.recv(), Ok(i), "chan[{kind:?}]");
            }
            s.spawn(|| (0..100).for_each(|i| tx.send(i).unwrap()));
            for i in 0..100 {
                assert_eq!(rx.recv_timeout(LONG), Ok(i), "chan[{kind:?}]");
            }
        });

        // P senders of 0..L and P receivers of L values each: every value
        // arrives exactly P times.
        const P: usize = 4;
        const L: usize = 50;
        let counts: Vec<AtomicUsize> = (0..L).map(|_| AtomicUsize::new(0)).collect();
        thread::scope(|s| {
            for _ in 0..P {
                s.spawn(|| (0..L).for_each(|i| tx.send(i).unwrap()));
                s.spawn(|| {
                    for _ in 0..L {
                        counts[rx.recv().unwrap()].fetch_add(1, SeqCst);
                    }
                });
            }
        });
        assert!(
            counts.iter().all(|c| c.load(SeqCst) == P),
            "chan[{kind:?}]: a value lost or duplicated"
        );
        assert!(rx.is_empty());
    }

    // len / cap.
    {
        let (tx, rx) = chan::<usize>(kind);
        assert_eq!((tx.len(), tx.capacity()), (0, kind));
        let n = kind.unwrap_or(16);
        for i in 0..n {
            tx.send(i).unwrap();
        }
        assert_eq!((rx.len(), rx.capacity()), (n, kind), "chan[{kind:?}]");
        assert_eq!(tx.is_full(), kind.is_some());
    }
}

#[test]
fn test_chan_every_capacity() {
    within("TestChan", || {
        // Every capacity up to 16, then around a 32-cell segment, and
        // larger ones; while the time budget lasts (at least 0 and 1).
        let kinds = (0..=16)
            .map(Some)
            .chain([31, 32, 33, 64, 199].map(Some))
            .chain([None]);
        let budget = Budget::new(2, usize::MAX, ms(800));
        for (i, kind) in kinds.enumerate() {
            if !budget.more(i) {
                break;
            }
            go_test_chan(kind);
        }
    });
}

#[test]
fn test_nonblock_recv_race() {
    // A value sent before the close is seen by a non-blocking select racing
    // the close (never `default`), and by exactly one of the two receivers.
    within("TestNonblockRecvRace", || {
        for kind in [Some(1), Some(4), None] {
            let budget = Budget::new(100, 1000, ms(250));
            let mut round = 0;
            while budget.more(round) {
                round += 1;
                let (tx, rx) = chan::<i32>(kind);
                tx.send(1).unwrap();
                let rx2 = rx.clone();
                let h = thread::spawn(move || {
                    select! {
                        recv(rx2) -> m => m.ok(),
                        default => panic!("chan is not ready"),
                    }
                });
                tx.close();
                let mine = rx.recv().ok();
                let theirs = h.join().unwrap();
                let all: Vec<i32> = mine.into_iter().chain(theirs).collect();
                assert_eq!(all, [1], "{kind:?}");
            }
        }
    });
}

/// `TestNonblockSelectRace` (`close_c2 == false`) and `...Race2` (`true`):
/// from the moment the selecting thread starts, one of c1 and c2 is always
/// ready, so its non-blocking select must never take `default`.
fn nonblock_select_race(close_c2: bool) {
    let (done_tx, done_rx) = bounded::<bool>(1);
    let budget = Budget::new(100, 2000, ms(400));
    let mut round = 0;
    while budget.more(round) {
        round += 1;
        let (c1_tx, c1_rx) = bounded::<i32>(1);
        let (c2_tx, c2_rx) = bounded::<i32>(if close_c2 { 0 } else { 1 });
        c1_tx.send(1).unwrap();
        let (r1, r2, done) = (c1_rx.clone(), c2_rx.clone(), done_tx.clone());
        thread::spawn(move || {
            let ready = select! {
                recv(r1) -> _ => true,
                recv(r2) -> _ => true,
                default => false,
            };
            done.send(ready).unwrap();
        });
        if close_c2 {
            c2_tx.close();
        } else {
            c2_tx.send(1).unwrap();
        }
        select! {
            recv(c1_rx) -> _ => {}
            default => {}
        }
        assert!(done_rx.recv().unwrap(), "no chan is ready");
    }
}

#[test]
fn test_nonblock_select_race() {
    within("TestNonblockSelectRace", || nonblock_select_race(false));
}

#[test]
fn test_nonblock_select_race2() {
    within("TestNonblockSelectRace2", || nonblock_select_race(true));
}

#[test]
fn test_self_select() {
    // Two threads, each selecting over a send and a receive on the same
    // channel, in both case orders: no deadlock, and on a rendezvous
    // channel a select never receives its own value.
    within("TestSelfSelect", || {
        for cap in [0usize, 1, 10] {
            let (tx, rx) = bounded::<usize>(cap);
            thread::scope(|s| {
                for p in 0..2usize {
                    let (tx, rx) = (&tx, &rx);
                    s.spawn(move || {
                        let check = |v: Result<usize, RecvError>| {
                            let v = v.unwrap();
                            assert!(cap != 0 || v != p, "self receive (cap {cap})");
                        };
                        for i in 0..400 {
                            if p == 0 || i % 2 == 0 {
                                select! {
                                    send(tx, p) -> r => r.unwrap(),
                                    recv(rx) -> v => check(v),
                                }
                            } else {
                                select! {
                                    recv(rx) -> v => check(v),
                                    send(tx, p) -> r => r.unwrap(),
                                }
                            }
                        }
                    });
                }
            });
        }
    });
}

#[test]
fn test_select_stress() {
    // Plain senders and receivers on each of four channels (two rendezvous,
    // two small buffers), plus one thread sending N on each through one
    // select and one receiving N from each through one select; a finished
    // channel drops out (Go: set to nil). Nothing deadlocks, nothing is lost.
    within("TestSelectStress", || {
        const N: usize = 400;
        let c: Vec<(Sender<usize>, Receiver<usize>)> =
            [0, 0, 2, 3].into_iter().map(bounded).collect();
        let received = AtomicUsize::new(0);
        thread::scope(|s| {
            for (tx, rx) in &c {
                s.spawn(move || (0..N).for_each(|i| tx.send(i).unwrap()));
                let received = &received;
                s.spawn(move || {
                    for _ in 0..N {
                        rx.recv().unwrap();
                        received.fetch_add(1, SeqCst);
                    }
                });
            }
            // The select sender: a finished channel becomes a nil send.
            let c = &c;
            s.spawn(move || {
                let nil = nil_send::<usize>();
                let mut n = [0usize; 4];
                for _ in 0..4 * N {
                    let t: [&Sender<usize>; 4] =
                        std::array::from_fn(|k| if n[k] < N { &c[k].0 } else { &nil.tx });
                    let k = select! {
                        send(t[3], 3) -> r => { r.unwrap(); 3 }
                        send(t[2], 2) -> r => { r.unwrap(); 2 }
                        send(t[0], 0) -> r => { r.unwrap(); 0 }
                        send(t[1], 1) -> r => { r.unwrap(); 1 }
                    };
                    n[k] += 1;
                }
                assert_eq!(n, [N; 4]);
            });
            // The select receiver, built case by case: a finished channel
            // is left out (the builder's form of a nil case).
            let received = &received;
            s.spawn(move || {
                let mut n = [0usize; 4];
                for _ in 0..4 * N {
                    let mut sel = Select::new();
                    for (k, (_, rx)) in c.iter().enumerate() {
                        if n[k] < N {
                            sel = sel.recv(rx, move |m| {
                                m.unwrap();
                                k
                            });
                        }
                    }
                    n[sel.wait()] += 1;
                    received.fetch_add(1, SeqCst);
                }
                assert_eq!(n, [N; 4]);
            });
        });
        assert_eq!(received.load(SeqCst), 8 * N);
        assert!(c.iter().all(|(tx, _)| tx.is_empty()));
    });
}

#[test]
fn test_select_fairness() {
    // A select over two always-ready buffered channels and two idle
    // rendezvous channels picks the two ready ones about equally often.
    within("TestSelectFairness", || {
        const TRIALS: usize = 10_000;
        let (c1_tx, c1) = bounded::<u8>(TRIALS + 1);
        let (c2_tx, c2) = bounded::<u8>(TRIALS + 1);
        for _ in 0..=TRIALS {
            c1_tx.send(1).unwrap();
            c2_tx.send(2).unwrap();
        }
        let [(_c3_tx, c3), (_c4_tx, c4), (out_tx, out)] = rendezvous::<u8, 3>();
        let (done_tx, done) = bounded::<()>(0);
        let h = thread::spawn(move || loop {
            let b = select! {
                recv(c3) -> m => m.unwrap(),
                recv(c4) -> m => m.unwrap(),
                recv(c1) -> m => m.unwrap(),
                recv(c2) -> m => m.unwrap(),
            };
            select! {
                send(out_tx, b) -> r => r.unwrap(),
                recv(done) -> _ => return,
            }
        });
        let mut cnt = [0usize; 2];
        // Go runs 10 000 trials; fewer where the machine is loaded (the
        // stopping time does not depend on the outcomes).
        let budget = Budget::new(600, TRIALS, ms(600));
        let mut trials = 0;
        while budget.more(trials) {
            trials += 1;
            match out.recv().unwrap() {
                1 => cnt[0] += 1,
                2 => cnt[1] += 1,
                b => panic!("unexpected value {b} on channel"),
            }
        }
        done_tx.close();
        h.join().unwrap();
        // Go's bound: 10 standard deviations (50 for 10 000 trials).
        let (mean, sd) = (trials as f64 / 2.0, (trials as f64 / 4.0).sqrt());
        let dev = (cnt[0] as f64 - mean).abs();
        assert!(
            dev <= 10.0 * sd,
            "unfair select: {cnt:?} in {trials} trials"
        );
    });
}

/// Counts its drops.
struct Mt(Arc<AtomicUsize>);

impl Drop for Mt {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn test_chan_send_interface() {
    // Trait objects through a full buffered channel: the non-blocking
    // select sends take `default`, and their unsent values are dropped.
    let drops = Arc::new(AtomicUsize::new(0));
    let mt = || -> Box<dyn Any + Send> { Box::new(Mt(drops.clone())) };
    let (tx, rx) = bounded::<Box<dyn Any + Send>>(1);
    tx.send(mt()).unwrap();
    let chosen = select! {
        send(tx, mt()) -> _ => 1,
        default => 0,
    };
    assert_eq!(chosen, 0);
    let chosen = select! {
        send(tx, mt()) -> _ => 1,
        send(tx, mt()) -> _ => 2,
        default => 0,
    };
    assert_eq!(chosen, 0);
    assert_eq!(drops.load(SeqCst), 3, "unchosen send values are dropped");
    let got = rx.try_recv().unwrap();
    assert!(got.downcast_ref::<Mt>().is_some());
    assert!(rx.is_empty());
    drop(got);
    assert_eq!(drops.load(SeqCst), 4);
}

/// Sends `values` over every kind of channel, alternating plain and select
/// operations on both sides, and checks they arrive intact and in order.
fn ferry<T: Clone + PartialEq + Debug + Send + Sync>(values: &[T]) {
    for kind in KINDS {
        let (tx, rx) = chan::<T>(kind);
        thread::scope(|s| {
            s.spawn(|| {
                for (i, v) in values.iter().enumerate() {
                    if i % 2 == 0 {
                        tx.send(v.clone()).unwrap();
                    } else {
                        select! { send(tx, v.clone()) -> r => r.unwrap() }
                    }
                }
            });
            for (i, v) in values.iter().enumerate() {
                let got = if i % 3 == 0 {
                    rx.recv().unwrap()
                } else {
                    select! { recv(rx) -> m => m.unwrap() }
                };
                assert_eq!(&got, v, "{kind:?}");
            }
        });
        assert!(rx.is_empty());
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Unit,
    Pair(i8, u64),
    Named { label: String, weights: Vec<f32> },
}

#[test]
fn test_chan_value_kinds() {
    // Go's test sends interface values; here: the value shapes a Rust
    // channel meets (heap, large inline, fat pointers, niches, enums).
    within("value kinds", || {
        ferry(&(0..20).map(|i| format!("s{i}")).collect::<Vec<_>>());
        ferry(&(0..20).map(|i| vec![i as u64; i]).collect::<Vec<_>>());
        ferry(&(0..20u64).map(|i| [i; 33]).collect::<Vec<_>>());
        ferry(
            &(0..20)
                .map(|i| Arc::<str>::from(i.to_string()))
                .collect::<Vec<_>>(),
        );
        ferry(
            &(0..20)
                .map(|i| (i % 3 != 0).then(|| Box::new(i)))
                .collect::<Vec<_>>(),
        );
        ferry(
            &(0..20u8)
                .map(|i| (i, u128::MAX - i as u128))
                .collect::<Vec<_>>(),
        );
        ferry(&[0.5f64, -0.0, f64::MAX, 1e-300]);
        ferry(&['a', 'é', '🦀']);
        ferry(&[
            Shape::Unit,
            Shape::Pair(-1, u64::MAX),
            Shape::Named {
                label: "x".repeat(100),
                weights: vec![1.5; 7],
            },
        ]);
    });
}

#[test]
fn test_pseudo_random_send() {
    // A select whose two send cases (values 1 and 0) are on the same
    // channel must choose between them at random, parked or not.
    within("TestPseudoRandomSend", || {
        const N: usize = 100;
        for cap in [0usize, 1, N] {
            let (tx, rx) = bounded::<usize>(cap);
            let got = thread::scope(|s| {
                let h = s.spawn(|| {
                    (0..N)
                        .map(|_| {
                            thread::yield_now();
                            rx.recv().unwrap()
                        })
                        .collect::<Vec<_>>()
                });
                for _ in 0..N {
                    select! {
                        send(tx, 1) -> r => r.unwrap(),
                        send(tx, 0) -> r => r.unwrap(),
                    }
                }
                h.join().unwrap()
            });
            let ones = got.iter().sum::<usize>();
            let zeros = N - ones;
            assert!(
                zeros > N / 10 && ones > N / 10,
                "want pseudorandom, got {zeros} zeros and {ones} ones (cap {cap})"
            );
        }
    });
}

#[test]
fn test_multi_consumer() {
    // One feeder, many workers forwarding from q to r, one consumer: every
    // item arrives exactly once, the sum matches, and each worker's items
    // arrive in increasing order (q is FIFO, so one worker receives in
    // order; r is FIFO per sender).
    within("TestMultiConsumer", || {
        const WORKERS: usize = 12;
        const ITEMS: usize = 40_000;
        const PN: [u64; 10] = [2, 3, 7, 11, 13, 17, 19, 23, 27, 31];
        let (q_tx, q_rx) = bounded::<(usize, u64)>(WORKERS * 3);
        let (r_tx, r_rx) = bounded::<(usize, usize, u64)>(WORKERS * 3);
        thread::scope(|s| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|w| {
                    let (q, r) = (q_rx.clone(), r_tx.clone());
                    s.spawn(move || {
                        for (i, v) in &q {
                            if PN[w % PN.len()] == v {
                                thread::yield_now(); // mess with the order
                            }
                            r.send((w, i, v)).unwrap();
                        }
                    })
                })
                .collect();
            let (q_tx, r_tx) = (&q_tx, &r_tx);
            let feeder = s.spawn(move || {
                let (mut items, mut expect) = (0, 0);
                let budget = Budget::new(1000, ITEMS, ms(400));
                while budget.more(items) {
                    let v = PN[items % PN.len()];
                    expect += v;
                    q_tx.send((items, v)).unwrap();
                    items += 1;
                }
                q_tx.close(); // no more work
                for w in workers {
                    w.join().unwrap(); // workers done
                }
                r_tx.close(); // so no more results
                (items, expect)
            });
            let mut seen = vec![false; ITEMS];
            let mut last = [None::<usize>; WORKERS];
            let (mut n, mut sum) = (0, 0);
            for (w, i, v) in &r_rx {
                assert!(!seen[i], "item {i} twice");
                seen[i] = true;
                assert!(
                    last[w].is_none_or(|l| l < i),
                    "worker {w}: {i} after {last:?}"
                );
                last[w] = Some(i);
                n += 1;
                sum += v;
            }
            let (items, expect) = feeder.join().unwrap();
            assert_eq!((n, sum), (items, expect));
        });
    });
}

#[test]
fn test_select_duplicate_channel() {
    // A parked select listed twice on c (and once on d) is woken through d;
    // a plain receiver parked on c after it must still get c's next value.
    within("TestSelectDuplicateChannel", || {
        let [(c_tx, c_rx), (d_tx, d_rx), (e_tx, e_rx)] = rendezvous::<i32, 3>();
        let a = spawn_with(c_rx.clone(), move |c| {
            let got = select! {
                recv(c) -> m => ("c", m),
                recv(c) -> m => ("c", m),
                recv(d_rx) -> m => ("d", m),
            };
            e_tx.send(9).unwrap();
            got
        });
        thread::sleep(SETTLE); // A queues on c first
        let b = thread::spawn(move || c_rx.recv());
        thread::sleep(SETTLE); // then B
        d_tx.send(7).unwrap(); // wakes A, which leaves c's queue
        assert_eq!(e_rx.recv(), Ok(9));
        c_tx.send(8).unwrap(); // must reach B
        assert_eq!(a.join().unwrap(), ("d", Ok(7)));
        assert_eq!(b.join().unwrap(), Ok(8));
    });
}

// ========================================================== test/chan/*.go

#[test]
fn doubleselect() {
    // A sender spreads 0..N over four rendezvous channels through one
    // select; four muxes forward to one channel. If two cases of one select
    // ever both ran, a value would arrive twice.
    within("doubleselect", || {
        const N: usize = 20_000;
        let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..4).map(|_| bounded(0)).collect();
        let (mux_tx, mux_rx) = bounded::<usize>(0);
        let (done_tx, done_rx) = bounded::<()>(0);
        thread::scope(|s| {
            let outs: Vec<Sender<usize>> = chans.iter().map(|c| c.0.clone()).collect();
            let sender = s.spawn(move || {
                let budget = Budget::new(500, N, ms(400));
                let mut i = 0;
                while budget.more(i) {
                    select! {
                        send(outs[0], i) -> r => r.unwrap(),
                        send(outs[1], i) -> r => r.unwrap(),
                        send(outs[2], i) -> r => r.unwrap(),
                        send(outs[3], i) -> r => r.unwrap(),
                    }
                    i += 1;
                }
                for tx in &outs {
                    tx.close();
                }
                i
            });
            for (_, rx) in &chans {
                let (out, done) = (&mux_tx, &done_tx);
                s.spawn(move || {
                    for v in rx {
                        out.send(v).unwrap();
                    }
                    done.send(()).unwrap();
                });
            }
            let (done_rx, mux_tx) = (&done_rx, &mux_tx);
            s.spawn(move || {
                for _ in 0..4 {
                    done_rx.recv().unwrap();
                }
                mux_tx.close();
            });
            let mut seen = vec![false; N];
            for v in &mux_rx {
                assert!(
                    !std::mem::replace(&mut seen[v], true),
                    "got duplicate value {v}"
                );
            }
            let sent = sender.join().unwrap();
            assert!(seen[..sent].iter().all(|&b| b), "a value was lost");
            assert!(!seen[sent..].contains(&true), "a value never sent");
        });
    });
}

#[test]
fn fifo_asynch() {
    for kind in [Some(10), Some(40), None] {
        let (tx, rx) = chan::<usize>(kind);
        for i in 0..10 {
            tx.send(i).unwrap();
        }
        for i in 0..10 {
            assert_eq!(rx.recv(), Ok(i), "bad receive ({kind:?})");
        }
    }
}

#[test]
fn fifo_synch() {
    // A chain of threads, each waiting for its predecessor before it
    // receives from one rendezvous channel: they must see 0, 1, 2, ...
    within("fifo synch", || {
        const N: usize = 12;
        let (ch_tx, ch_rx) = bounded::<usize>(0);
        let (start, mut inp) = bounded::<()>(0);
        thread::scope(|s| {
            for i in 0..N {
                let (out, next) = bounded::<()>(0);
                let (ch, prev) = (&ch_rx, inp);
                s.spawn(move || {
                    prev.recv().unwrap();
                    assert_eq!(ch.recv(), Ok(i));
                    out.send(()).unwrap();
                });
                inp = next;
            }
            start.send(()).unwrap();
            for i in 0..N {
                ch_tx.send(i).unwrap();
            }
            inp.recv().unwrap();
        });
    });
}

#[test]
fn goroutines_chain() {
    // A chain of 100 threads over rendezvous channels, each passing on
    // what it gets from its right, plus one.
    within("goroutines", || {
        const N: usize = 100;
        let (leftmost, result) = bounded::<usize>(0);
        let mut left = leftmost;
        let mut handles = Vec::new();
        for _ in 0..N {
            let (right_tx, right_rx) = bounded::<usize>(0);
            let l = left;
            handles.push(thread::spawn(move || {
                l.send(right_rx.recv().unwrap() + 1).unwrap();
            }));
            left = right_tx;
        }
        handles.push(thread::spawn(move || left.send(0).unwrap()));
        assert_eq!(result.recv(), Ok(N));
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// One value type's part of `nonblock.go`: non-blocking sends and receives
/// against a thread that does the blocking side, retried until they land.
fn nonblock_case<T>(buffer: usize, to_receiver: T, from_sender: T)
where
    T: Clone + PartialEq + Debug + Send + 'static,
{
    let ticker = tick(Duration::from_micros(10));
    let pause = || {
        ticker.recv().unwrap();
        ticker.recv().unwrap();
        for _ in 0..3 {
            thread::yield_now();
        }
    };
    let (sync_tx, sync_rx) = bounded::<bool>(0);
    let (tx, rx) = bounded::<T>(buffer);
    select! {
        recv(rx) -> m => panic!("blocked sender: {m:?}"),
        default => {}
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    thread::scope(|s| {
        let (rx_ref, sync, want) = (&rx, &sync_tx, to_receiver.clone());
        s.spawn(move || {
            assert_eq!(rx_ref.recv(), Ok(want), "receiver value");
            sync.send(true).unwrap();
        });
        pause();
        retry("non-blocking send to a receiver", || {
            select! {
                send(tx, to_receiver.clone()) -> r => { r.unwrap(); Some(()) }
                default => { pause(); None }
            }
        });
        assert_eq!(sync_rx.recv(), Ok(true));

        let (tx_ref, sync, v) = (&tx, &sync_tx, from_sender.clone());
        s.spawn(move || {
            tx_ref.send(v).unwrap();
            sync.send(true).unwrap();
        });
        if buffer > 0 {
            assert_eq!(sync_rx.recv(), Ok(true));
        }
        let got = retry("non-blocking receive from a sender", || {
            match rx.try_recv() {
                Ok(v) => Some(v),
                Err(TryRecvError::Empty) => {
                    pause();
                    None
                }
                Err(TryRecvError::Closed) => panic!("closed"),
            }
        });
        assert_eq!(got, from_sender, "sender value (buffer {buffer})");
        if buffer == 0 {
            assert_eq!(sync_rx.recv(), Ok(true));
        }
    });
}

#[test]
fn nonblock() {
    within("nonblock", || {
        for buffer in 0..2 {
            nonblock_case::<i32>(buffer, 123, 234);
            nonblock_case::<i64>(buffer, 123_456, 234_567);
            nonblock_case::<bool>(buffer, true, true);
            nonblock_case::<String>(buffer, "hello".into(), "hello again".into());
        }
    });
}

#[test]
fn select_send_values_evaluated_once() {
    // test/chan/select.go: a loop of non-blocking two-case send selects,
    // each case dropping out (nil) once it fires. Every send value is
    // evaluated on every pass, chosen or not: 10 evaluations in all.
    let counter = Cell::new(0u32);
    let shift = Cell::new(0u32);
    let value = || {
        counter.set(counter.get() + 1);
        1u32 << shift.get()
    };
    let nil = nil_send::<u32>();
    let send = |mut a: Option<&Sender<u32>>, mut b: Option<&Sender<u32>>| {
        let mut i = 0;
        loop {
            select! {
                send(a.unwrap_or(&nil.tx), value()) -> r => { r.unwrap(); i += 1; a = None; }
                send(b.unwrap_or(&nil.tx), value()) -> r => { r.unwrap(); i += 1; b = None; }
                default => break,
            }
            shift.set(shift.get() + 1);
        }
        i
    };
    let (a_tx, a_rx) = bounded::<u32>(1);
    let (b_tx, b_rx) = bounded::<u32>(1);
    assert_eq!(send(Some(&a_tx), Some(&b_tx)), 2);
    let (av, bv) = (a_rx.recv().unwrap(), b_rx.recv().unwrap());
    assert_eq!(av | bv, 3, "bad values {av} {bv}");
    assert_eq!(send(Some(&a_tx), None), 1);
    assert_eq!(counter.get(), 10);
}

#[test]
fn select2_dummy_case_never_chosen() {
    // test/chan/select2.go, without its memory bound (see the file docs):
    // twice on one channel, a run of receives (Go: 100 000; here up to
    // 20 000, fewer when loaded) through a select whose other case never
    // fires. A 0 ends each run.
    within("select2", || {
        for kind in [Some(0), None] {
            let (tx, rx) = chan::<u32>(kind);
            let (_dummy_tx, dummy) = chan::<u32>(kind);
            for _ in 0..2 {
                thread::scope(|s| {
                    let sender = s.spawn(|| {
                        let budget = Budget::new(200, 20_000, ms(150));
                        let mut n = 0;
                        while budget.more(n) {
                            tx.send(1).unwrap();
                            n += 1;
                        }
                        tx.send(0).unwrap();
                        n
                    });
                    let mut got = 0;
                    loop {
                        select! {
                            recv(rx) -> m => match m.unwrap() {
                                0 => break,
                                v => got += v as usize,
                            },
                            recv(dummy) -> _ => panic!("dummy"),
                        }
                    }
                    assert_eq!(got, sender.join().unwrap());
                });
            }
            assert!(rx.is_empty() && dummy.is_empty());
        }
    });
}

/// `select3.go`'s testBlock, "never" half: `f` completes (within `LONG`).
fn never_blocks(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = bounded::<()>(1);
    let h = thread::spawn(move || {
        f();
        done_tx.send(()).unwrap();
    });
    select! {
        recv(done_rx) -> _ => {}
        recv(after(LONG)) -> _ => panic!("{what}: blocked"),
    }
    h.join().unwrap_or_else(|_| panic!("{what}: panicked"));
}

/// `select3.go`'s testBlock, "always" half: `f` is still blocked after
/// 100 ms (`time.After`); then `release` (a close) must wake it.
fn always_blocks(what: &str, f: impl FnOnce() + Send + 'static, release: impl FnOnce()) {
    let (done_tx, done_rx) = bounded::<()>(1);
    let h = thread::spawn(move || {
        f();
        done_tx.send(()).unwrap();
    });
    select! {
        recv(done_rx) -> r => panic!("{what}: did not block ({r:?})"),
        recv(after(ms(100))) -> _ => {}
    }
    release();
    select! {
        recv(done_rx) -> _ => {}
        recv(after(LONG)) -> _ => panic!("{what}: close did not wake it"),
    }
    h.join().unwrap_or_else(|_| panic!("{what}: panicked"));
}

/// `select3.go`'s testBlock, "always" half, for what nothing can release:
/// `f` is still blocked after 100 ms; its thread is left parked.
fn blocks_for_good(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = bounded::<()>(1);
    thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    select! {
        recv(done_rx) -> r => panic!("{what}: did not block ({r:?})"),
        recv(after(ms(100))) -> _ => {}
    }
}

#[test]
fn select3_close_wakes_select_on_timer() {
    // Not in Go (a nil channel cannot be closed), but it is how the nil
    // receive above would be released: SPEC says `close()` on a timer
    // channel stops it and a case on a closed channel is ready, and a
    // plain `recv` parked on `never()` or `after(1h)` is woken by the
    // close; a select parked on one must be woken the same way.
    within("select3 timer close", || {
        let timers: [fn() -> Receiver<Instant>; 2] = [never, || after(Duration::from_secs(3600))];
        for (i, make) in timers.into_iter().enumerate() {
            let t = make();
            let rx = t.clone();
            always_blocks(
                &format!("recv on timer {i}"),
                move || assert_eq!(rx.recv(), Err(RecvError)),
                || assert!(t.close()),
            );
            let t = make();
            let rx = t.clone();
            always_blocks(
                &format!("select on timer {i}"),
                move || select! { recv(rx) -> m => assert_eq!(m, Err(RecvError)) },
                || assert!(t.close()),
            );
        }
    });
}

#[test]
fn select3_blocking_semantics() {
    within("select3", || {
        // Sending / receiving on a nil channel blocks.
        let nil = nil_send::<i32>();
        let tx = nil.tx.clone();
        always_blocks(
            "send on nil chan",
            move || assert_eq!(tx.send(7), Err(SendError(7))),
            || assert!(nil.tx.close()),
        );
        let nilr = never::<i32>();
        let rx = nilr.clone();
        always_blocks(
            "receive on nil chan",
            move || assert_eq!(rx.recv(), Err(RecvError)),
            || assert!(nilr.close()),
        );

        // A nil channel in a select with default is never selected.
        let nil = nil_send::<i32>();
        select! {
            send(nil.tx, 7) -> _ => unreachable!(),
            default => {}
        }
        let nilr = never::<i32>();
        select! {
            recv(nilr) -> _ => unreachable!(),
            default => {}
        }

        // Sending to a buffered channel with room never blocks.
        never_blocks("send with room", || {
            let (tx, _rx) = bounded::<i32>(1);
            tx.send(7).unwrap();
        });

        // Receiving from a closed channel never blocks (Go: zero, false).
        let (closed_tx, closed) = bounded::<i32>(0);
        closed_tx.close();
        let c = closed.clone();
        never_blocks("receive from closed chan", move || {
            for _ in 0..10 {
                assert_eq!(c.recv(), Err(RecvError));
                assert_eq!(c.try_recv(), Err(TryRecvError::Closed));
            }
        });

        // Sending to a closed channel: Go panics; here the value comes back.
        let tx = closed_tx.clone();
        never_blocks("send to closed chan", move || {
            assert_eq!(tx.send(7), Err(SendError(7)));
        });

        // Receiving from a channel nobody sends on blocks.
        let (tx, rx) = bounded::<i32>(0);
        always_blocks(
            "receive from non-ready chan",
            move || assert_eq!(rx.recv(), Err(RecvError)),
            || assert!(tx.close()),
        );

        // An empty select blocks (forever: this thread is left parked);
        // with a timeout it waits that long, and try_wait does not block.
        blocks_for_good("empty select", || Select::<()>::new().wait());
        blocks_for_good("empty select!", || select! {});
        let start = Instant::now();
        assert!(Select::<()>::new().wait_timeout(ms(30)).is_none());
        assert!(start.elapsed() >= ms(30));
        assert!(Select::<()>::new().try_wait().is_none());

        // Selects over nil channels only block. (With only a nil receive
        // the thread stays parked: see `select3_close_wakes_select_on_timer`.)
        let nilr = never::<i32>();
        blocks_for_good("select on nil recv", move || {
            select! { recv(nilr) -> _ => unreachable!() }
        });
        let nil = nil_send::<i32>();
        let tx = nil.tx.clone();
        always_blocks(
            "select on nil send",
            move || select! { send(tx, 7) -> r => assert_eq!(r, Err(SendError(7))) },
            || assert!(nil.tx.close()),
        );
        let (nilr, nil) = (never::<i32>(), nil_send::<i32>());
        let (rx, tx) = (nilr.clone(), nil.tx.clone());
        always_blocks(
            "select on nil recv and nil send",
            move || {
                select! {
                    recv(rx) -> m => assert_eq!(m, Err(RecvError)),
                    send(tx, 7) -> r => assert_eq!(r, Err(SendError(7))),
                }
            },
            || {
                nilr.close();
                nil.tx.close();
            },
        );

        // A select on a non-ready channel blocks.
        let (tx, rx) = bounded::<i32>(0);
        always_blocks(
            "select on non-ready chan",
            move || select! { recv(rx) -> m => assert_eq!(m, Err(RecvError)) },
            || assert!(tx.close()),
        );

        // Selects with a default arm do not block.
        never_blocks("select with only default", || select! { default => {} });
        never_blocks("select with nil recv and default", || {
            let nilr = never::<i32>();
            select! {
                recv(nilr) -> _ => unreachable!(),
                default => {}
            }
        });
        never_blocks("select with nil send and default", || {
            let nil = nil_send::<i32>();
            select! {
                send(nil.tx, 7) -> _ => unreachable!(),
                default => {}
            }
        });

        // Selects with ready channels do not block.
        never_blocks("select send with room", || {
            let (tx, rx) = bounded::<i32>(1);
            select! {
                send(tx, 7) -> r => r.unwrap(),
                default => unreachable!(),
            }
            assert_eq!(rx.try_recv(), Ok(7));
        });
        never_blocks("select recv with a value", || {
            let (tx, rx) = bounded::<i32>(1);
            tx.send(7).unwrap();
            select! {
                recv(rx) -> m => assert_eq!(m, Ok(7)),
                default => unreachable!(),
            }
        });

        // Selects on closed channels behave like the plain operations.
        let c = closed.clone();
        never_blocks("select recv on closed chan", move || {
            select! { recv(c) -> m => assert_eq!(m, Err(RecvError)) }
        });
        let tx = closed_tx.clone();
        never_blocks("select send on closed chan", move || {
            select! { send(tx, 7) -> r => assert_eq!(r, Err(SendError(7))) }
        });

        // A select does not get confused when it sees itself.
        let (tx, rx) = bounded::<i32>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        always_blocks(
            "select sending to and receiving from itself",
            move || {
                select! {
                    send(tx2, 1) -> r => assert_eq!(r, Err(SendError(1))),
                    recv(rx2) -> m => assert_eq!(m, Err(RecvError)),
                }
            },
            || assert!(tx.close()),
        );
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

#[test]
fn select4_ready_case_beside_idle_one() {
    let (c_tx, c) = bounded::<i32>(1);
    let (_c1_tx, c1) = bounded::<i32>(0);
    c_tx.send(42).unwrap();
    let v = select! {
        recv(c1) -> _ => panic!("BUG"),
        recv(c) -> v => v,
    };
    assert_eq!(v, Ok(42));
}

/// Decoy cases for `select5`: an idle rendezvous channel (both sides) and
/// nil channels (both sides).
struct Decoys {
    dummy_tx: Sender<u32>,
    dummy_rx: Receiver<u32>,
    nil: NilSend<u32>,
    nilr: Receiver<u32>,
}

/// A select holding the decoys picked by the bits of `mask`, with the case
/// added by `real` placed before the `pos`-th decoy (or last).
fn with_decoys<'a>(
    d: &'a Decoys,
    mask: u32,
    pos: u32,
    real: impl FnOnce(Select<'a, u32>) -> Select<'a, u32>,
) -> Select<'a, u32> {
    let mut sel = Select::new();
    let mut real = Some(real);
    let mut placed = 0;
    for bit in 0..4 {
        if mask & (1 << bit) == 0 {
            continue;
        }
        if placed == pos {
            if let Some(r) = real.take() {
                sel = r(sel);
            }
        }
        sel = match bit {
            0 => sel.send(&d.dummy_tx, 0, |_| panic!("dummy send")),
            1 => sel.recv(&d.dummy_rx, |_| panic!("dummy receive")),
            2 => sel.send(&d.nil.tx, 0, |_| panic!("nil send")),
            _ => sel.recv(&d.nilr, |_| panic!("nil receive")),
        };
        placed += 1;
    }
    match real.take() {
        Some(r) => r(sel),
        None => sel,
    }
}

#[test]
fn select5_cases_around_one_real_operation() {
    // A real receive (then a real send) on a buffered channel surrounded
    // by every subset of decoys, with the real case at every position,
    // blocking or not: only the real case fires.
    let (dummy_tx, dummy_rx) = bounded::<u32>(0);
    let d = Decoys {
        dummy_tx,
        dummy_rx,
        nil: nil_send(),
        nilr: never(),
    };
    let (c_tx, c_rx) = bounded::<u32>(1);
    let mut n = 1;
    for mask in 0..16u32 {
        for pos in 0..=mask.count_ones() {
            for nonblocking in [false, true] {
                let run = |sel: Select<'_, u32>| {
                    if nonblocking {
                        sel.try_wait().expect("nonblock")
                    } else {
                        sel.wait()
                    }
                };
                c_tx.send(n).unwrap();
                let x = run(with_decoys(&d, mask, pos, |s| {
                    s.recv(&c_rx, |m| m.unwrap())
                }));
                assert_eq!(x, n, "receive, decoys {mask:04b} at {pos}");
                n += 1;

                let x = run(with_decoys(&d, mask, pos, |s| {
                    s.send(&c_tx, n, |r| {
                        r.unwrap();
                        0
                    })
                }));
                assert_eq!(x, 0);
                assert_eq!(c_rx.try_recv(), Ok(n), "send, decoys {mask:04b} at {pos}");
                n += 1;
            }
        }
        // Decoys alone: nothing is ready.
        assert!(with_decoys(&d, mask, 0, |s| s).try_wait().is_none());
    }
    let Decoys {
        dummy_tx,
        dummy_rx,
        nil,
        nilr,
    } = &d;
    // Decoys and a default in `select!`, default first or last.
    let x = select! {
        default => 1,
        send(dummy_tx, 1) -> _ => panic!("dummy send"),
        recv(dummy_rx) -> _ => panic!("dummy receive"),
        send(nil.tx, 1) -> _ => panic!("nil send"),
        recv(nilr) -> _ => panic!("nil receive"),
    };
    assert_eq!(x, 1);
    let x = select! {
        recv(dummy_rx) -> _ => panic!("dummy receive"),
        recv(nilr) -> _ => panic!("nil receive"),
        default => 2,
    };
    assert_eq!(x, 2);

    // Evaluation order: channel operands and send values once each, in
    // source order, on entry, whichever case is chosen.
    let log = RefCell::new(Vec::new());
    let note = |k: u32| log.borrow_mut().push(k);
    c_tx.send(5).unwrap();
    let got = select! {
        send({ note(1); &dummy_tx }, { note(2); 1 }) -> _ => panic!("dummy send"),
        recv({ note(3); &c_rx }) -> m => m.unwrap(),
        recv({ note(4); &dummy_rx }) -> _ => panic!("dummy receive"),
        send({ note(5); &nil.tx }, { note(6); 1 }) -> _ => panic!("nil send"),
        recv({ note(7); &nilr }) -> _ => panic!("nil receive"),
    };
    assert_eq!(got, 5);
    assert_eq!(*log.borrow(), [1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn select6_failed_cases_leave_queues_intact() {
    // Go issue 2075: a select that lost on c1 must leave c1's queue
    // usable for the receivers still waiting there.
    within("select6", || {
        let [(c1_tx, c1), (c2_tx, c2), (c3_tx, c3)] = rendezvous::<bool, 3>();
        let a = spawn_with(c1.clone(), |c1| c1.recv().unwrap());
        let b = thread::spawn(move || {
            select! {
                recv(c1) -> _ => panic!("dummy"),
                recv(c2) -> m => { assert_eq!(m, Ok(true)); c3_tx.send(true).unwrap(); }
            }
            c1.recv().unwrap()
        });
        let c = thread::spawn(move || c2_tx.send(true).unwrap());
        assert_eq!(c3.recv(), Ok(true));
        c1_tx.send(true).unwrap();
        c1_tx.send(true).unwrap();
        assert!(a.join().unwrap() && b.join().unwrap());
        c.join().unwrap();
    });
}

#[test]
fn select7_every_send_form_meets_every_recv_form() {
    fn recv1(rx: Receiver<i32>) {
        assert_eq!(rx.recv(), Ok(1));
    }
    fn recv2(rx: Receiver<i32>) {
        select! { recv(rx) -> m => assert_eq!(m, Ok(1)) }
    }
    fn recv3(rx: Receiver<i32>) {
        let (_keep, other) = bounded::<i32>(0);
        select! {
            recv(rx) -> m => assert_eq!(m, Ok(1)),
            recv(other) -> _ => unreachable!(),
        }
    }
    /// Starts `recv` on a rendezvous channel's receiver in a thread, lets
    /// it run first, sends with `send`, and waits for the receiver.
    fn meet(recv: fn(Receiver<i32>), send: impl FnOnce(Sender<i32>)) {
        let (tx, rx) = bounded(0);
        let h = thread::spawn(move || recv(rx));
        thread::yield_now();
        send(tx);
        h.join().unwrap();
    }
    fn send1(recv: fn(Receiver<i32>)) {
        meet(recv, |tx| tx.send(1).unwrap());
    }
    fn send2(recv: fn(Receiver<i32>)) {
        meet(recv, |tx| select! { send(tx, 1) -> r => r.unwrap() });
    }
    fn send3(recv: fn(Receiver<i32>)) {
        meet(recv, |tx| {
            let (other, _keep) = bounded::<i32>(0);
            select! {
                send(tx, 1) -> r => r.unwrap(),
                send(other, 1) -> _ => unreachable!(),
            }
        });
    }
    within("select7", || {
        for send in [send1, send2, send3] {
            for recv in [recv1, recv2, recv3] {
                send(recv);
            }
        }
    });
}

#[test]
#[allow(clippy::never_loop)] // the point: each loop is left by a `break` in an arm
fn select8_break_in_arms() {
    // `break` in an arm leaves the enclosing loop (Go: the select), with 1-,
    // 2- and 3-case selects and a default-only one.

    // Runs the select in a loop (a macro, so that the arms' `break` is
    // written inside that loop) that must be left in its first pass.
    macro_rules! left_in_first_pass {
        ($select:expr) => {{
            let mut passes = 0;
            loop {
                passes += 1;
                assert_eq!(passes, 1, "break did not leave the loop");
                $select
            }
        }};
    }
    within("select8", || {
        let (tx, rx) = bounded::<i32>(0);
        let tx2 = tx.clone();
        let h = thread::spawn(move || while tx2.send(5).is_ok() {});
        left_in_first_pass!(select! { recv(rx) -> m => { assert_eq!(m, Ok(5)); break; } });
        left_in_first_pass!(select! { default => break });
        left_in_first_pass!(select! {
            recv(rx) -> m => { assert_eq!(m, Ok(5)); break; }
            default => break,
        });
        left_in_first_pass!(select! {
            recv(rx) -> m => { assert_eq!(m, Ok(5)); break; }
            send(tx, 10) -> _ => panic!("nobody receives 10"),
            default => break,
        });
        rx.close();
        h.join().unwrap();
    });
}

#[test]
fn sendstmt_channel_of_channels() {
    // The send case's channel operand is itself received from a channel.
    let (cc_tx, cc_rx) = bounded::<Sender<i32>>(1);
    let (c_tx, c_rx) = bounded::<i32>(1);
    cc_tx.send(c_tx).unwrap();
    select! {
        send(cc_rx.recv().unwrap(), 2) -> r => r.unwrap(),
        default => panic!("nonblock"),
    }
    assert_eq!(c_rx.recv(), Ok(2));
}

#[test]
fn sieve1_primes_over_rendezvous_channels() {
    // Eratosthenes as a pipeline: a generator, then one filter thread per
    // prime found, over rendezvous channels. Dropping the consumer's end
    // then shuts the whole pipeline down, each thread's send failing in turn.
    within("sieve1", || {
        type Threads = Arc<Mutex<Vec<JoinHandle<()>>>>;
        fn spawn(threads: &Threads, f: impl FnOnce() + Send + 'static) {
            threads.lock().unwrap().push(thread::spawn(f));
        }
        fn sieve(primes: Sender<u64>, threads: Threads) {
            let (tx, mut rx) = bounded::<u64>(0);
            spawn(&threads, move || {
                (2..).take_while(|&i| tx.send(i).is_ok()).for_each(drop)
            });
            while let Ok(prime) = rx.recv() {
                if primes.send(prime).is_err() {
                    return;
                }
                let (tx, next) = bounded::<u64>(0);
                let inp = std::mem::replace(&mut rx, next);
                spawn(&threads, move || {
                    for i in &inp {
                        if i % prime != 0 && tx.send(i).is_err() {
                            return;
                        }
                    }
                });
            }
        }
        let threads: Threads = Arc::default();
        let (tx, primes) = bounded::<u64>(0);
        let t = threads.clone();
        let sieve_thread = thread::spawn(move || sieve(tx, t));
        let want = [
            2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83,
            89, 97,
        ];
        for p in want {
            assert_eq!(primes.recv(), Ok(p));
        }
        drop(primes);
        sieve_thread.join().unwrap();
        let handles = std::mem::take(&mut *threads.lock().unwrap());
        assert!(handles.len() >= want.len(), "{} threads", handles.len());
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// `powser1.go`: power series as demand-driven streams of rationals. Each
/// series is a pair of rendezvous channels (a request, then the datum);
/// each operator is a thread; reading two inputs at once is a select over
/// two request sends and two data receives (nil where not wanted).
mod powser {
    use scalechan::{bounded, never, select, Receiver, Sender};
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};
    use std::thread::{self, JoinHandle};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Rat {
        num: i64,
        den: i64,
    }

    pub fn rat(num: i64, den: i64) -> Rat {
        ratio(num.into(), den.into())
    }

    fn ratio(num: i128, den: i128) -> Rat {
        assert_ne!(den, 0);
        let (mut a, mut b) = (num.abs(), den.abs());
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let g = a * den.signum();
        let fit = |x: i128| i64::try_from(x).expect("rational overflow");
        Rat {
            num: fit(num / g),
            den: fit(den / g),
        }
    }

    fn plus(a: Rat, b: Rat) -> Rat {
        let (an, ad, bn, bd) = (a.num as i128, a.den as i128, b.num as i128, b.den as i128);
        ratio(an * bd + bn * ad, ad * bd)
    }

    fn times(a: Rat, b: Rat) -> Rat {
        ratio(a.num as i128 * b.num as i128, a.den as i128 * b.den as i128)
    }

    /// The consumer's end of a series.
    pub struct Ps {
        req: Sender<()>,
        dat: Receiver<Rat>,
    }

    /// The producer's end.
    struct Out {
        req: Receiver<()>,
        dat: Sender<Rat>,
    }

    /// Whether the world is shut down, and the sending ends of every series.
    type Ends = (bool, Vec<(Sender<()>, Sender<Rat>)>);

    /// Every series and thread, so that the test can close them all at the
    /// end (Go's version just exits with its goroutines blocked).
    #[derive(Default)]
    pub struct World {
        ends: Mutex<Ends>,
        threads: Mutex<Vec<JoinHandle<()>>>,
    }

    pub type W = Arc<World>;

    fn pair(w: &W) -> (Ps, Out) {
        let (req_tx, req_rx) = bounded(0);
        let (dat_tx, dat_rx) = bounded(0);
        let mut ends = w.ends.lock().unwrap();
        if ends.0 {
            req_tx.close();
        } else {
            ends.1.push((req_tx.clone(), dat_tx.clone()));
        }
        (
            Ps {
                req: req_tx,
                dat: dat_rx,
            },
            Out {
                req: req_rx,
                dat: dat_tx,
            },
        )
    }

    fn go(w: &W, f: impl FnOnce() -> Option<()> + Send + 'static) {
        let h = thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let _ = f();
            })
            .expect("spawn");
        w.threads.lock().unwrap().push(h);
    }

    /// Closes every series, which ends every thread; returns how many.
    pub fn shutdown(w: &W) -> usize {
        {
            let mut ends = w.ends.lock().unwrap();
            ends.0 = true;
            for (req, dat) in ends.1.drain(..) {
                req.close();
                dat.close();
            }
        }
        let mut joined = 0;
        loop {
            let handles = std::mem::take(&mut *w.threads.lock().unwrap());
            if handles.is_empty() {
                return joined;
            }
            for h in handles {
                h.join().expect("a series thread panicked");
                joined += 1;
            }
        }
    }

    pub fn get(p: &Ps) -> Option<Rat> {
        p.req.send(()).ok()?;
        p.dat.recv().ok()
    }

    fn put(o: &Out, r: Rat) -> Option<()> {
        o.req.recv().ok()?;
        o.dat.send(r).ok()
    }

    /// One item from each of two series, asking both at once.
    fn get2(a: &Ps, b: &Ps) -> Option<(Rat, Rat)> {
        let nil = super::nil_send::<()>();
        let nothing = never::<Rat>();
        let (mut asked, mut got) = ([false; 2], [None::<Rat>; 2]);
        while got.iter().any(Option::is_none) {
            let req_a = if asked[0] { &nil.tx } else { &a.req };
            let req_b = if asked[1] { &nil.tx } else { &b.req };
            let dat_a = if asked[0] && got[0].is_none() {
                &a.dat
            } else {
                &nothing
            };
            let dat_b = if asked[1] && got[1].is_none() {
                &b.dat
            } else {
                &nothing
            };
            select! {
                send(req_a, ()) -> r => { r.ok()?; asked[0] = true; }
                send(req_b, ()) -> r => { r.ok()?; asked[1] = true; }
                recv(dat_a) -> m => got[0] = Some(m.ok()?),
                recv(dat_b) -> m => got[1] = Some(m.ok()?),
            }
        }
        Some((got[0]?, got[1]?))
    }

    fn copy(inp: &Ps, out: &Out) -> Option<()> {
        loop {
            out.req.recv().ok()?;
            out.dat.send(get(inp)?).ok()?;
        }
    }

    /// Serves one input to two consumers at their own pace: one select
    /// over both consumers' requests, the request to the input and the
    /// input's datum (each nil when not wanted), so a consumer that is
    /// behind is served while the input is still being asked. (Go spawns a
    /// goroutine per item instead; a single blocking loop here would
    /// deadlock `exp`, whose input depends on one of its own outputs.)
    fn split_into(w: &W, inp: Ps, outs: [Out; 2]) {
        go(w, move || {
            let (idle, nil, nothing) = (never::<()>(), super::nil_send::<()>(), never::<Rat>());
            let mut behind: [VecDeque<Rat>; 2] = Default::default();
            let (mut live, mut wants, mut asking) = ([true; 2], [false; 2], false);
            loop {
                for side in 0..2 {
                    if wants[side] {
                        if let Some(x) = behind[side].pop_front() {
                            wants[side] = false;
                            live[side] &= outs[side].dat.send(x).is_ok();
                        }
                    }
                }
                if !live[0] && !live[1] {
                    return Some(());
                }
                let need = (wants[0] || wants[1]) && !asking;
                let req0 = if live[0] && !wants[0] {
                    &outs[0].req
                } else {
                    &idle
                };
                let req1 = if live[1] && !wants[1] {
                    &outs[1].req
                } else {
                    &idle
                };
                let ask = if need { &inp.req } else { &nil.tx };
                let dat = if asking { &inp.dat } else { &nothing };
                select! {
                    recv(req0) -> m => { wants[0] = m.is_ok(); live[0] = m.is_ok(); }
                    recv(req1) -> m => { wants[1] = m.is_ok(); live[1] = m.is_ok(); }
                    send(ask, ()) -> r => { r.ok()?; asking = true; }
                    recv(dat) -> m => {
                        let x = m.ok()?;
                        asking = false;
                        for side in 0..2 {
                            if live[side] {
                                behind[side].push_back(x);
                            }
                        }
                    }
                }
            }
        });
    }

    fn split(w: &W, inp: Ps) -> (Ps, Ps) {
        let (a, a_out) = pair(w);
        let (b, b_out) = pair(w);
        split_into(w, inp, [a_out, b_out]);
        (a, b)
    }

    pub fn rep(w: &W, c: Rat) -> Ps {
        let (p, o) = pair(w);
        go(w, move || loop {
            put(&o, c)?;
        });
        p
    }

    pub fn add(w: &W, u: Ps, v: Ps) -> Ps {
        let (p, o) = pair(w);
        go(w, move || loop {
            o.req.recv().ok()?;
            let (a, b) = get2(&u, &v)?;
            o.dat.send(plus(a, b)).ok()?;
        });
        p
    }

    pub fn cmul(w: &W, c: Rat, u: Ps) -> Ps {
        let (p, o) = pair(w);
        go(w, move || loop {
            o.req.recv().ok()?;
            o.dat.send(times(c, get(&u)?)).ok()?;
        });
        p
    }

    pub fn sub(w: &W, u: Ps, v: Ps) -> Ps {
        add(w, u, cmul(w, rat(-1, 1), v))
    }

    pub fn diff(w: &W, u: Ps) -> Ps {
        let (p, o) = pair(w);
        go(w, move || {
            for i in 1.. {
                o.req.recv().ok()?;
                if i == 1 {
                    get(&u)?; // the constant term goes
                }
                o.dat.send(times(rat(i, 1), get(&u)?)).ok()?;
            }
            Some(())
        });
        p
    }

    pub fn integ(w: &W, c: Rat, u: Ps) -> Ps {
        let (p, o) = pair(w);
        go(w, move || {
            put(&o, c)?;
            for i in 1.. {
                o.req.recv().ok()?;
                o.dat.send(times(rat(1, i), get(&u)?)).ok()?;
            }
            Some(())
        });
        p
    }

    /// (u + x U')(v + x V') = uv + x (u V' + v U') + x^2 U' V'
    pub fn mul(w: &W, u: Ps, v: Ps) -> Ps {
        let (p, o) = pair(w);
        let w2 = w.clone();
        go(w, move || {
            let w = &w2;
            o.req.recv().ok()?;
            let (a, b) = get2(&u, &v)?;
            o.dat.send(times(a, b)).ok()?;
            let (u0, u1) = split(w, u);
            let (v0, v1) = split(w, v);
            let mid = add(w, cmul(w, a, v0), cmul(w, b, u0));
            o.req.recv().ok()?;
            o.dat.send(get(&mid)?).ok()?;
            copy(&add(w, mid, mul(w, u1, v1)), &o)
        });
        p
    }

    /// Z = exp(U) (constant term of U ignored): Z = 1 + integral(Z U').
    pub fn exp(w: &W, u: Ps) -> Ps {
        let (z0, z0_out) = pair(w);
        let (z1, z1_out) = pair(w);
        let src = integ(w, rat(1, 1), mul(w, z0, diff(w, u)));
        split_into(w, src, [z0_out, z1_out]);
        z1
    }

    /// U(c0 x^n).
    pub fn monsubst(w: &W, u: Ps, c0: Rat, n: usize) -> Ps {
        let (p, o) = pair(w);
        go(w, move || {
            let mut c = rat(1, 1);
            loop {
                o.req.recv().ok()?;
                o.dat.send(times(get(&u)?, c)).ok()?;
                c = times(c, c0);
                for _ in 1..n {
                    put(&o, rat(0, 1))?;
                }
            }
        });
        p
    }
}

#[test]
fn powser1_power_series() {
    use powser::*;
    within("powser1", || {
        let w: W = Arc::default();
        let check = |what: &str, s: &Ps, want: &[Rat]| {
            for (i, &r) in want.iter().enumerate() {
                assert_eq!(get(s), Some(r), "{what}: term {i}");
            }
        };
        let (zero, one, two) = (rat(0, 1), rat(1, 1), rat(2, 1));
        let ones = || rep(&w, one);
        let twos = || rep(&w, two);
        check("Ones", &ones(), &[one; 5]);
        check("Add Ones Ones", &add(&w, ones(), ones()), &[two; 5]);
        check("Add Ones Twos", &add(&w, ones(), twos()), &[rat(3, 1); 5]);
        let up: Vec<Rat> = (1..=10).map(|i| rat(i, 1)).collect();
        check("Diff", &diff(&w, ones()), &up);
        let harmonic: Vec<Rat> = (0..10)
            .map(|i| if i == 0 { zero } else { rat(1, i) })
            .collect();
        check("Integ", &integ(&w, zero, ones()), &harmonic);
        check("CMul", &cmul(&w, rat(-1, 1), twos()), &[rat(-2, 1); 10]);
        check("Sub Ones Twos", &sub(&w, ones(), twos()), &[rat(-1, 1); 5]);
        check("Mul", &mul(&w, ones(), ones()), &up);
        // exp(x / (1 - x)): Lah-number sums over n!.
        let e = [
            (1, 1),
            (1, 1),
            (3, 2),
            (13, 6),
            (73, 24),
            (167, 40),
            (4051, 720),
            (37633, 5040),
            (43817, 4480),
            (4596553, 362880),
        ]
        .map(|(n, d)| rat(n, d));
        check("Exp", &exp(&w, ones()), &e);
        // atan x = x - x^3/3 + x^5/5 - ...
        let atan: Vec<Rat> = (0..10i64)
            .map(|i| match i % 4 {
                1 => rat(1, i),
                3 => rat(-1, i),
                _ => zero,
            })
            .collect();
        let at = integ(&w, zero, monsubst(&w, ones(), rat(-1, 1), 2));
        check("ATan", &at, &atan);
        let threads = shutdown(&w);
        assert!(threads > 50, "only {threads} threads?");
    });
}

#[test]
fn zerosize_channels() {
    // Go only makes channels of zero-sized types; here they also carry
    // traffic: counts, blocking, close and select.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Nothing;

    fn exercise<T: Copy + PartialEq + Debug + Send + Sync>(v: T) {
        for kind in [Some(0), Some(1), Some(3), None] {
            let (tx, rx) = chan::<T>(kind);
            let n = kind.unwrap_or(1000);
            for _ in 0..n {
                tx.send(v).unwrap();
            }
            assert_eq!(rx.len(), n);
            if let Some(cap) = kind {
                assert!(tx.is_full());
                assert_eq!(tx.try_send(v), Err(TrySendError::Full(v)));
                // A blocked sender is released by a receive.
                thread::scope(|s| {
                    let h = s.spawn(|| tx.send(v));
                    thread::sleep(BRIEF);
                    assert_eq!(rx.recv(), Ok(v));
                    assert_eq!(h.join().unwrap(), Ok(()));
                });
                assert_eq!(rx.len(), cap);
            }
            // Rendezvous through select, both sides.
            thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..30 {
                        select! { send(tx, v) -> r => r.unwrap() }
                    }
                });
                for _ in 0..30 {
                    select! { recv(rx) -> m => assert_eq!(m, Ok(v)) }
                }
            });
            tx.close();
            assert_eq!(rx.try_iter().count(), n, "{kind:?}");
            assert_eq!(rx.recv(), Err(RecvError));
            assert!(rx.is_empty());
        }
    }
    within("zerosize", || {
        exercise(());
        exercise([0u8; 0]);
        exercise(Nothing);
    });
}

// ============================= crossbeam's extra ports: closedchan, ken/*

#[test]
fn closedchan() {
    fn drained(rx: &Receiver<i32>) {
        for _ in 0..3 {
            assert_eq!(rx.recv(), Err(RecvError));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
            select! { recv(rx) -> m => assert_eq!(m, Err(RecvError)) }
        }
    }
    let closed = |cap: Option<usize>, buffered: bool| {
        let (tx, rx) = chan::<i32>(cap);
        if buffered {
            tx.send(1).unwrap();
        }
        assert!(tx.close());
        assert!(!tx.close(), "Go panics on a second close");
        assert!(!rx.close());
        assert_eq!(tx.try_send(2), Err(TrySendError::Closed(2)));
        rx
    };
    drained(&closed(Some(0), false));
    for kind in [Some(2), None] {
        drained(&closed(kind, false));
        let rx = closed(kind, true);
        assert_eq!(rx.recv(), Ok(1), "last value via recv");
        drained(&rx);
        let rx = closed(kind, true);
        assert_eq!(rx.try_recv(), Ok(1), "last value via try_recv");
        drained(&rx);
        let rx = closed(kind, true);
        let got = select! { recv(rx) -> m => m };
        assert_eq!(got, Ok(1), "last value via select");
        drained(&rx);
    }
}

/// One channel of `ken/chan.go`: it carries `first..first + KEN_MSGS` (Go:
/// 76 values).
#[derive(Clone)]
struct Seq {
    tx: Sender<i32>,
    rx: Receiver<i32>,
    first: i32,
}

const KEN_MSGS: i32 = 16;

#[derive(Default)]
struct Tally {
    sent: AtomicUsize,
    recvd: AtomicUsize,
}

/// A random short pause (Go: a random number of `Gosched` calls). A spin,
/// not `yield_now`: on a loaded machine each yield gives the core away for
/// a whole time slice.
fn ken_pause(seed: &mut u32) {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 17;
    *seed ^= *seed << 5;
    for _ in 0..*seed % 512 {
        std::hint::spin_loop();
    }
}

fn ken_send(c: &Seq, t: &Tally) {
    let mut seed = c.first as u32 | 1;
    for v in c.first..c.first + KEN_MSGS {
        ken_pause(&mut seed);
        c.tx.send(v).unwrap();
        t.sent.fetch_add(1, SeqCst);
    }
}

fn ken_recv(c: &Seq, t: &Tally) {
    let mut seed = c.first as u32 | 3;
    for v in c.first..c.first + KEN_MSGS {
        ken_pause(&mut seed);
        assert_eq!(c.rx.recv(), Ok(v), "out of order");
        t.recvd.fetch_add(1, SeqCst);
    }
}

/// Receives every sequence of `recvs` (checking order) and sends every
/// sequence of `sends`, all through one select per step, built from the
/// channels still unfinished.
fn ken_sel(recvs: &[Seq], sends: &[Seq], t: &Tally) {
    enum Step {
        Got(usize, i32),
        Put(usize),
    }
    let mut rnext: Vec<i32> = recvs.iter().map(|c| c.first).collect();
    let mut snext: Vec<i32> = sends.iter().map(|c| c.first).collect();
    let mut seed = 7;
    loop {
        ken_pause(&mut seed);
        let mut sel = Select::<Step>::new();
        let mut cases = 0;
        for (k, c) in recvs.iter().enumerate() {
            if rnext[k] < c.first + KEN_MSGS {
                sel = sel.recv(&c.rx, move |m| Step::Got(k, m.expect("closed")));
                cases += 1;
            }
        }
        for (k, c) in sends.iter().enumerate() {
            if snext[k] < c.first + KEN_MSGS {
                sel = sel.send(&c.tx, snext[k], move |r| {
                    r.expect("closed");
                    Step::Put(k)
                });
                cases += 1;
            }
        }
        if cases == 0 {
            return;
        }
        match sel.wait() {
            Step::Got(k, v) => {
                assert_eq!(v, rnext[k], "out of order");
                rnext[k] += 1;
                t.recvd.fetch_add(1, SeqCst);
            }
            Step::Put(k) => {
                snext[k] += 1;
                t.sent.fetch_add(1, SeqCst);
            }
        }
    }
}

#[test]
fn ken_chan_direct_and_select_mixes() {
    // ken/chan.go: at capacities 0, 1, 10, 100, channels each carrying an
    // ordered sequence, driven six ways: direct send to direct receive,
    // direct sends to one select, one select to direct receives, select to
    // select over 4 and over 8 channels, and all of these mixed.
    within("ken/chan", || {
        let t = Tally::default();
        let mut next = 0;
        let mut mk = |cap: usize, n: usize| -> Vec<Seq> {
            (0..n)
                .map(|_| {
                    next += 100;
                    let (tx, rx) = bounded(cap);
                    Seq {
                        tx,
                        rx,
                        first: next,
                    }
                })
                .collect()
        };
        // All four capacities unless the machine is loaded; at least the
        // rendezvous one.
        let budget = Budget::new(1, 4, ms(600));
        let mut rounds = 0;
        for cap in [0, 1, 10, 100] {
            if !budget.more(rounds) {
                break;
            }
            rounds += 1;
            let t = &t;
            let a = mk(cap, 4);
            thread::scope(|s| {
                for c in &a {
                    s.spawn(move || ken_send(c, t));
                    s.spawn(move || ken_recv(c, t));
                }
            });
            let a = mk(cap, 4);
            thread::scope(|s| {
                for c in &a {
                    s.spawn(move || ken_send(c, t));
                }
                s.spawn(|| ken_sel(&a, &[], t));
            });
            let a = mk(cap, 4);
            thread::scope(|s| {
                for c in &a {
                    s.spawn(move || ken_recv(c, t));
                }
                s.spawn(|| ken_sel(&[], &a, t));
            });
            let a = mk(cap, 4);
            thread::scope(|s| {
                s.spawn(|| ken_sel(&[], &a, t));
                s.spawn(|| ken_sel(&a, &[], t));
            });
            let a = mk(cap, 8);
            thread::scope(|s| {
                s.spawn(|| ken_sel(&a[4..], &a[..4], t));
                s.spawn(|| ken_sel(&a[..4], &a[4..], t));
            });
            let a = mk(cap, 12);
            thread::scope(|s| {
                for c in &a[4..8] {
                    s.spawn(move || ken_send(c, t));
                }
                for c in &a[8..] {
                    s.spawn(move || ken_recv(c, t));
                }
                s.spawn(|| ken_sel(&a[4..8], &a[..4], t));
                s.spawn(|| ken_sel(&a[..4], &a[8..], t));
            });
        }
        let want = rounds * (4 * 4 + 8 + 12) * KEN_MSGS as usize;
        assert_eq!((t.sent.into_inner(), t.recvd.into_inner()), (want, want));
    });
}

#[test]
fn ken_chan1_each_message_once() {
    // ken/chan1.go: receivers in select loops on a small buffer; each
    // message is marked sent before its send and must be received once.
    within("ken/chan1", || {
        const N: usize = 400;
        const M: usize = 8;
        let marks: Vec<AtomicU8> = (0..N).map(|_| AtomicU8::new(0)).collect();
        let (tx, rx) = bounded::<usize>(2);
        thread::scope(|s| {
            for _ in 0..M {
                let (rx, marks) = (&rx, &marks);
                s.spawn(move || loop {
                    select! {
                        recv(rx) -> m => match m {
                            Ok(r) => assert_eq!(marks[r].compare_exchange(1, 2, SeqCst, SeqCst), Ok(1), "message {r}"),
                            Err(RecvError) => break,
                        }
                    }
                });
                thread::yield_now();
            }
            for (n, mark) in marks.iter().enumerate() {
                assert_eq!(mark.swap(1, SeqCst), 0);
                tx.send(n).unwrap();
            }
            tx.close();
        });
        assert!(marks.iter().all(|m| m.load(SeqCst) == 2));
    });
}
