//! A worker's select loop: work items, a quit channel, a heartbeat `tick`,
//! and an idle timeout, all in one `select!`.
//!
//! ```text
//! cargo run --release --example select_loop
//! ```
//!
//! A producer sends 200 jobs in bursts with pauses; the worker squares them,
//! beats every 50 ms, reports when it has been idle for 20 ms, and stops when
//! the quit channel closes (after draining what is left). The program checks
//! its own result.

use scalechan::{bounded, select, tick, unbounded};
use std::thread;
use std::time::{Duration, Instant};

const JOBS: u64 = 200;

fn main() {
    let (jobs_tx, jobs_rx) = bounded::<u64>(16);
    let (results_tx, results_rx) = unbounded::<u64>();
    let (quit_tx, quit_rx) = bounded::<()>(0);
    let started = Instant::now();

    let worker = thread::spawn(move || {
        let heartbeat = tick(Duration::from_millis(50));
        let (mut done, mut beats, mut idles) = (0u64, 0u64, 0u64);
        loop {
            select! {
                recv(jobs_rx) -> job => match job {
                    Ok(n) => {
                        results_tx.send(n * n).unwrap();
                        done += 1;
                    }
                    Err(_) => break, // jobs closed and drained
                },
                recv(quit_rx) -> _ => {
                    // Finish what is queued, then stop.
                    for n in jobs_rx.try_iter() {
                        results_tx.send(n * n).unwrap();
                        done += 1;
                    }
                    break;
                }
                recv(heartbeat) -> _ => beats += 1,
                default(Duration::from_millis(20)) => idles += 1,
            }
        }
        (done, beats, idles)
    });

    for burst in 0..4 {
        for i in 0..JOBS / 4 {
            jobs_tx.send(burst * (JOBS / 4) + i).unwrap();
        }
        thread::sleep(Duration::from_millis(60)); // long enough to go idle
    }
    quit_tx.close();
    let (done, beats, idles) = worker.join().expect("worker panicked");
    drop(jobs_tx);

    let sum: u64 = results_rx.try_iter().sum();
    let expected: u64 = (0..JOBS).map(|n| n * n).sum();
    println!(
        "select_loop: {done} jobs, sum of squares {sum}, {beats} heartbeats, {idles} idle timeouts, {:.1?}",
        started.elapsed()
    );
    assert_eq!(done, JOBS, "every job processed once");
    assert_eq!(sum, expected, "results match");
    assert!(beats > 0, "the heartbeat ticked");
    assert!(idles > 0, "the idle timeout fired during the pauses");
    println!("select_loop: ok");
}
