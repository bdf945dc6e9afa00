//! How many `pause` instructions (`std::hint::spin_loop`) make a busy
//! wait of a given length in time, measured once per process.
//!
//! A pause costs very different times on different processors, and even
//! on one machine from day to day: 8.6 ns on the AMD EPYC of the
//! development machine when the backoffs were tuned, 25 ns there on
//! another day, 16 ns on the 16-core Intel Xeon the scalability rows are
//! measured on (Intel lengthened it to about 140 cycles in Skylake). A
//! wait written as a count of pauses, meant to be a microsecond, is then
//! two or three. So a wait that must last a time (a partner waiting for
//! a select to register, `waiter.rs`) is asked for in nanoseconds
//! ([`pauses_for`]) and converted with the cost of a pause measured on
//! first use: the fastest of a few timed runs of pauses, so that a run cut
//! by preemption does not count.
//!
//! Loom builds never call this (nobody waits there).
#![cfg_attr(loom, allow(dead_code))]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// Picoseconds per pause, as measured; `0` until the first measurement.
/// Relaxed: a delay setting, read and written whole. Threads that race on
/// the first use each measure and store a value of the same kind.
static PICOS_PER_PAUSE: AtomicU32 = AtomicU32::new(0);

/// Pauses in the first timed run of the measurement; doubled (up to
/// [`MAX_RUN`]) until a run lasts [`MIN_RUN_NANOS`], so that a coarse clock
/// (a tick of a microsecond or more: some virtual machines' clocksources)
/// cannot read a run as taking no time.
const FIRST_RUN: u32 = 64;
const MAX_RUN: u32 = 1 << 16;
const MIN_RUN_NANOS: u128 = 2_000;

/// Timed runs of the measurement at the final length; the fastest counts.
const RUNS: u32 = 4;

/// Bounds on the measured cost, in picoseconds: a pause that seems to take
/// no time (a processor without one: a plain loop iteration) still counts
/// as 1 ns, so a wait of a microsecond never spins a million times; one
/// that seems to take more than 200 ns was measured across a preemption.
const MIN_PICOS: u32 = 1_000;
const MAX_PICOS: u32 = 200_000;

/// How many pauses take about `nanos` nanoseconds here (at least one).
#[inline]
pub(crate) fn pauses_for(nanos: u32) -> u32 {
    let picos = match PICOS_PER_PAUSE.load(Ordering::Relaxed) {
        0 => measure(),
        p => p,
    };
    (u64::from(nanos) * 1_000 / u64::from(picos)).max(1) as u32
}

/// Finds a run length that the clock can time, then times [`RUNS`] runs
/// of it and keeps the fastest (a run cut by preemption only takes longer).
#[cold]
#[inline(never)]
fn measure() -> u32 {
    let time = |pauses: u32| {
        let start = Instant::now();
        for _ in 0..pauses {
            std::hint::spin_loop();
        }
        start.elapsed().as_nanos()
    };
    let mut run = FIRST_RUN;
    while run < MAX_RUN && time(run) < MIN_RUN_NANOS {
        run *= 2;
    }
    let fastest = (0..RUNS).map(|_| time(run)).min().expect("RUNS > 0");
    let picos = (fastest * 1_000 / u128::from(run))
        .clamp(u128::from(MIN_PICOS), u128::from(MAX_PICOS)) as u32;
    PICOS_PER_PAUSE.store(picos, Ordering::Relaxed);
    picos
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The count is the fastest run's, so a wait is never much shorter
    /// than asked (a measurement that kept a run cut short, or one a
    /// coarse clock read as empty, would make it so). Not bounded above:
    /// a preempted test thread takes any time.
    #[test]
    #[cfg_attr(miri, ignore = "Miri's clock does not time pauses")]
    fn a_wait_lasts_about_as_long_as_asked() {
        let pauses = pauses_for(20_000);
        let start = Instant::now();
        for _ in 0..pauses {
            std::hint::spin_loop();
        }
        assert!(
            start.elapsed() >= Duration::from_micros(5),
            "{:?}",
            start.elapsed()
        );
    }
}
