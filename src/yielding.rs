//! Whether a blocked thread should yield before it parks.
//!
//! A waiter yields for a few tens of microseconds before parking (see
//! `waiter::yield_until`): when the runnable threads are its own process's,
//! one of them is likely its partner, and a partner that runs while we
//! yield saves a park and an unpark. When other processes keep the cores
//! busy, a yield hands one of them a whole time slice instead: measured
//! with two busy loops beside a rendezvous ping-pong, a third of the yields
//! took 4 ms (a scheduler tick), 1-3 ms per message against 0.05 ms for
//! crossbeam-channel, which parks. So a yield that took [`SLOW_YIELD`] or
//! longer while this process hardly ran (its CPU clock says) makes every
//! waiter park straight after its spin for a while: 10 ms, doubling while
//! yields stay slow, up to a second. A slow yield while this process ran
//! (more of its threads than cores) changes nothing: that is what a yield
//! is for (measured: the oversubscribed producer/consumer benchmarks ran
//! 2-8x slower when such yields counted too).
//!
//! Reading the process's CPU clock is a system call, so a thread does it
//! only for a second after it saw a slow yield: a ping-pong's yield phases
//! last microseconds and never pay it. A platform without that clock (or
//! Miri) never stops yielding. All of this is a delay policy, not part of
//! any protocol: loom builds never yield.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A yield that gave the CPU away for this long (a scheduler tick is 1-4
/// ms) is slow.
pub(crate) const SLOW_YIELD: Duration = Duration::from_millis(1);

/// How long a thread keeps reading the CPU clock after a slow yield.
const JUDGE_FOR: Duration = Duration::from_secs(1);

/// How long waiters skip yielding after a slow yield, at first and at most.
const QUIET_MIN_NANOS: u64 = 10_000_000;
const QUIET_MAX_NANOS: u64 = 1_000_000_000;

/// Until when (nanoseconds after `base()`) waiters skip yielding, and the
/// length of the current window. Process-wide: the load that makes a yield
/// slow is the machine's. Relaxed: hints for a delay policy.
static QUIET_UNTIL: AtomicU64 = AtomicU64::new(0);
static QUIET_FOR: AtomicU64 = AtomicU64::new(QUIET_MIN_NANOS);

thread_local! {
    /// Until when this thread reads the CPU clock as a yield phase starts.
    static JUDGE_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// One yield phase of one waiter.
pub(crate) struct Phase {
    start: Instant,
    /// The process's CPU time when the phase started, if measured.
    cpu_at_start: Option<Duration>,
}

impl Phase {
    /// Starts a yield phase at `start`; `None` if waiters should not yield
    /// now (park instead).
    pub(crate) fn begin(start: Instant) -> Option<Phase> {
        if nanos_since_base(start) < QUIET_UNTIL.load(Ordering::Relaxed) {
            return None;
        }
        let judge = JUDGE_UNTIL.with(|j| j.get().is_some_and(|until| start < until));
        Some(Phase {
            start,
            cpu_at_start: if judge { process_cpu() } else { None },
        })
    }

    /// A yield of this phase took [`SLOW_YIELD`] or longer (the phase ends).
    pub(crate) fn slow_yield(&self, now: Instant) {
        JUDGE_UNTIL.with(|j| j.set(Some(now + JUDGE_FOR)));
        let used = self
            .cpu_at_start
            .zip(process_cpu())
            .map(|(at_start, now)| now.saturating_sub(at_start));
        // Under a quarter of one core since the phase began: the CPU went
        // to other processes.
        if used.is_some_and(|used| used * 4 < now - self.start) {
            quiet_from(nanos_since_base(now));
        }
    }
}

/// Waiters skip yielding from `now` on, for a window twice as long as the
/// last one if that one ended less than its own length ago.
fn quiet_from(now: u64) {
    let ended = QUIET_UNTIL.load(Ordering::Relaxed);
    let last = QUIET_FOR.load(Ordering::Relaxed);
    let window = if now < ended.saturating_add(last) {
        (last * 2).min(QUIET_MAX_NANOS)
    } else {
        QUIET_MIN_NANOS
    };
    QUIET_FOR.store(window, Ordering::Relaxed);
    QUIET_UNTIL.store(now.saturating_add(window), Ordering::Relaxed);
}

fn nanos_since_base(now: Instant) -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    u64::try_from(now.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX)
}

/// The CPU time this process has used so far.
#[cfg(all(unix, not(miri)))]
fn process_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; the call writes only it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    (rc == 0).then(|| Duration::new(secs, nanos))
}

/// No process CPU clock here (or Miri, which has none): never judged slow.
#[cfg(not(all(unix, not(miri))))]
fn process_cpu() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_windows_double_while_slow_and_reset_after() {
        // (Process-wide state: this is the only test that touches it.)
        let t = 5_000_000_000;
        quiet_from(t);
        let first = QUIET_FOR.load(Ordering::Relaxed);
        assert_eq!(QUIET_UNTIL.load(Ordering::Relaxed), t + first);
        // Slow again just after the window ended: twice as long.
        quiet_from(t + first + 1);
        assert_eq!(
            QUIET_FOR.load(Ordering::Relaxed),
            (first * 2).min(QUIET_MAX_NANOS)
        );
        // Long after: back to the shortest window.
        quiet_from(t + 100 * QUIET_MAX_NANOS);
        assert_eq!(QUIET_FOR.load(Ordering::Relaxed), QUIET_MIN_NANOS);
        // Leave waiters in this process yielding again.
        QUIET_UNTIL.store(0, Ordering::Relaxed);
    }

    #[test]
    #[cfg(all(unix, not(miri)))]
    fn the_process_cpu_clock_moves_with_work() {
        let before = process_cpu().unwrap();
        let mut x = 0u64;
        let spin_until = Instant::now() + Duration::from_millis(20);
        while Instant::now() < spin_until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(process_cpu().unwrap() > before);
    }
}
