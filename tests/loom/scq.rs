//! loom models of `Scq` (SCQ rings at 2 and 4 entries per index ring).
//!
//! Run both ways:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom` and
//! `RUSTFLAGS="--cfg loom --cfg loom_rmw_loads" cargo test --release --test loom`.
//! The main thread only builds the queue, spawns, joins and checks.

use crate::model;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use scalechan::Scq;

/// A value type for the models. `u32` is stored inline in the ring
/// entries; [`Wide`] (16-byte aligned) goes through the slot array and the
/// free-slot ring. Every model runs with both.
pub(crate) trait Val: Copy + Send + Sync + std::fmt::Debug + PartialEq + 'static {
    fn new(v: u32) -> Self;
    fn get(self) -> u32;
}

impl Val for u32 {
    fn new(v: u32) -> Self {
        v
    }
    fn get(self) -> u32 {
        self
    }
}

/// Too aligned for an entry's 8-byte payload: the out-of-line layout.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(align(16))]
pub(crate) struct Wide(u32);

impl Val for Wide {
    fn new(v: u32) -> Self {
        Wide(v)
    }
    fn get(self) -> u32 {
        self.0
    }
}

/// `push` and `pop` in `u32`s, whatever the layout.
trait Ext {
    fn put(&self, v: u32) -> Result<(), u32>;
    fn take(&self) -> Option<u32>;
}

impl<V: Val> Ext for Scq<V> {
    fn put(&self, v: u32) -> Result<(), u32> {
        self.push(V::new(v)).map_err(V::get)
    }
    fn take(&self) -> Option<u32> {
        self.pop().map(V::get)
    }
}

/// Declares `$name` (inline values) and `$name_slots` (out-of-line values)
/// running the generic model `$body`.
macro_rules! both_layouts {
    ($name:ident, $slots:ident, $body:ident) => {
        #[test]
        fn $name() {
            $body::<u32>(stringify!($name));
        }
        #[test]
        fn $slots() {
            $body::<Wide>(stringify!($slots));
        }
    };
}

/// Pops what is left and checks that `got` plus the leftovers is exactly
/// `expected`, in order.
fn drain_and_check<V: Val>(q: &Scq<V>, mut got: Vec<u32>, expected: &[u32]) {
    while let Some(v) = q.take() {
        got.push(v);
    }
    got.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "lost or duplicated values");
}

// One producer, one consumer, capacity 2 (index rings of 4 entries):
// FIFO and exactly-once for every interleaving. Preemption bound 3.
both_layouts!(
    scq_push_pop_fifo_cap2,
    scq_push_pop_fifo_cap2_slots,
    scq_push_pop_fifo_cap2_model
);

fn scq_push_pop_fifo_cap2_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(2));
        let q1 = q.clone();
        let p = thread::spawn(move || {
            q1.put(1).unwrap();
            q1.put(2).unwrap();
        });
        let q2 = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(v) = q2.take() {
                    got.push(v);
                }
            }
            got
        });
        p.join().unwrap();
        let got = c.join().unwrap();
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "FIFO violated: {got:?}"
        );
        let mut all = got.clone();
        while let Some(v) = q.take() {
            all.push(v);
        }
        assert_eq!(all, vec![1, 2]);
    });
}

// Capacity 1 (index rings of 2 entries), positions already several cycles
// in, so every operation wraps around. A push may find the queue full.
// Preemption bound 3.
both_layouts!(
    scq_wraparound_cap1,
    scq_wraparound_cap1_slots,
    scq_wraparound_cap1_model
);

fn scq_wraparound_cap1_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(1));
        for i in 0..3 {
            q.put(100 + i).unwrap();
            assert_eq!(q.take(), Some(100 + i));
        }
        let q1 = q.clone();
        let p = thread::spawn(move || {
            let mut pushed = Vec::new();
            for v in [1, 2] {
                if q1.put(v).is_ok() {
                    pushed.push(v);
                }
            }
            pushed
        });
        let q2 = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(v) = q2.take() {
                    got.push(v);
                }
            }
            got
        });
        let pushed = p.join().unwrap();
        let got = c.join().unwrap();
        assert!(
            !pushed.is_empty(),
            "the first push into an empty queue must succeed"
        );
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "FIFO violated: {got:?}"
        );
        drain_and_check(&q, got, &pushed);
    });
}

// Capacity 1: a slow popper holds its position while the other thread's
// pops go around the 2-entry ring and reach the same entry a cycle later,
// finding the old value still there (the IsSafe bit is cleared), then push
// again. Exactly-once whatever happens. Preemption bound 3.
both_layouts!(
    scq_unsafe_bit_cap1,
    scq_unsafe_bit_cap1_slots,
    scq_unsafe_bit_cap1_model
);

fn scq_unsafe_bit_cap1_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(1));
        q.put(10).unwrap();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.take().into_iter().collect::<Vec<_>>());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let mut got = Vec::new();
            let mut pushed = Vec::new();
            got.extend(q2.take());
            got.extend(q2.take());
            if q2.put(20).is_ok() {
                pushed.push(20);
            }
            got.extend(q2.take());
            (got, pushed)
        });
        let mut got = slow.join().unwrap();
        let (more, pushed) = fast.join().unwrap();
        got.extend(more);
        let mut expected = vec![10];
        expected.extend(pushed);
        drain_and_check(&q, got, &expected);
    });
}

// Limit and catch-up: a popper keeps failing on an empty capacity-1 queue
// (each failure overruns `tail` and pulls it up, against the `limit` the
// push raises) while a push lands. A pop that starts after the push
// has returned (seen through `done`) must find the value: the read-only
// empty fast path may not hide it. Preemption bound 3.
both_layouts!(
    scq_limit_and_catchup_cap1,
    scq_limit_and_catchup_cap1_slots,
    scq_limit_and_catchup_cap1_model
);

fn scq_limit_and_catchup_cap1_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(1));
        let done = Arc::new(AtomicBool::new(false));
        let (q1, d1) = (q.clone(), done.clone());
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..3 {
                let pushed_before = d1.load(Ordering::Acquire);
                let r = q1.take();
                if pushed_before && got.is_empty() {
                    assert!(r.is_some(), "pop after a completed push saw empty");
                }
                got.extend(r);
            }
            got
        });
        let (q2, d2) = (q.clone(), done.clone());
        let p = thread::spawn(move || {
            q2.put(1).unwrap();
            d2.store(true, Ordering::Release);
        });
        p.join().unwrap();
        let got = c.join().unwrap();
        drain_and_check(&q, got, &[1]);
    });
}

// The push raises `limit` itself, racing two pops: the queue first cycles
// three values (positions 2-4 of a two-entry ring, `limit` 5 after the
// last raise), so the model's push lands at 5 and must move `limit` past
// it. A pop that starts after the push returned may answer `None` only if
// the other pop took the value, and the drain finds whatever is left.
// Preemption bound 3.
both_layouts!(
    scq_push_raises_limit_two_poppers_cap1,
    scq_push_raises_limit_two_poppers_cap1_slots,
    scq_push_raises_limit_two_poppers_cap1_model
);

fn scq_push_raises_limit_two_poppers_cap1_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(1));
        for v in 100..103 {
            q.put(v).unwrap();
            assert_eq!(q.take(), Some(v));
        }
        let done = Arc::new(AtomicBool::new(false));
        let (q1, d1) = (q.clone(), done.clone());
        let watcher = thread::spawn(move || {
            let mut got = Vec::new();
            let mut empty_after_push = false;
            for _ in 0..2 {
                let pushed_before = d1.load(Ordering::Acquire);
                let r = q1.take();
                empty_after_push |= pushed_before && got.is_empty() && r.is_none();
                got.extend(r);
            }
            (got, empty_after_push)
        });
        let q2 = q.clone();
        let other = thread::spawn(move || q2.take());
        let (q3, d3) = (q.clone(), done.clone());
        let pusher = thread::spawn(move || {
            q3.put(1).unwrap();
            d3.store(true, Ordering::Release);
        });
        pusher.join().unwrap();
        let (mut got, empty_after_push) = watcher.join().unwrap();
        let other = other.join().unwrap();
        if empty_after_push {
            assert_eq!(other, Some(1), "a pop after a finished push saw empty");
        }
        got.extend(other);
        drain_and_check(&q, got, &[1]);
    });
}

// Two producers and one consumer on capacity 2: per-producer FIFO and
// exactly-once with three threads. Preemption bound 3.
both_layouts!(
    scq_two_producers_one_consumer_cap2,
    scq_two_producers_one_consumer_cap2_slots,
    scq_two_producers_one_consumer_cap2_model
);

fn scq_two_producers_one_consumer_cap2_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(2));
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|v| {
                let q = q.clone();
                thread::spawn(move || q.put(v).is_ok())
            })
            .collect();
        let qc = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                got.extend(qc.take());
            }
            got
        });
        for p in producers {
            assert!(p.join().unwrap(), "capacity 2 holds both values");
        }
        let got = c.join().unwrap();
        drain_and_check(&q, got, &[1, 2]);
    });
}

// The IsSafe bit with three threads on capacity 1: a slow popper holds the
// old value's position while a second popper laps the 2-entry ring and
// marks the entry unsafe, and a pusher's position lands on that entry. A
// pusher that reused an unsafe entry a popper had already passed would
// strand its value (lost or out of order). Preemption bound 3.
both_layouts!(
    scq_unsafe_bit_three_threads_cap1,
    scq_unsafe_bit_three_threads_cap1_slots,
    scq_unsafe_bit_three_threads_cap1_model
);

fn scq_unsafe_bit_three_threads_cap1_model<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Scq::<V>::with_capacity(1));
        q.put(10).unwrap();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.take().into_iter().collect::<Vec<_>>());
        let q2 = q.clone();
        let lapper = thread::spawn(move || {
            let mut got: Vec<u32> = q2.take().into_iter().collect();
            got.extend(q2.take());
            got
        });
        let q3 = q.clone();
        let pusher = thread::spawn(move || q3.put(20).is_ok());
        let mut got = slow.join().unwrap();
        got.extend(lapper.join().unwrap());
        let mut expected = vec![10];
        if pusher.join().unwrap() {
            expected.push(20);
        }
        drain_and_check(&q, got, &expected);
    });
}

/// Drop accounting of inline values (8-byte `Arc`s): a producer pushes two
/// values into a capacity-1 queue (the second may come back, full, and is
/// dropped by the producer), a consumer pops once, and the queue drops what
/// is left. Every value is dropped exactly once. Preemption bound 3.
#[test]
fn scq_inline_drops_exactly_once_cap1() {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    struct Counted(std::sync::Arc<StdAtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    model("scq_inline_drops_exactly_once_cap1", 3, || {
        let drops = std::sync::Arc::new(StdAtomicUsize::new(0));
        let q = Arc::new(Scq::with_capacity(1));
        let (q1, d1) = (q.clone(), drops.clone());
        let p = thread::spawn(move || {
            for _ in 0..2 {
                // A full push hands the value back; dropping it counts.
                drop(q1.push(Counted(d1.clone())));
            }
        });
        let q2 = q.clone();
        let c = thread::spawn(move || drop(q2.pop()));
        p.join().unwrap();
        c.join().unwrap();
        drop(q);
        assert_eq!(
            drops.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "a value was dropped twice or never"
        );
    });
}
