//! loom models of `Lscq` with one-value rings, so every second push
//! finalizes a ring and appends one, and pops retire rings.
//!
//! A ring carries a loom-tracked canary that is written when the ring is
//! recycled and read on every use: any use not ordered before the recycling
//! by the epoch scheme is a loom causality error.

use crate::model;
use crate::scq::{Val, Wide};
use loom::sync::Arc;
use loom::thread;
use scalechan::Lscq;

/// A queue of 1-value rings holding 1, 2 and 3: three rings.
fn three_one_value_rings() -> Arc<Lscq<u32>> {
    let q = Arc::new(Lscq::with_ring_capacity(1));
    for v in 1..=3u32 {
        q.push(v);
    }
    q
}

/// For the models where the queue holds a value whenever a pop runs: the
/// slow thread's pop and the fast thread's all found one, and those with
/// what is left make `1..=pushed`, each exactly once.
fn assert_each_pop_found_one(q: &Lscq<u32>, slow: Option<u32>, fast: &[Option<u32>], pushed: u32) {
    assert!(slow.is_some(), "None from a queue never empty");
    assert!(
        fast.iter().all(Option::is_some),
        "None from a queue never empty"
    );
    let mut got: Vec<u32> = slow
        .into_iter()
        .chain(fast.iter().flatten().copied())
        .collect();
    while let Some(v) = q.pop() {
        got.push(v);
    }
    got.sort_unstable();
    assert_eq!(
        got,
        (1..=pushed).collect::<Vec<_>>(),
        "lost or duplicated values"
    );
}

/// Ring finalize racing a push: T1 pushes 1 then 2 (the second push finds
/// the 1-slot ring full, finalizes it and appends a ring), T2 pushes 3 and
/// pops. Afterwards every pushed value is found exactly once by draining
/// from the head, so no push ever landed in a ring that pops had already
/// left behind; 1 comes out before 2. Preemption bound 3.
#[test]
fn lscq_finalize_races_push() {
    finalize_races_push::<u32>("lscq_finalize_races_push");
}

/// The same with out-of-line values (slot arrays and free-slot rings).
#[test]
fn lscq_finalize_races_push_slots() {
    finalize_races_push::<Wide>("lscq_finalize_races_push_slots");
}

fn finalize_races_push<V: Val>(name: &str) {
    model(name, 3, || {
        let q = Arc::new(Lscq::<V>::with_ring_capacity(1));
        let q1 = q.clone();
        let t1 = thread::spawn(move || {
            q1.push(V::new(1));
            q1.push(V::new(2));
        });
        let q2 = q.clone();
        let t2 = thread::spawn(move || {
            q2.push(V::new(3));
            q2.pop().map(V::get)
        });
        t1.join().unwrap();
        let mut got: Vec<u32> = t2.join().unwrap().into_iter().collect();
        while let Some(v) = q.pop() {
            got.push(v.get());
        }
        let one = got.iter().position(|&v| v == 1);
        let two = got.iter().position(|&v| v == 2);
        if got[0] != 1 && got[0] != 2 {
            // T2 popped 3 (or nothing of T1's): order among the rest holds.
            assert!(one < two, "FIFO violated: {got:?}");
        }
        got.sort_unstable();
        assert_eq!(
            got,
            vec![1, 2, 3],
            "lost or duplicated values; still inside: len {} rings {} pop {:?}",
            q.len(),
            q.ring_count(),
            q.pop().map(V::get)
        );
        assert_eq!(q.ring_count(), 1);
    });
}

/// Ring reclamation racing a slow reader: three 1-value rings; T1 pops once
/// (and may stall holding the first ring), T2 pops twice, retiring rings and
/// running the collector, which recycles a ring once its grace period is
/// over. The canary catches any access to a pinned use of a recycled ring;
/// values come out exactly once. Three values for three pops: the queue is
/// never empty while a pop runs, so each returns one (a pop's unpinned
/// emptiness look that misread a recycled ring would answer `None`).
/// Preemption bound 3.
#[test]
fn lscq_reclaim_races_slow_reader() {
    model("lscq_reclaim_races_slow_reader", 3, || {
        let q = three_one_value_rings();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let a = q2.pop();
            let b = q2.pop();
            if let (Some(a), Some(b)) = (a, b) {
                assert!(a < b, "FIFO violated");
            }
            [a, b]
        });
        let (slow, fast) = (slow.join().unwrap(), fast.join().unwrap());
        assert_each_pop_found_one(&q, slow, &fast, 3);
    });
}

/// The unpinned emptiness look racing the reuse of the ring it looks at:
/// three 1-value rings; T1 pops once, T2 pops twice (retiring the first
/// ring), runs the collector until that ring is recycled unless a pinned
/// thread holds it back (T1's look does not pin, so it does not), and
/// pushes 4, which finds the last ring full and appends the recycled ring,
/// renewed: empty, with no next ring, as a look of the first ring's old
/// life must not take it for the head.
/// The queue holds a value whenever a pop runs, so every pop returns one;
/// every value comes out exactly once. Preemption bound 2 (17k executions;
/// 191k at bound 3, 992k with loads as RMWs). It fails with the look's
/// second read of the life, or its second read of `head`, taken out, or
/// with its first read of the life Relaxed.
#[test]
fn lscq_empty_look_races_ring_reuse() {
    model("lscq_empty_look_races_ring_reuse", 2, || {
        let q = three_one_value_rings();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let got = [q2.pop(), q2.pop()];
            scalechan::__private::collect_garbage();
            q2.push(4);
            got
        });
        let (slow, fast) = (slow.join().unwrap(), fast.join().unwrap());
        assert_each_pop_found_one(&q, slow, &fast, 4);
    });
}

/// Finalize and append racing a concurrent popper: T1 pushes 1 then 2, T2
/// pushes 3, T3 pops twice, all on 1-value rings, so pops walk and retire
/// rings while pushes finalize and append them. Every value comes out
/// exactly once (popped or drained), and T1's in order. Preemption bound 2
/// (three threads).
#[test]
fn lscq_finalize_races_push_and_pop() {
    model("lscq_finalize_races_push_and_pop", 2, || {
        let q = Arc::new(Lscq::with_ring_capacity(1));
        let q1 = q.clone();
        let t1 = thread::spawn(move || {
            q1.push(1u32);
            q1.push(2);
        });
        let q2 = q.clone();
        let t2 = thread::spawn(move || q2.push(3));
        let q3 = q.clone();
        let t3 = thread::spawn(move || {
            let mut got = Vec::new();
            got.extend(q3.pop());
            got.extend(q3.pop());
            got
        });
        t1.join().unwrap();
        t2.join().unwrap();
        let mut got = t3.join().unwrap();
        while let Some(v) = q.pop() {
            got.push(v);
        }
        let one = got.iter().position(|&v| v == 1);
        let two = got.iter().position(|&v| v == 2);
        assert!(one < two, "FIFO violated: {got:?}");
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 3], "lost or duplicated values");
    });
}

/// The unpinned look while the ring it read is reused and comes back as
/// the head (ABA on `head`): T1 pops once; T2 pops twice (retiring the
/// first ring), collects, pushes 4 and 5 (the first appends the recycled
/// ring, renewed) and pops twice more, which brings that ring back to the
/// head. Five values for five pops: every pop returns one. Fails with the
/// look's second read of `head` Relaxed. Preemption bound 2. Not with
/// loads as RMWs: those read the latest value, which hides exactly the
/// stale reads this model is about (and takes minutes).
#[test]
#[cfg(not(loom_rmw_loads))]
fn lscq_empty_look_races_aba_on_head() {
    model("lscq_empty_look_races_aba_on_head", 2, || {
        let q = three_one_value_rings();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let first = [q2.pop(), q2.pop()];
            scalechan::__private::collect_garbage();
            q2.push(4);
            q2.push(5);
            [first[0], first[1], q2.pop(), q2.pop()]
        });
        let (slow, fast) = (slow.join().unwrap(), fast.join().unwrap());
        assert_each_pop_found_one(&q, slow, &fast, 5);
    });
}

/// The unpinned look while one thread recycles the ring it read and
/// another renews it: T1 pops once, T2 pops twice and collects, T3 pushes
/// 4 (appending a ring: the recycled one, if T2's collection came first).
/// Every pop returns a value. Fails without `new_node`'s Release fence
/// before the resets (T3's pin, made before the bump, gives no order).
/// Preemption bound 2; not with loads as RMWs (see above).
#[test]
#[cfg(not(loom_rmw_loads))]
fn lscq_empty_look_races_renew_elsewhere() {
    model("lscq_empty_look_races_renew_elsewhere", 2, || {
        let q = three_one_value_rings();
        let q1 = q.clone();
        let slow = thread::spawn(move || q1.pop());
        let q2 = q.clone();
        let fast = thread::spawn(move || {
            let got = [q2.pop(), q2.pop()];
            scalechan::__private::collect_garbage();
            got
        });
        let q3 = q.clone();
        let pusher = thread::spawn(move || q3.push(4));
        let (slow, fast) = (slow.join().unwrap(), fast.join().unwrap());
        pusher.join().unwrap();
        assert_each_pop_found_one(&q, slow, &fast, 4);
    });
}
