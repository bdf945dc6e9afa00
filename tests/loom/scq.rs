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

/// Pops what is left and checks that `got` plus the leftovers is exactly
/// `expected`, in order.
fn drain_and_check(q: &Scq<u32>, mut got: Vec<u32>, expected: &[u32]) {
    while let Some(v) = q.pop() {
        got.push(v);
    }
    got.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "lost or duplicated values");
}

/// One producer, one consumer, capacity 2 (index rings of 4 entries):
/// FIFO and exactly-once for every interleaving. Preemption bound 3.
#[test]
fn scq_push_pop_fifo_cap2() {
    model("scq_push_pop_fifo_cap2", 3, || {
        let q = Arc::new(Scq::with_capacity(2));
        let q1 = q.clone();
        let p = thread::spawn(move || {
            q1.push(1).unwrap();
            q1.push(2).unwrap();
        });
        let q2 = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(v) = q2.pop() {
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
        while let Some(v) = q.pop() {
            all.push(v);
        }
        assert_eq!(all, vec![1, 2]);
    });
}

/// Capacity 1 (index rings of 2 entries), positions already several cycles
/// in, so every operation wraps around. A push may find the queue full.
/// Preemption bound 3.
#[test]
fn scq_wraparound_cap1() {
    model("scq_wraparound_cap1", 3, || {
        let q = Arc::new(Scq::with_capacity(1));
        for i in 0..3 {
            q.push(100 + i).unwrap();
            assert_eq!(q.pop(), Some(100 + i));
        }
        let q1 = q.clone();
        let p = thread::spawn(move || {
            let mut pushed = Vec::new();
            for v in [1, 2] {
                if q1.push(v).is_ok() {
                    pushed.push(v);
                }
            }
            pushed
        });
        let q2 = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(v) = q2.pop() {
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

/// Capacity 1: a slow popper holds its position while the other thread's
/// pops go around the 2-entry ring and reach the same entry a cycle later,
/// finding the old value still there (the IsSafe bit is cleared), then push
/// again. Exactly-once whatever happens. Preemption bound 3.
#[test]
fn scq_unsafe_bit_cap1() {
    model("scq_unsafe_bit_cap1", 3, || {
        let q = Arc::new(Scq::with_capacity(1));
        q.push(10).unwrap();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop().into_iter().collect::<Vec<_>>());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let mut got = Vec::new();
            let mut pushed = Vec::new();
            got.extend(q2.pop());
            got.extend(q2.pop());
            if q2.push(20).is_ok() {
                pushed.push(20);
            }
            got.extend(q2.pop());
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

/// Threshold exhaustion and catch-up: a popper keeps failing on an empty
/// capacity-1 queue (each failure decrements the threshold, overruns `tail`
/// and pulls it up) while a push lands. A pop that starts after the push
/// has returned (seen through `done`) must find the value: the read-only
/// empty fast path may not hide it. Preemption bound 3.
#[test]
fn scq_threshold_and_catchup_cap1() {
    model("scq_threshold_and_catchup_cap1", 3, || {
        let q = Arc::new(Scq::with_capacity(1));
        let done = Arc::new(AtomicBool::new(false));
        let (q1, d1) = (q.clone(), done.clone());
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..3 {
                let pushed_before = d1.load(Ordering::Acquire);
                let r = q1.pop();
                if pushed_before && got.is_empty() {
                    assert!(r.is_some(), "pop after a completed push saw empty");
                }
                got.extend(r);
            }
            got
        });
        let (q2, d2) = (q.clone(), done.clone());
        let p = thread::spawn(move || {
            q2.push(1).unwrap();
            d2.store(true, Ordering::Release);
        });
        p.join().unwrap();
        let got = c.join().unwrap();
        drain_and_check(&q, got, &[1]);
    });
}

/// Two producers and one consumer on capacity 2: per-producer FIFO and
/// exactly-once with three threads. Preemption bound 3.
#[test]
fn scq_two_producers_one_consumer_cap2() {
    model("scq_two_producers_one_consumer_cap2", 3, || {
        let q = Arc::new(Scq::with_capacity(2));
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|v| {
                let q = q.clone();
                thread::spawn(move || q.push(v).is_ok())
            })
            .collect();
        let qc = q.clone();
        let c = thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..2 {
                got.extend(qc.pop());
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

/// The IsSafe bit with three threads on capacity 1: a slow popper holds the
/// old value's position while a second popper laps the 2-entry ring and
/// marks the entry unsafe, and a pusher's position lands on that entry. A
/// pusher that reused an unsafe entry a popper had already passed would
/// strand its value (lost or out of order). Preemption bound 3.
#[test]
fn scq_unsafe_bit_three_threads_cap1() {
    model("scq_unsafe_bit_three_threads_cap1", 3, || {
        let q = Arc::new(Scq::with_capacity(1));
        q.push(10).unwrap();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop().into_iter().collect::<Vec<_>>());
        let q2 = q.clone();
        let lapper = thread::spawn(move || {
            let mut got: Vec<u32> = q2.pop().into_iter().collect();
            got.extend(q2.pop());
            got
        });
        let q3 = q.clone();
        let pusher = thread::spawn(move || q3.push(20).is_ok());
        let mut got = slow.join().unwrap();
        got.extend(lapper.join().unwrap());
        let mut expected = vec![10];
        if pusher.join().unwrap() {
            expected.push(20);
        }
        drain_and_check(&q, got, &expected);
    });
}
