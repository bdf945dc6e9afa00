//! Peak heap use of each channel (and queue) for one fixed unbounded
//! workload: 1 million `u64` messages queued by one thread, then drained by
//! the same thread. A counting global allocator tracks the bytes live on the
//! heap; the figure is the peak minus what was live before the channel was
//! made, so it is everything the channel allocated at its fullest: the 8 MB
//! of payload plus per-message and per-segment overhead, plus whatever the
//! library keeps around (spare segments, memory waiting for reclamation).
//!
//! ```text
//! cargo run --release --example bench_memory                # prints the table
//! cargo run --release --example bench_memory -- docs/bench/memory.md
//! ```
//!
//! With a path it also writes the table there; `examples/bench_report.rs`
//! includes that file in docs/bench/REPORT.md.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;

/// Messages queued, then drained.
const N: u64 = 1_000_000;

/// Bytes live now, the highest value since the last reset, and the number
/// of allocations (reallocations included).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting. Relaxed is enough: the workload is
/// single-threaded, and a library's helper threads (none of the measured
/// ones has any) would only blur the peak, not break the counts.
struct Counting;

impl Counting {
    fn grew(size: usize) {
        let now = LIVE.fetch_add(size, Relaxed) + size;
        PEAK.fetch_max(now, Relaxed);
        ALLOCS.fetch_add(1, Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counting only reads
// `layout` and the returned pointer's nullness.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            Self::grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            Self::grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Count the new block before dropping the old one: a moving
            // realloc holds both for a moment, and so does the peak.
            Self::grew(new_size);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One library's figures, in bytes above the starting point.
struct Row {
    name: &'static str,
    peak: usize,
    full: usize,
    drained: usize,
    dropped: isize,
    allocs: usize,
}

/// Measures `run`, which builds a channel, queues the `N` messages, calls
/// `filled`, drains them, calls `drained`, drops the channel and returns
/// the sum of the messages (checked here).
fn measure(name: &'static str, run: impl FnOnce(&mut dyn FnMut(), &mut dyn FnMut()) -> u64) -> Row {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let allocs = ALLOCS.load(Relaxed);
    let (mut full, mut drained) = (0, 0);
    let sum = run(
        &mut || full = LIVE.load(Relaxed).saturating_sub(base),
        &mut || drained = LIVE.load(Relaxed).saturating_sub(base),
    );
    assert_eq!(sum, N * (N + 1) / 2, "{name}: wrong messages drained");
    Row {
        name,
        peak: PEAK.load(Relaxed) - base,
        full,
        drained,
        dropped: LIVE.load(Relaxed) as isize - base as isize,
        allocs: ALLOCS.load(Relaxed) - allocs,
    }
}

/// The workload for one API: `$make` gives a (sending, receiving) pair of
/// handles, `$send` and `$recv` move one message.
macro_rules! row {
    ($name:expr, $make:expr, |$tx:ident, $v:ident| $send:expr, |$rx:ident| $recv:expr) => {
        measure($name, |filled, drained| {
            let ($tx, $rx) = $make;
            for $v in 1..=N {
                $send;
            }
            filled();
            let mut sum = 0u64;
            for _ in 0..N {
                sum += $recv;
            }
            drained();
            drop(($tx, $rx));
            sum
        })
    };
}

/// Both handles of a queue: a queue has no sender/receiver split.
fn shared<Q>(q: Q) -> (Rc<Q>, Rc<Q>) {
    let q = Rc::new(q);
    (q.clone(), q)
}

/// Bytes as MiB with two decimals.
fn mib(b: usize) -> String {
    format!("{:.2}", b as f64 / (1024.0 * 1024.0))
}

fn main() {
    let channels = vec![
        row!(
            "scalechan",
            scalechan::unbounded::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
        row!(
            "crossbeam-channel",
            crossbeam_channel::unbounded::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
        row!(
            "flume",
            flume::unbounded::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
        row!(
            "kanal",
            kanal::unbounded::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
        row!(
            "std mpsc",
            mpsc::channel::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
        // Again: the first use also pays for process-wide state (the epoch
        // registry), and memory retired by the first run may be freed
        // during this one; the second run shows the steady state.
        row!(
            "scalechan, second run",
            scalechan::unbounded::<u64>(),
            |tx, v| tx.send(v).unwrap(),
            |rx| rx.recv().unwrap()
        ),
    ];
    let queues = vec![
        row!(
            "scalechan Lscq",
            shared(scalechan::Lscq::<u64>::new()),
            |tx, v| tx.push(v),
            |rx| rx.pop().unwrap()
        ),
        row!(
            "scalechan Lscq, second run",
            shared(scalechan::Lscq::<u64>::new()),
            |tx, v| tx.push(v),
            |rx| rx.pop().unwrap()
        ),
        row!(
            "crossbeam SegQueue",
            shared(crossbeam_queue::SegQueue::<u64>::new()),
            |tx, v| tx.push(v),
            |rx| rx.pop().unwrap()
        ),
        row!(
            "concurrent-queue unbounded",
            shared(concurrent_queue::ConcurrentQueue::<u64>::unbounded()),
            |tx, v| tx.push(v).unwrap(),
            |rx| rx.pop().unwrap()
        ),
        row!(
            "VecDeque (baseline, not concurrent)",
            shared(RefCell::new(VecDeque::<u64>::new())),
            |tx, v| tx.borrow_mut().push_back(v),
            |rx| rx.borrow_mut().pop_front().unwrap()
        ),
    ];

    let mut md = String::new();
    let _ = writeln!(
        md,
        "{N} `u64` messages (8 MB of payload) queued by one thread into an unbounded \
         channel, then drained by the same thread (examples/bench_memory.rs, a counting \
         global allocator). Bytes are heap bytes above what was live before the \
         channel was made. *Peak*: the most at any moment; *full*: after the last \
         send; *drained*: after the last receive, channel still alive (kept spare or \
         not yet reclaimed memory); *after drop*: once every handle is dropped \
         (non-zero: process-wide state made on first use, or memory retired and \
         freed by a later operation; the *second run* rows repeat the workload in the \
         same process to tell them apart); *allocs*: allocator calls. Deterministic \
         for a given build: no timing involved.\n"
    );
    for (title, rows) in [("Channels", &channels), ("Queues, for reference", &queues)] {
        let _ = writeln!(md, "#### {title}\n");
        let _ = writeln!(
            md,
            "| library | peak MiB | peak bytes / message | full MiB | drained MiB | after drop (bytes) | allocs |"
        );
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        for r in rows.iter() {
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} | {} | {} | {} | {} |",
                r.name,
                mib(r.peak),
                r.peak as f64 / N as f64,
                mib(r.full),
                mib(r.drained),
                r.dropped,
                r.allocs
            );
        }
        let _ = writeln!(md);
    }
    print!("{md}");
    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(&path, &md).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        eprintln!("wrote {path}");
    }
}
