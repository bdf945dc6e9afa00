//! A thread pool on plain threads: jobs go to N workers over a scalechan
//! channel, results come back over another one, a panicking job is caught in
//! its worker and reported as a failed job, and `close()` shuts the pool down
//! gracefully (workers drain what was submitted, then exit).
//!
//! The same pool is then built on `std::sync::mpsc` with the classic
//! `Arc<Mutex<Receiver>>` shared receiver and run on the same job set, and the
//! two are compared. The program checks its own result and exits non-zero if
//! the pools disagree.
//!
//! ```text
//! cargo run --release --example pool -- [workers (default 4)] [jobs (default 200000)]
//! ```

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A unit of work: returns a number, or panics.
type Job = Box<dyn FnOnce() -> u64 + Send + 'static>;

/// What a worker reports for one job: its id, and its value or panic message.
type JobResult = (usize, Result<u64, String>);

/// Runs one job, turning a panic into an `Err` so the worker survives it.
fn run_job(job: Job) -> Result<u64, String> {
    panic::catch_unwind(AssertUnwindSafe(job)).map_err(|payload| {
        if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        }
    })
}

/// The interface both pools offer, so that one driver runs them both.
trait Pool {
    const NAME: &'static str;
    fn new(workers: usize) -> Self;
    /// Queues a job; returns its id.
    fn submit(&mut self, job: Job) -> usize;
    /// Stops accepting jobs, lets the workers finish every submitted job,
    /// joins them, and returns all results (in completion order).
    fn shutdown(self) -> Vec<JobResult>;
}

// ---------------------------------------------------------------------------
// The scalechan pool.

struct ScalePool {
    jobs: scalechan::Sender<(usize, Job)>,
    results: scalechan::Receiver<JobResult>,
    workers: Vec<JoinHandle<usize>>,
    next_id: usize,
}

impl Pool for ScalePool {
    const NAME: &'static str = "scalechan";

    fn new(workers: usize) -> Self {
        let (jobs, job_rx) = scalechan::unbounded::<(usize, Job)>();
        let (result_tx, results) = scalechan::unbounded::<JobResult>();
        let workers = (0..workers)
            .map(|w| {
                let job_rx = job_rx.clone();
                let result_tx = result_tx.clone();
                thread::Builder::new()
                    .name(format!("scalechan-worker-{w}"))
                    .spawn(move || {
                        let mut done = 0;
                        // Ends when the job channel is closed and drained.
                        for (id, job) in &job_rx {
                            result_tx
                                .send((id, run_job(job)))
                                .expect("result channel closed");
                            done += 1;
                        }
                        done
                    })
                    .expect("spawn worker")
            })
            .collect();
        // The workers hold the only result senders: when the last one exits,
        // the result channel closes and `results.iter()` ends.
        drop(result_tx);
        ScalePool {
            jobs,
            results,
            workers,
            next_id: 0,
        }
    }

    fn submit(&mut self, job: Job) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        if self.jobs.send((id, job)).is_err() {
            panic!("job channel closed while the pool is running");
        }
        id
    }

    fn shutdown(self) -> Vec<JobResult> {
        // Graceful: no new jobs, but every job already sent is still received.
        self.jobs.close();
        let mut per_worker = Vec::new();
        for w in self.workers {
            per_worker.push(w.join().expect("a worker died"));
        }
        let results: Vec<JobResult> = self.results.iter().collect();
        assert_eq!(per_worker.iter().sum::<usize>(), results.len());
        results
    }
}

// ---------------------------------------------------------------------------
// The same pool on std::sync::mpsc, workers sharing one Receiver behind a
// Mutex (the Rust book's pool).

struct MpscPool {
    jobs: Option<mpsc::Sender<(usize, Job)>>,
    results: mpsc::Receiver<JobResult>,
    workers: Vec<JoinHandle<usize>>,
    next_id: usize,
}

impl Pool for MpscPool {
    const NAME: &'static str = "std mpsc + Arc<Mutex<Receiver>>";

    fn new(workers: usize) -> Self {
        let (jobs, job_rx) = mpsc::channel::<(usize, Job)>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (result_tx, results) = mpsc::channel::<JobResult>();
        let workers = (0..workers)
            .map(|w| {
                let job_rx = Arc::clone(&job_rx);
                let result_tx = result_tx.clone();
                thread::Builder::new()
                    .name(format!("mpsc-worker-{w}"))
                    .spawn(move || {
                        let mut done = 0;
                        loop {
                            // The guard is dropped at the end of the statement,
                            // before the job runs.
                            let next = job_rx.lock().expect("poisoned").recv();
                            let Ok((id, job)) = next else { break };
                            result_tx
                                .send((id, run_job(job)))
                                .expect("result channel closed");
                            done += 1;
                        }
                        done
                    })
                    .expect("spawn worker")
            })
            .collect();
        drop(result_tx);
        MpscPool {
            jobs: Some(jobs),
            results,
            workers,
            next_id: 0,
        }
    }

    fn submit(&mut self, job: Job) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        let jobs = self.jobs.as_ref().expect("pool is shut down");
        if jobs.send((id, job)).is_err() {
            panic!("job channel closed while the pool is running");
        }
        id
    }

    fn shutdown(mut self) -> Vec<JobResult> {
        // mpsc has no close(): dropping the only Sender disconnects it.
        drop(self.jobs.take());
        let mut per_worker = Vec::new();
        for w in self.workers {
            per_worker.push(w.join().expect("a worker died"));
        }
        let results: Vec<JobResult> = self.results.iter().collect();
        assert_eq!(per_worker.iter().sum::<usize>(), results.len());
        results
    }
}

// ---------------------------------------------------------------------------
// The job set and the driver.

/// The id of the one job that panics.
const PANICKING_JOB: usize = 12_345;
const PANIC_MESSAGE: &str = "job 12345 panics on purpose";
/// Each pool runs the whole job set this many times (checked every time; the
/// summary compares the best wall times).
const ROUNDS: usize = 3;

/// A small CPU-bound job: hash `n` a few rounds.
fn hash_rounds(n: u64, rounds: u32) -> u64 {
    let mut x = n;
    for _ in 0..rounds {
        let mut h = DefaultHasher::new();
        x.hash(&mut h);
        x = h.finish();
    }
    x
}

fn make_job(i: usize) -> Job {
    if i == PANICKING_JOB {
        Box::new(|| panic!("{}", PANIC_MESSAGE))
    } else {
        Box::new(move || hash_rounds(i as u64, 4))
    }
}

struct Summary {
    name: &'static str,
    jobs: usize,
    ok: usize,
    failed: Vec<(usize, String)>,
    sum: u64,
    wall: Duration,
}

impl Summary {
    fn print(&self) {
        println!(
            "{:<34} jobs {:>8}  ok {:>8}  failed {}  wall {:>8.1} ms  {:>10.0} jobs/s  sum {:#018x}",
            self.name,
            self.jobs,
            self.ok,
            self.failed.len(),
            self.wall.as_secs_f64() * 1e3,
            self.jobs as f64 / self.wall.as_secs_f64(),
            self.sum,
        );
    }
}

fn run_pool<P: Pool>(workers: usize, jobs: usize) -> Summary {
    let start = Instant::now();
    let mut pool = P::new(workers);
    for i in 0..jobs {
        let id = pool.submit(make_job(i));
        debug_assert_eq!(id, i);
    }
    let results = pool.shutdown();
    let wall = start.elapsed();

    let mut seen = vec![false; jobs];
    let mut ok = 0;
    let mut failed = Vec::new();
    let mut sum = 0u64;
    for (id, res) in results {
        assert!(!seen[id], "{}: job {id} reported twice", P::NAME);
        seen[id] = true;
        match res {
            Ok(v) => {
                ok += 1;
                sum = sum.wrapping_add(v);
            }
            Err(msg) => failed.push((id, msg)),
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        panic!("{}: job {missing} never reported", P::NAME);
    }
    Summary {
        name: P::NAME,
        jobs,
        ok,
        failed,
        sum,
        wall,
    }
}

/// Checks one run: the right sum, and exactly the one expected failed job.
fn check(s: &Summary, expected: u64) -> bool {
    let mut good = true;
    if s.sum != expected {
        eprintln!(
            "FAIL {}: sum {:#x}, expected {:#x}",
            s.name, s.sum, expected
        );
        good = false;
    }
    match s.failed.as_slice() {
        [(PANICKING_JOB, msg)] if msg == PANIC_MESSAGE => {}
        other => {
            eprintln!("FAIL {}: failed jobs {other:?}", s.name);
            good = false;
        }
    }
    if s.ok + 1 != s.jobs {
        eprintln!("FAIL {}: {} jobs ok of {}", s.name, s.ok, s.jobs);
        good = false;
    }
    good
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let workers: usize = args
        .next()
        .map(|a| a.parse().expect("workers: a positive number"))
        .unwrap_or(4);
    let jobs: usize = args
        .next()
        .map(|a| a.parse().expect("jobs: a number"))
        .unwrap_or(200_000);
    assert!(workers > 0, "need at least one worker");
    assert!(jobs > PANICKING_JOB, "need more than {PANICKING_JOB} jobs");

    // The expected panic is reported as a failed job; keep the default hook
    // for anything else.
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let expected = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|s| s == PANIC_MESSAGE);
        if !expected {
            default_hook(info);
        }
    }));

    // The expected sum: every job but the panicking one.
    let expected: u64 = (0..jobs)
        .filter(|&i| i != PANICKING_JOB)
        .fold(0u64, |acc, i| acc.wrapping_add(hash_rounds(i as u64, 4)));

    println!(
        "{workers} workers, {jobs} jobs (job {PANICKING_JOB} panics), {ROUNDS} rounds per pool, alternating"
    );
    let mut good = true;
    let mut scale_walls = Vec::new();
    let mut std_walls = Vec::new();
    for _ in 0..ROUNDS {
        let s = run_pool::<ScalePool>(workers, jobs);
        s.print();
        good &= check(&s, expected);
        let m = run_pool::<MpscPool>(workers, jobs);
        m.print();
        good &= check(&m, expected);
        if s.sum != m.sum {
            eprintln!("FAIL: the two pools disagree on the sum");
            good = false;
        }
        scale_walls.push(s.wall);
        std_walls.push(m.wall);
    }
    let best = |w: &[Duration]| *w.iter().min().unwrap();
    let (bs, bm) = (best(&scale_walls), best(&std_walls));
    println!(
        "best of {ROUNDS}: scalechan {:.1} ms ({:.0} jobs/s), std {:.1} ms ({:.0} jobs/s), scalechan/std wall time {:.2}",
        bs.as_secs_f64() * 1e3,
        jobs as f64 / bs.as_secs_f64(),
        bm.as_secs_f64() * 1e3,
        jobs as f64 / bm.as_secs_f64(),
        bs.as_secs_f64() / bm.as_secs_f64()
    );
    if good {
        println!(
            "OK: every run of both pools ran every job, same sum, exactly one failed job \
             (job {PANICKING_JOB}: {PANIC_MESSAGE:?})"
        );
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
