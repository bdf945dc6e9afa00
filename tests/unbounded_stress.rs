//! Regression test for a use-after-free of channel segments (found by
//! `benches/chan.rs`, `unbounded_mpmc/scalechan/8`): `epoch::collect` read the
//! epoch before taking the garbage lock, so a racing `retire` could push a tag
//! newer than it, whose unsigned age wrapped to "ancient" and was freed while
//! other threads were still pinned on the segment. 8 producers and 8
//! consumers on an unbounded channel crashed every time.

use std::thread;

fn round(pairs: u64, per_thread: u64) {
    let (tx, rx) = scalechan::unbounded::<u64>();
    thread::scope(|s| {
        for _ in 0..pairs {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    tx.send(i).unwrap();
                }
            });
        }
        let consumers: Vec<_> = (0..pairs)
            .map(|_| {
                let rx = rx.clone();
                s.spawn(move || (0..per_thread).map(|_| rx.recv().unwrap()).sum::<u64>())
            })
            .collect();
        let total: u64 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        assert_eq!(total, pairs * (per_thread * (per_thread - 1) / 2));
    });
}

#[test]
fn unbounded_8_pairs_many_segments() {
    let per_thread = if cfg!(miri) { 50 } else { 200_000 };
    for _ in 0..3 {
        round(8, per_thread);
    }
}
