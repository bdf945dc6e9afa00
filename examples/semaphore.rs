//! A counting semaphore from a `bounded::<()>(n)` channel: a worker acquires
//! a permit by sending `()` (blocking while `n` permits are out) and releases
//! it by receiving one. The program records the highest number of workers
//! inside the critical section at once and checks it never exceeds `n`.
//!
//! ```text
//! cargo run --release --example semaphore -- [permits (default 3)] [workers (default 12)]
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How many times each worker enters the critical section.
const ROUNDS: usize = 200;

/// A guard that releases its permit on drop, so a panic cannot leak it.
struct Permit<'a>(&'a scalechan::Receiver<()>);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.recv().expect("semaphore closed");
    }
}

fn acquire<'a>(tx: &scalechan::Sender<()>, rx: &'a scalechan::Receiver<()>) -> Permit<'a> {
    tx.send(()).expect("semaphore closed");
    Permit(rx)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let permits: usize = args.next().map_or(3, |a| a.parse().expect("permits"));
    let workers: usize = args.next().map_or(12, |a| a.parse().expect("workers"));
    assert!(
        permits > 0,
        "a semaphore with 0 permits would block forever"
    );

    let (tx, rx) = scalechan::bounded::<()>(permits);
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let entries = Arc::new(AtomicUsize::new(0));

    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (tx, rx) = (tx.clone(), rx.clone());
            let (inside, max_inside, entries) = (
                Arc::clone(&inside),
                Arc::clone(&max_inside),
                Arc::clone(&entries),
            );
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    let _permit = acquire(&tx, &rx);
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    max_inside.fetch_max(now, Ordering::SeqCst);
                    assert!(now <= permits, "{now} workers inside, {permits} permits");
                    entries.fetch_add(1, Ordering::Relaxed);
                    // Hold the permit a little, sometimes long enough for the
                    // others to pile up behind it.
                    if (w + round) % 16 == 0 {
                        thread::sleep(Duration::from_micros(200));
                    } else {
                        thread::yield_now();
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    // _permit drops here: recv() releases one permit.
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("worker panicked");
    }
    let wall = start.elapsed();

    let max = max_inside.load(Ordering::SeqCst);
    let total = entries.load(Ordering::Relaxed);
    println!(
        "bounded::<()>({permits}) as a semaphore: {workers} workers x {ROUNDS} entries = {total} \
         in {:.1} ms; max concurrency {max} (limit {permits})",
        wall.as_secs_f64() * 1e3
    );
    assert_eq!(total, workers * ROUNDS);
    assert!(max <= permits, "max concurrency {max} > {permits}");
    assert!(max >= 1);
    assert_eq!(tx.len(), 0, "every permit was released");
    assert_eq!(inside.load(Ordering::SeqCst), 0);
    println!("OK");
}
