//! Memory behaviour: steady traffic does not allocate, and a long-lived
//! channel's segment list stays small.
//!
//! This binary holds ONE `#[test]` that runs its scenarios one after the
//! other: the allocation counter and `live_segments()` are process-global,
//! so no other test may run beside them.

use scalechan::{bounded, unbounded};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// Counts allocations (and reallocations) while `COUNTING` is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: per GlobalAlloc's contract, passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns how many allocations happened (on any thread).
fn count_allocs(f: impl FnOnce()) -> usize {
    ALLOCS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCS.load(Ordering::SeqCst)
}

/// Allowed allocations in a measured phase of 100_000 messages.
///
/// Why a small constant and not zero: segments are recycled through a pool
/// of 4 spares per list, and a retired segment returns to the pool only
/// after the global epoch has advanced twice; while the pool runs dry at the
/// start of the phase a few fresh segments may be allocated, and the epoch
/// machinery may grow its garbage list's capacity a few times. None of that
/// scales with the number of messages. A per-message (or per-segment, i.e.
/// every 32 messages: ~3000 here) allocation would blow far past 64.
const BUDGET: usize = 64;

const MESSAGES: usize = 100_000;

fn unbounded_single_thread() -> usize {
    let (tx, rx) = unbounded::<u64>();
    let run = |n: usize| {
        // Bursts of 50: crosses segment boundaries constantly, keeps a
        // couple of segments live.
        let mut i = 0;
        while i < n {
            for k in 0..50 {
                tx.send((i + k) as u64).unwrap();
            }
            for k in 0..50 {
                assert_eq!(rx.recv(), Ok((i + k) as u64));
            }
            i += 50;
        }
    };
    run(10_000); // warm-up: fill the spare pool, register the thread
    count_allocs(|| run(MESSAGES))
}

fn bounded_single_thread(cap: usize) -> usize {
    let (tx, rx) = bounded::<u64>(cap);
    let run = |n: usize| {
        let mut i = 0;
        while i < n {
            for k in 0..cap {
                tx.try_send((i + k) as u64).unwrap();
            }
            assert!(tx.is_full());
            for k in 0..cap {
                assert_eq!(rx.try_recv(), Ok((i + k) as u64));
            }
            i += cap;
        }
    };
    run(10_000);
    count_allocs(|| run(MESSAGES))
}

fn bounded_two_threads(cap: usize) -> usize {
    // Producer thread blocks on the semaphore when full, consumer blocks on
    // empty: exercises the parking paths (waiter cells of the semaphore too).
    let (tx, rx) = bounded::<u64>(cap);
    let (go_tx, go_rx) = bounded::<bool>(0);
    let h = thread::spawn(move || {
        while let Ok(measured) = go_rx.recv() {
            let n = if measured { MESSAGES } else { 10_000 };
            for i in 0..n {
                tx.send(i as u64).unwrap();
            }
        }
    });
    let run = |measured: bool| {
        let n = if measured { MESSAGES } else { 10_000 };
        go_tx.send(measured).unwrap();
        for i in 0..n {
            assert_eq!(rx.recv(), Ok(i as u64));
        }
    };
    run(false);
    let allocs = count_allocs(|| run(true));
    drop(go_tx);
    h.join().unwrap();
    allocs
}

/// A `bounded::<()>(1)` semaphore passed back and forth between two
/// threads: every operation blocks in turn, through the wait lists of the
/// zero-sized channel (`counting.rs`), which must not allocate per wait.
fn semaphore_ping_pong() -> usize {
    let (acquire, release) = bounded::<()>(1);
    let (turn_tx, turn_rx) = bounded::<()>(1);
    let h = thread::spawn(move || {
        // Holds the permit until the main thread asks for it back.
        while turn_rx.recv().is_ok() {
            acquire.send(()).unwrap();
        }
    });
    let run = |n: usize| {
        for _ in 0..n / 2 {
            turn_tx.send(()).unwrap();
            release.recv().unwrap();
        }
    };
    run(10_000);
    let allocs = count_allocs(|| run(MESSAGES));
    drop(turn_tx);
    h.join().unwrap();
    allocs
}

fn rendezvous_ping_pong() -> usize {
    let (ping_tx, ping_rx) = bounded::<u64>(0);
    let (pong_tx, pong_rx) = bounded::<u64>(0);
    let h = thread::spawn(move || {
        for v in ping_rx.iter() {
            pong_tx.send(v + 1).unwrap();
        }
    });
    let run = |n: usize| {
        // Each round trip is two rendezvous messages.
        for i in 0..n / 2 {
            ping_tx.send(i as u64).unwrap();
            assert_eq!(pong_rx.recv(), Ok(i as u64 + 1));
        }
    };
    run(10_000);
    let allocs = count_allocs(|| run(MESSAGES));
    drop(ping_tx);
    h.join().unwrap();
    allocs
}

/// `select!` with a fixed set of cases, blocking (a partner thread) and
/// non-blocking: the cases live on the stack, so no allocation per select.
fn select_macro() -> usize {
    let (ping_tx, ping_rx) = bounded::<u64>(0);
    let (pong_tx, pong_rx) = bounded::<u64>(1);
    let (_quit_tx, quit_rx) = bounded::<()>(0);
    let h = thread::spawn(move || {
        for v in ping_rx.iter() {
            pong_tx.send(v + 1).unwrap();
        }
    });
    let run = |n: usize| {
        for i in 0..n / 2 {
            scalechan::select! {
                send(ping_tx, i as u64) -> r => r.unwrap(),
                recv(quit_rx) -> _ => unreachable!(),
            }
            let got = scalechan::select! {
                recv(pong_rx) -> v => v.unwrap(),
                recv(quit_rx) -> _ => unreachable!(),
            };
            assert_eq!(got, i as u64 + 1);
            let idle = scalechan::select! {
                recv(quit_rx) -> _ => false,
                default => true,
            };
            assert!(idle);
        }
    };
    run(10_000);
    let allocs = count_allocs(|| run(MESSAGES));
    drop(ping_tx);
    h.join().unwrap();
    allocs
}

fn long_lived_unbounded_segments() -> (usize, usize) {
    let total: usize = if cfg!(miri) {
        20_000
    } else if cfg!(debug_assertions) {
        1_000_000
    } else {
        10_000_000
    };
    let base = scalechan::__private::live_segments();
    let (tx, rx) = unbounded::<u64>();
    let mut peak = 0;
    let burst = 1000;
    let mut i = 0;
    while i < total {
        for k in 0..burst {
            tx.send((i + k) as u64).unwrap();
        }
        // A burst of 1000 spans 32 segments; the list must shrink back.
        let live = scalechan::__private::live_segments();
        peak = peak.max(live - base.min(live));
        for k in 0..burst {
            assert_eq!(rx.try_recv(), Ok((i + k) as u64));
        }
        i += burst;
    }
    assert!(rx.is_empty());
    let after_drain = scalechan::__private::live_segments() - base;
    drop((tx, rx));
    (after_drain, peak)
}

/// Go's ChanUncontended shape, with more threads than cores: `threads`
/// threads, each on an unbounded channel of its own, send a burst of 100
/// and receive it, `rounds` times, while the main thread samples the live
/// segments. Returns the most it saw. A thread preempted while pinned on
/// its own channel must not hold back the others' reclamation: with one
/// epoch for the whole process it did, and 8 threads on 2 cores held 50 000
/// to 90 000 segments mid-run.
fn threads_on_their_own_channels(threads: usize, rounds: usize) -> usize {
    let base = scalechan::__private::live_segments();
    let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let running = running.clone();
            thread::spawn(move || {
                let (tx, rx) = unbounded::<u64>();
                for round in 0..rounds {
                    for k in 0..100 {
                        tx.send((round * 100 + k) as u64).unwrap();
                    }
                    for k in 0..100 {
                        assert_eq!(rx.recv(), Ok((round * 100 + k) as u64));
                    }
                }
                running.fetch_sub(1, std::sync::atomic::Ordering::Release);
            })
        })
        .collect();
    let mut peak = 0;
    while running.load(std::sync::atomic::Ordering::Acquire) > 0 {
        let live = scalechan::__private::live_segments();
        peak = peak.max(live.saturating_sub(base));
        thread::sleep(std::time::Duration::from_micros(200));
    }
    for h in handles {
        h.join().unwrap();
    }
    peak
}

/// Go's ChanPopular shape: `threads` workers each loop on a select over
/// one shared channel that never fires (a `quit` channel) and its own work
/// channel, which the main thread feeds. Every select that parks registers
/// a receive on the quiet channel and withdraws it when its work arrives,
/// out of order with the other workers'. Returns the live segments (over
/// the start) after the run, while the quiet channel is still alive.
fn quiet_channel_selects(threads: usize, rounds: usize) -> usize {
    let base = scalechan::__private::live_segments();
    let (quit_tx, quit_rx) = bounded::<()>(0);
    let mut work = Vec::new();
    thread::scope(|s| {
        for _ in 0..threads {
            let (tx, rx) = bounded::<usize>(0);
            work.push(tx);
            let quit_rx = quit_rx.clone();
            s.spawn(move || {
                for _ in 0..rounds {
                    scalechan::select! {
                        recv(quit_rx) -> _ => panic!("quit never fires"),
                        recv(rx) -> m => assert!(m.is_ok()),
                    }
                }
            });
        }
        for _ in 0..rounds {
            for tx in &work {
                tx.send(1).unwrap();
            }
        }
    });
    // The work channels go (each list keeps up to three reclaim windows of
    // retired segments and its spares, a trail of none): what remains is
    // the quiet channel's.
    drop(work);
    // Receivers that time out out of order on a quiet channel, the same
    // withdrawal through `recv_timeout`.
    let (_tx, rx) = unbounded::<u64>();
    thread::scope(|s| {
        for _ in 0..threads {
            let rx = rx.clone();
            s.spawn(move || {
                for _ in 0..rounds / 10 {
                    let r = rx.recv_timeout(std::time::Duration::from_micros(1));
                    assert!(r.is_err());
                }
            });
        }
    });
    let live = scalechan::__private::live_segments();
    drop(quit_tx);
    live.saturating_sub(base)
}

/// Senders that give up on a full `bounded(1)` that nobody drains: `threads`
/// threads looping on `send_timeout`, out of order with each other, then a
/// select loop whose send case times out; with `blocked`, a sender blocked
/// for good at the head of the permit queue all along. Every attempt queues
/// for a permit and withdraws. Returns the live segments (over the start)
/// while the channel is still alive; then checks that the channel still
/// counts its capacity right.
fn stuck_full_channel_timeouts(threads: usize, rounds: usize, blocked: bool) -> usize {
    let base = scalechan::__private::live_segments();
    let (tx, rx) = bounded::<u64>(1);
    tx.send(0).unwrap();
    let live = thread::scope(|s| {
        let head = blocked.then(|| {
            let tx = tx.clone();
            let h = s.spawn(move || tx.send(9).unwrap());
            // (It queues within its 50 us pre-wait; the senders below
            // time out behind it either way.)
            thread::sleep(Duration::from_millis(1));
            h
        });
        let loops: Vec<_> = (0..threads)
            .map(|_| {
                let tx = tx.clone();
                s.spawn(move || {
                    for _ in 0..rounds {
                        assert!(tx.send_timeout(1, Duration::from_micros(1)).is_err());
                    }
                })
            })
            .collect();
        for h in loops {
            h.join().unwrap();
        }
        for _ in 0..rounds / 4 {
            scalechan::select! {
                send(tx, 1) -> _ => panic!("the channel is full"),
                default(Duration::from_micros(1)) => {}
            }
        }
        let live = scalechan::__private::live_segments();
        assert_eq!(rx.recv(), Ok(0));
        if let Some(h) = head {
            h.join().unwrap();
            assert_eq!(rx.recv(), Ok(9));
        }
        live
    });
    // Exactly one slot again: the withdrawn debts left no permit behind and
    // took none away.
    assert_eq!(tx.try_send(2), Ok(()));
    assert!(tx.try_send(3).is_err());
    assert_eq!(rx.try_recv(), Ok(2));
    assert!(rx.try_recv().is_err());
    live.saturating_sub(base)
}

/// A waiter blocked for good at the head of a channel nobody serves (Go's
/// `done` channel with one goroutine parked on it), and `threads` pollers
/// behind it that give up out of order: receivers with `recv_timeout` or a
/// select loop's timeout, or rendezvous senders with `send_timeout`. A poller that
/// gives up below another's index cannot hand it back (on a rendezvous
/// channel no index goes back), and the blocked waiter keeps the other side
/// from being moved past it, so without taking such cells over
/// (`adopt_skip`) every round left a skip. Returns the live segments (over
/// the start) after the run, with the blocked waiter still parked; then
/// releases it and checks it got the one message.
#[derive(Clone, Copy, PartialEq)]
enum Poll {
    Recv,
    Send,
    Select,
}

fn timeouts_behind_a_blocked_waiter(cap: Option<usize>, poll: Poll, rounds: usize) -> usize {
    let senders = poll == Poll::Send;
    let base = scalechan::__private::live_segments();
    let (tx, rx) = match cap {
        None => unbounded::<u64>(),
        Some(cap) => bounded::<u64>(cap),
    };
    thread::scope(|s| {
        let blocked = if senders {
            let tx = tx.clone();
            s.spawn(move || tx.send(7).is_ok().then_some(7))
        } else {
            let rx = rx.clone();
            s.spawn(move || rx.recv().ok())
        };
        thread::sleep(Duration::from_millis(2));
        let pollers: Vec<_> = (0..2)
            .map(|_| {
                let (tx, rx) = (tx.clone(), rx.clone());
                s.spawn(move || {
                    for _ in 0..rounds {
                        match poll {
                            Poll::Send => {
                                assert!(tx.send_timeout(1, Duration::from_micros(1)).is_err())
                            }
                            Poll::Recv => {
                                assert!(rx.recv_timeout(Duration::from_micros(1)).is_err())
                            }
                            Poll::Select => scalechan::select! {
                                recv(rx) -> _ => panic!("nothing was sent"),
                                default(Duration::from_micros(1)) => {}
                            },
                        }
                    }
                })
            })
            .collect();
        for p in pollers {
            p.join().unwrap();
        }
        scalechan::__private::collect_garbage();
        let live = scalechan::__private::live_segments().saturating_sub(base);
        if senders {
            assert_eq!(rx.recv(), Ok(7));
        } else {
            tx.send(7).unwrap();
        }
        assert_eq!(blocked.join().unwrap(), Some(7));
        assert!(rx.try_recv().is_err(), "one message, received once");
        live
    })
}

#[test]
fn memory() {
    // Before any channel exists, so every segment freed is one counted.
    scalechan::__private::count_live_segments();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    let mut check = |name: &str, allocs: usize| {
        report.push(format!("{name}: {allocs} allocations"));
        if allocs >= BUDGET {
            failures.push(format!(
                "{name}: {allocs} allocations for {MESSAGES} messages (budget {BUDGET})"
            ));
        }
    };

    // (a) steady traffic allocates O(1) times.
    check("unbounded, one thread", unbounded_single_thread());
    check("bounded(16), one thread", bounded_single_thread(16));
    check("bounded(1), one thread", bounded_single_thread(1));
    check("bounded(16), two threads", bounded_two_threads(16));
    check("bounded(0), ping-pong", rendezvous_ping_pong());
    check("bounded::<()>(1), ping-pong", semaphore_ping_pong());
    check("select!, ping-pong and default", select_macro());

    // (b) a long-lived unbounded channel keeps its segment list small.
    let (after_drain, peak) = long_lived_unbounded_segments();
    report.push(format!(
        "unbounded long-lived: {after_drain} live segments after drain, peak {peak}"
    ));
    // A burst of 1000 messages needs 32 segments of 32 cells; reclamation
    // lags by two epochs, so the peak may exceed that a little. 64 bounds
    // it: unbounded growth would reach thousands.
    if after_drain >= 64 {
        failures.push(format!(
            "{after_drain} segments live after draining (limit 64)"
        ));
    }
    if peak >= 128 {
        failures.push(format!(
            "peak of {peak} segments during bursts of 1000 (limit 128)"
        ));
    }

    // (c) waiters that give up on a quiet channel out of order leave no
    // trail of segments behind them.
    let rounds = if cfg!(miri) { 200 } else { 50_000 };
    let live = quiet_channel_selects(8, rounds);
    report.push(format!(
        "8 select loops on a quiet channel, {rounds} rounds: {live} live segments"
    ));
    // 8 x 50 000 withdrawals would leave 12 500 segments if none were passed.
    if live >= 64 {
        failures.push(format!(
            "{live} segments live after {rounds} rounds of selects on a quiet channel (limit 64)"
        ));
    }

    // (c2) threads on channels of their own, more of them than cores,
    // each get their segments back while the others are preempted.
    let (threads, rounds) = if cfg!(miri) { (3, 20) } else { (8, 20_000) };
    let peak = threads_on_their_own_channels(threads, rounds);
    report.push(format!(
        "{threads} threads on their own unbounded channels, {rounds} rounds of 100: peak {peak} live segments"
    ));
    // Per list: three reclaim windows of retired segments (a window is
    // freed two reclaims after it closes), a pool of 8 spares and the
    // segments in use, 22 in all; the rest is slack for segments being
    // swapped between the pool and the list as the sample is taken.
    let limit = 32 * threads;
    if peak >= limit {
        failures.push(format!(
            "{threads} threads on their own channels: peak {peak} live segments (limit {limit})"
        ));
    }

    // (d) senders that give up on a full channel nobody drains leave no
    // trail of permit-queue segments either.
    let rounds = if cfg!(miri) { 100 } else { 20_000 };
    // Behind a sender blocked for good at the head of the queue, waiters
    // that give up out of order leave withdrawn cells nobody can pass; the
    // last to give up hands them back with its own index
    // (`Semaphore::give_back_withdrawn`; 580 segments before it), and the
    // next to queue takes one over (`Semaphore::reuse_withdrawn`: with both
    // cores kept busy by other processes, the two loops kept taking
    // indices above each other's and left 900 segments before it).
    for (threads, blocked) in [(1, false), (4, false), (2, true)] {
        let live = stuck_full_channel_timeouts(threads, rounds, blocked);
        let what = format!(
            "{threads} send_timeout loops{} on a full channel, {rounds} rounds",
            if blocked {
                " behind a blocked sender"
            } else {
                ""
            }
        );
        report.push(format!("{what}: {live} live segments"));
        // Without withdrawals, one segment per 32 attempts: 625 per loop.
        if live >= 64 {
            failures.push(format!("{what}: {live} live segments (limit 64)"));
        }
    }

    // (e) zero-sized messages keep a count, no cells: no segment at all.
    let base = scalechan::__private::live_segments();
    let (tx, rx) = bounded::<()>(4);
    let (utx, urx) = unbounded::<()>();
    for _ in 0..100 {
        tx.send(()).unwrap();
        utx.send(()).unwrap();
        rx.recv().unwrap();
    }
    let live = scalechan::__private::live_segments() - base;
    report.push(format!(
        "bounded::<()>(4) and unbounded::<()>(): {live} live segments"
    ));
    if live != 0 {
        failures.push(format!(
            "zero-sized channels hold {live} segments (none expected)"
        ));
    }
    drop((tx, rx, utx, urx));

    // (f) receives on a closed channel (Go's closed `done` channel, polled
    // or waited on) take no room: each takes an index past the close, and
    // none may walk the list out to its cell (one segment per 32 receives
    // before the fix: 2 000 here).
    let calls = if cfg!(miri) { 100 } else { 32_000 };
    for (name, (tx, rx)) in [
        ("unbounded", unbounded::<u64>()),
        ("bounded(4)", bounded::<u64>(4)),
        ("bounded(0)", bounded::<u64>(0)),
    ] {
        drop(tx);
        let base = scalechan::__private::live_segments();
        for _ in 0..calls {
            assert!(rx.recv().is_err());
            assert!(rx.recv_timeout(Duration::from_millis(1)).is_err());
        }
        scalechan::__private::collect_garbage();
        let live = scalechan::__private::live_segments().saturating_sub(base);
        report.push(format!(
            "{name}, closed: {live} new live segments after {} receives",
            2 * calls
        ));
        if live > 2 {
            failures.push(format!(
                "{name}, closed: {live} new live segments after {} receives (limit 2)",
                2 * calls
            ));
        }
    }

    // (g) pollers that give up out of order behind a waiter blocked for
    // good leave no trail either (before `adopt_skip`: 620 segments on an
    // unbounded channel, 1250 on a rendezvous one, for 2 x 20 000 rounds).
    let rounds = if cfg!(miri) { 100 } else { 20_000 };
    for (name, cap, poll) in [
        ("unbounded", None, Poll::Recv),
        ("bounded(4)", Some(4), Poll::Recv),
        ("bounded(0)", Some(0), Poll::Recv),
        ("bounded(0), senders", Some(0), Poll::Send),
        ("unbounded, select loops", None, Poll::Select),
        ("bounded(0), select loops", Some(0), Poll::Select),
    ] {
        let live = timeouts_behind_a_blocked_waiter(cap, poll, rounds);
        let what = format!("{name}: 2 pollers x {rounds} timeouts behind a blocked waiter");
        report.push(format!("{what}: {live} live segments"));
        if live >= 64 {
            failures.push(format!("{what}: {live} live segments (limit 64)"));
        }
    }

    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
