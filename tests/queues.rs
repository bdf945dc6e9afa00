//! Integration tests for `Scq` and `Lscq`.
#![cfg(not(loom))]

use scalechan::{Lscq, Scq};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

/// Scales work down under Miri, and under ThreadSanitizer (a tenth: the
/// full counts took 118 s of its run in CI, more than any other binary).
fn n(full: usize) -> usize {
    if cfg!(miri) {
        (full / 500).max(20)
    } else if cfg!(scalechan_tsan) {
        (full / 10).max(20)
    } else {
        full
    }
}

/// The (producers, consumers) mixes the `mpmc` tests run. Miri leaves out
/// the middle ones, (2, 2) and (4, 2) or (3, 5): (4, 4) already has several
/// producers and consumers at once, (7, 1) more producers than consumers
/// and (1, 7) the reverse, and each mix costs Miri seconds of spinning.
fn mixes(middle: [(usize, usize); 2]) -> Vec<(usize, usize)> {
    let mut all = vec![(1, 1), (4, 4), (1, 7), (7, 1)];
    if !cfg!(miri) {
        all.insert(1, middle[0]);
        all.push(middle[1]);
    }
    all
}

/// The capacities the `Scq` `mpmc` tests run. Miri leaves out 2 and 7:
/// 1 (one slot), 3 (not a power of two) and 1000 (far more slots than
/// threads) remain, and each capacity costs Miri about 10 s.
fn capacities() -> &'static [usize] {
    if cfg!(miri) {
        &[1, 3, 1000]
    } else {
        &[1, 2, 3, 7, 1000]
    }
}

/// Values a producer sends in the tests with more threads than slots.
/// Miri: 8 (still dozens of laps of a 1- or 2-slot ring), not `n(5_000)`.
fn more_threads_per() -> usize {
    if cfg!(miri) {
        8
    } else {
        n(5_000)
    }
}

trait Queue<T>: Send + Sync {
    /// One attempt: the value back if the queue is full.
    fn try_put(&self, v: T) -> Result<(), T>;
    fn take(&self) -> Option<T>;
    /// Retries until the value is in.
    fn put(&self, mut v: T) {
        while let Err(back) = self.try_put(v) {
            v = back;
            thread::yield_now();
        }
    }
}

impl<T: Send> Queue<T> for Scq<T> {
    fn try_put(&self, v: T) -> Result<(), T> {
        self.push(v)
    }
    fn take(&self) -> Option<T> {
        self.pop()
    }
}

impl<T: Send> Queue<T> for Lscq<T> {
    fn try_put(&self, v: T) -> Result<(), T> {
        self.push(v);
        Ok(())
    }
    fn take(&self) -> Option<T> {
        self.pop()
    }
}

/// `producers` threads push `per` values each, `consumers` threads pop until
/// all are seen. Checks exactly-once delivery and per-producer FIFO order.
fn mpmc<Q: Queue<(usize, usize)> + 'static>(q: Q, producers: usize, consumers: usize, per: usize) {
    let q = Arc::new(q);
    let total = producers * per;
    let taken = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(producers + consumers));
    let mut handles = Vec::new();
    for p in 0..producers {
        let (q, b) = (q.clone(), barrier.clone());
        handles.push(thread::spawn(move || {
            b.wait();
            for i in 0..per {
                q.put((p, i));
            }
            Vec::new()
        }));
    }
    for _ in 0..consumers {
        let (q, b, taken) = (q.clone(), barrier.clone(), taken.clone());
        handles.push(thread::spawn(move || {
            b.wait();
            let mut got = Vec::new();
            let mut last = vec![None::<usize>; producers];
            while taken.load(Ordering::Relaxed) < total {
                match q.take() {
                    Some((p, i)) => {
                        if let Some(prev) = last[p] {
                            assert!(i > prev, "producer {p}: {i} after {prev}");
                        }
                        last[p] = Some(i);
                        taken.fetch_add(1, Ordering::Relaxed);
                        got.push((p, i));
                    }
                    None => thread::yield_now(),
                }
            }
            got
        }));
    }
    let mut seen = vec![vec![false; per]; producers];
    for h in handles {
        for (p, i) in h.join().unwrap() {
            assert!(!seen[p][i], "({p}, {i}) delivered twice");
            seen[p][i] = true;
        }
    }
    assert!(seen.iter().flatten().all(|&s| s), "a value was lost");
    assert_eq!(q.take(), None);
}

#[test]
fn scq_mpmc_various_capacities_and_threads() {
    for &cap in capacities() {
        for (p, c) in mixes([(2, 2), (4, 2)]) {
            mpmc(Scq::with_capacity(cap), p, c, n(20_000) / (p * 4));
        }
    }
}

#[test]
fn scq_more_threads_than_capacity() {
    // 8 threads on a 1-slot and a 2-slot queue: the paper's k <= n bound
    // must not matter.
    mpmc(Scq::with_capacity(1), 4, 4, more_threads_per());
    mpmc(Scq::with_capacity(2), 5, 3, more_threads_per());
}

#[test]
fn scq_large_capacity() {
    let cap = if cfg!(miri) { 300 } else { 1 << 17 };
    let q = Scq::with_capacity(cap);
    assert_eq!(q.capacity(), cap);
    for i in 0..cap {
        q.push(i).unwrap();
    }
    assert!(q.is_full());
    assert_eq!(q.push(usize::MAX), Err(usize::MAX));
    for i in 0..cap {
        assert_eq!(q.pop(), Some(i));
    }
    assert!(q.is_empty());
    mpmc(Scq::with_capacity(cap), 2, 2, n(20_000));
}

/// Values through `Lscq::new()` in `lscq_mpmc` and `lscq_inline_mpmc`.
/// Miri: 24, not `n(40_000)` = 80: there the consumers spinning on the
/// default 1024-value ring made these two tests most of the Miri run, and
/// no number of values that stays below a ring reaches more of the code
/// (the ring crossings are the tiny rings' part, and `lscq_ring_count_bounded`'s).
fn lscq_default_ring_total() -> usize {
    if cfg!(miri) {
        24
    } else {
        n(40_000)
    }
}

#[test]
fn lscq_mpmc() {
    for (p, c) in mixes([(2, 2), (3, 5)]) {
        mpmc(Lscq::new(), p, c, lscq_default_ring_total() / p);
        // Tiny rings: appends and retirements all the time.
        mpmc(Lscq::with_ring_capacity(2), p, c, n(10_000) / p);
    }
}

/// No `None` from a queue known to hold a value: producers publish how
/// many values they pushed (Release) after each push, and the only
/// consumer, before each pop, reads those counts (Acquire). Whenever they
/// say more was pushed than it took, its pop must find a value (an empty
/// look that read a stale or recycled ring would answer `None`). Two-value
/// rings, so rings are finalized, retired, given back their arrays and
/// renewed all along, with both layouts.
#[test]
fn lscq_pop_finds_what_was_pushed_before_it() {
    fn run<V: Send + 'static>(make: fn(usize) -> V, back: fn(&V) -> usize) {
        const PRODUCERS: usize = 2;
        let per = n(20_000);
        let q = Arc::new(Lscq::with_ring_capacity(2));
        let pushed: Arc<[AtomicUsize; PRODUCERS]> =
            Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (q, pushed) = (q.clone(), pushed.clone());
                thread::spawn(move || {
                    for i in 0..per {
                        q.push(make(p * per + i));
                        pushed[p].store(i + 1, Ordering::Release);
                        if i % 64 == 0 {
                            thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0usize; PRODUCERS];
        let mut taken = 0;
        while taken < PRODUCERS * per {
            let known: usize = pushed.iter().map(|c| c.load(Ordering::Acquire)).sum();
            match q.pop() {
                Some(v) => {
                    let v = back(&v);
                    let (p, i) = (v / per, v % per);
                    assert_eq!(i, next[p], "producer {p}'s values out of order");
                    next[p] += 1;
                    taken += 1;
                }
                None => {
                    assert!(
                        known <= taken,
                        "None with {} values pushed before the pop",
                        known - taken
                    );
                    thread::yield_now();
                }
            }
        }
        for h in producers {
            h.join().unwrap();
        }
        assert!(q.pop().is_none());
    }
    run(|v| v, |v| *v);
    run(|v| v.to_string(), |v| v.parse().unwrap());
}

/// No pop answers `None` beside a value a finished push left: with several
/// consumers, a `None` is wrong when fewer values were taken, or are being
/// taken by pops still running, than pushes had finished before it started
/// (the overcount of running pops can only hide a failure, never invent
/// one). `Scq` with one and two slots (pops outnumbering them, so they
/// overrun `tail` and meet the dequeue `limit` all along) and `Lscq` with
/// one- and two-value rings, in both layouts. A failure stops every thread
/// (a stranded value would otherwise keep the others waiting for good).
#[test]
fn pops_answer_empty_only_when_finished_pushes_are_taken() {
    fn run<V: Send + 'static, Q: Queue<V> + 'static>(
        q: Q,
        make: fn(usize) -> V,
        back: fn(V) -> usize,
    ) {
        const PRODUCERS: usize = 2;
        const CONSUMERS: usize = 4;
        let per = n(20_000);
        let q = Arc::new(q);
        // Pushes finished; pops that took a value; pops running; a failure.
        let done = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicBool::new(false));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (q, done, failed) = (q.clone(), done.clone(), failed.clone());
                thread::spawn(move || {
                    for i in 0..per {
                        let mut v = make(p * per + i);
                        while let Err(back) = q.try_put(v) {
                            if failed.load(Ordering::SeqCst) {
                                return;
                            }
                            v = back;
                            thread::yield_now();
                        }
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let (q, done, taken, running, failed) = (
                    q.clone(),
                    done.clone(),
                    taken.clone(),
                    running.clone(),
                    failed.clone(),
                );
                thread::spawn(move || -> Result<(), String> {
                    let mut next = [0usize; PRODUCERS];
                    while taken.load(Ordering::SeqCst) < PRODUCERS * per {
                        if failed.load(Ordering::SeqCst) {
                            return Ok(());
                        }
                        let finished_before = done.load(Ordering::SeqCst);
                        running.fetch_add(1, Ordering::SeqCst);
                        let Some(v) = q.take() else {
                            // `running` first: a pop that moves on to
                            // `taken` meanwhile is counted at least once.
                            let others = running.load(Ordering::SeqCst) - 1;
                            let took = taken.load(Ordering::SeqCst);
                            running.fetch_sub(1, Ordering::SeqCst);
                            if took + others < finished_before {
                                failed.store(true, Ordering::SeqCst);
                                return Err(format!(
                                    "None beside {} finished pushes nobody took",
                                    finished_before - took - others
                                ));
                            }
                            thread::yield_now();
                            continue;
                        };
                        // Counted as taken before it stops running.
                        taken.fetch_add(1, Ordering::SeqCst);
                        running.fetch_sub(1, Ordering::SeqCst);
                        let v = back(v);
                        let (p, i) = (v / per, v % per);
                        if i < next[p] {
                            failed.store(true, Ordering::SeqCst);
                            return Err(format!("producer {p}'s values out of order"));
                        }
                        next[p] = i + 1;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in producers {
            h.join().unwrap();
        }
        for h in consumers {
            h.join().unwrap().unwrap();
        }
        assert!(q.take().is_none());
    }
    // Miri: one slot only (each run costs it seconds of spinning).
    let caps: &[usize] = if cfg!(miri) { &[1] } else { &[1, 2] };
    for &cap in caps {
        run(Scq::with_capacity(cap), |v| v as u64, |v| v as usize);
        run(
            Scq::with_capacity(cap),
            |v| v.to_string(),
            |v| v.parse().unwrap(),
        );
        run(Lscq::with_ring_capacity(cap), |v| v as u64, |v| v as usize);
        run(
            Lscq::with_ring_capacity(cap),
            |v| v.to_string(),
            |v| v.parse().unwrap(),
        );
    }
}

#[test]
#[should_panic(expected = "capacity must be at least 1")]
fn scq_zero_capacity_panics() {
    let _ = Scq::<u32>::with_capacity(0);
}

#[test]
#[should_panic(expected = "too large")]
fn scq_huge_capacity_panics() {
    let _ = Scq::<u32>::with_capacity(usize::MAX);
}

#[test]
fn scq_full_hands_value_back() {
    for cap in [1, 2, 3, 7] {
        let q = Scq::with_capacity(cap);
        for i in 0..cap {
            assert_eq!(q.push(i.to_string()), Ok(()));
        }
        assert!(q.is_full());
        assert_eq!(q.len(), cap);
        assert_eq!(q.push("x".to_string()), Err("x".to_string()));
        assert_eq!(q.pop().as_deref(), Some("0"));
        assert!(q.push("y".to_string()).is_ok());
    }
}

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn scq_drops_leftovers_exactly_once() {
    for cap in [1, 2, 3, 7, 1000] {
        let drops = Arc::new(AtomicUsize::new(0));
        let q = Scq::with_capacity(cap);
        for _ in 0..cap {
            assert!(q.push(Counted(drops.clone())).is_ok());
        }
        let popped = cap / 2;
        for _ in 0..popped {
            drop(q.pop().unwrap());
        }
        assert_eq!(drops.load(Ordering::SeqCst), popped);
        drop(q);
        assert_eq!(drops.load(Ordering::SeqCst), cap);
    }
}

#[test]
fn lscq_drops_leftovers_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let q = Lscq::with_ring_capacity(3);
    for _ in 0..100 {
        q.push(Counted(drops.clone()));
    }
    for _ in 0..40 {
        drop(q.pop().unwrap());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 40);
    assert_eq!(q.len(), 60);
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 100);
}

#[test]
fn concurrent_leftovers_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let q = Arc::new(Lscq::with_ring_capacity(4));
    let pushed = n(4_000);
    let hs: Vec<_> = (0..4)
        .map(|t| {
            let (q, d) = (q.clone(), drops.clone());
            thread::spawn(move || {
                for i in 0..pushed {
                    q.push(Counted(d.clone()));
                    if (i + t) % 3 == 0 {
                        drop(q.pop());
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let left = q.len();
    let dropped = drops.load(Ordering::SeqCst);
    assert_eq!(left + dropped, 4 * pushed);
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 4 * pushed);
}

#[test]
fn lscq_ring_count_bounded() {
    // 10 million push/pop pairs in bursts that span several rings (Miri:
    // one burst of 1100, past the end of the first 1024-value ring;
    // ThreadSanitizer, on one thread here, 100 000: 32 bursts).
    let pairs = if cfg!(miri) {
        1_100
    } else if cfg!(scalechan_tsan) {
        100_000
    } else {
        10_000_000
    };
    let q = Lscq::new();
    let burst = 3 * 1024 + 17; // crosses ring boundaries every burst
    let mut done = 0;
    let mut max_rings = 0;
    while done < pairs {
        let k = burst.min(pairs - done);
        for i in 0..k {
            q.push(i);
        }
        max_rings = max_rings.max(q.ring_count());
        for i in 0..k {
            assert_eq!(q.pop(), Some(i));
        }
        done += k;
    }
    assert!(max_rings <= 5, "{max_rings} rings for a burst of {burst}");
    assert_eq!(q.ring_count(), 1);
    assert!(q.pooled_rings() <= 2);

    // Single-thread pairs never need a second ring.
    let q = Lscq::new();
    for i in 0..n(100_000) {
        q.push(i);
        assert_eq!(q.pop(), Some(i));
    }
    assert_eq!(q.ring_count(), 1);
}

#[test]
fn lscq_ring_count_bounded_concurrent() {
    let q = Arc::new(Lscq::new());
    // Miri: 100 pairs a thread, not `n(200_000)` = 400 (a ring is never
    // outgrown here either way; the check is that no ring is appended).
    let per = if cfg!(miri) { 100 } else { n(200_000) };
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            thread::spawn(move || {
                for i in 0..per {
                    q.push(i);
                    while q.pop().is_none() {
                        thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert!(q.is_empty());
    assert!(q.ring_count() <= 2, "{} rings", q.ring_count());
}

#[test]
fn send_sync_debug() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Scq<String>>();
    assert_send_sync::<Lscq<String>>();
    // Usable inside `catch_unwind`, as crossbeam-queue's queues are.
    fn assert_unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    assert_unwind_safe::<Scq<std::cell::Cell<i32>>>();
    assert_unwind_safe::<Lscq<std::cell::Cell<i32>>>();
    let q = Scq::with_capacity(2);
    q.push(1).unwrap();
    assert!(format!("{q:?}").contains("len: 1"));
    let l = Lscq::new();
    l.push(1);
    assert!(format!("{l:?}").contains("len: 1"));
}

/// Packs `(producer, index)` into one `u64`, so `mpmc` runs over queues of
/// `u64`: values of at most 8 bytes are stored inside the ring entries
/// (the inline layout), while `(usize, usize)` goes through the slot array.
struct Packed<Q>(Q);

impl<Q: Queue<u64>> Queue<(usize, usize)> for Packed<Q> {
    fn try_put(&self, (p, i): (usize, usize)) -> Result<(), (usize, usize)> {
        self.0.try_put(pack(p, i)).map_err(unpack)
    }
    fn take(&self) -> Option<(usize, usize)> {
        self.0.take().map(unpack)
    }
}

fn pack(p: usize, i: usize) -> u64 {
    ((p as u64) << 32) | i as u64
}

fn unpack(v: u64) -> (usize, usize) {
    ((v >> 32) as usize, (v & 0xffff_ffff) as usize)
}

#[test]
fn scq_inline_mpmc_various_capacities_and_threads() {
    for &cap in capacities() {
        for (p, c) in mixes([(2, 2), (4, 2)]) {
            mpmc(Packed(Scq::with_capacity(cap)), p, c, n(20_000) / (p * 4));
        }
    }
    // More threads than capacity: no limit on the thread count inline either.
    mpmc(Packed(Scq::with_capacity(1)), 4, 4, more_threads_per());
    mpmc(Packed(Scq::with_capacity(2)), 5, 3, more_threads_per());
}

#[test]
fn lscq_inline_mpmc() {
    for (p, c) in mixes([(2, 2), (3, 5)]) {
        mpmc(Packed(Lscq::new()), p, c, lscq_default_ring_total() / p);
        mpmc(Packed(Lscq::with_ring_capacity(2)), p, c, n(10_000) / p);
    }
}

/// Round trip of `v` through a queue of capacity 2 (twice, so the second
/// lap reuses entries), then leftovers dropped by the queue.
fn round_trip<T: Clone + PartialEq + std::fmt::Debug + Send>(v: T) {
    let q = Scq::with_capacity(2);
    for _ in 0..3 {
        q.push(v.clone()).unwrap();
        q.push(v.clone()).unwrap();
        assert_eq!(q.push(v.clone()), Err(v.clone()));
        assert_eq!(q.pop().as_ref(), Some(&v));
        assert_eq!(q.pop().as_ref(), Some(&v));
        assert_eq!(q.pop(), None);
    }
    q.push(v.clone()).unwrap();
    let l = Lscq::with_ring_capacity(1);
    for _ in 0..3 {
        l.push(v.clone());
    }
    assert_eq!(l.pop().as_ref(), Some(&v));
    l.push(v);
}

#[test]
fn inline_and_slot_layouts_round_trip_many_types() {
    // Inline (at most 8 bytes, alignment at most 8).
    round_trip(());
    round_trip(true);
    round_trip(0xa5u8);
    round_trip('\u{1F980}');
    round_trip(-3i16);
    round_trip([1u8, 2, 3]);
    round_trip(u32::MAX);
    round_trip(f64::MIN_POSITIVE);
    round_trip(u64::MAX);
    round_trip(Box::new(17u64));
    round_trip(Some(Box::new(5u8)));
    round_trip(None::<Box<u8>>);
    round_trip(std::num::NonZeroU32::new(9));
    round_trip(Arc::new(String::from("shared")));
    // Out of line (too big, or too aligned).
    round_trip(u128::MAX);
    round_trip([7u8; 9]);
    round_trip(String::from("slot"));
    round_trip((1u64, 2u64));
}

/// Types with padding (uninitialised bytes) go inline too: their bytes are
/// turned into the payload without being read as an integer by Rust code.
/// Not under Miri: there the payload is read with a plain load, which Miri
/// (rightly) reports for uninitialised bytes.
#[test]
#[cfg(not(miri))]
fn inline_values_with_padding() {
    round_trip((7u8, 0x1234_5678u32));
    round_trip(Some(3u32));
    round_trip(None::<u32>);
    round_trip((1u8, 2u16));
    let q = Arc::new(Scq::with_capacity(8));
    let hs: Vec<_> = (0..4u8)
        .map(|t| {
            let q = q.clone();
            thread::spawn(move || {
                let mut seen = 0;
                for i in 0..n(20_000) as u32 {
                    let v = (t, i);
                    while q.push(v).is_err() {
                        thread::yield_now();
                    }
                    loop {
                        if let Some((a, b)) = q.pop() {
                            assert!(a < 4 && b < n(20_000) as u32, "corrupt value");
                            seen += 1;
                            break;
                        }
                    }
                }
                seen
            })
        })
        .collect();
    let total: u32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, 4 * n(20_000) as u32);
}

/// Drop accounting for both layouts, with values left in the queue, values
/// taken back from a full push, and values dropped by `Drop`.
#[test]
fn drops_exactly_once_both_layouts() {
    // Read only by its drop glue: the fields make it 24 bytes.
    #[allow(dead_code)]
    struct Big(Counted, [u64; 2]);
    for cap in [1, 2, 5] {
        let drops = Arc::new(AtomicUsize::new(0));
        {
            let inline = Scq::with_capacity(cap);
            let slots = Scq::with_capacity(cap);
            for _ in 0..cap {
                assert!(inline.push(Counted(drops.clone())).is_ok());
                assert!(slots.push(Big(Counted(drops.clone()), [0; 2])).is_ok());
            }
            // Full: the value comes back and is dropped by us.
            drop(inline.push(Counted(drops.clone())).unwrap_err());
            drop(slots.push(Big(Counted(drops.clone()), [0; 2])).unwrap_err());
            assert_eq!(drops.load(Ordering::SeqCst), 2);
            drop(inline.pop());
            drop(slots.pop());
            assert_eq!(drops.load(Ordering::SeqCst), 4);
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2 * cap + 2);
    }
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let q = Lscq::with_ring_capacity(2);
        for _ in 0..7 {
            q.push(Big(Counted(drops.clone()), [0; 2]));
        }
        drop(q.pop());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 7);
}
