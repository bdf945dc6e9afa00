//! A cheap test that a far deadline has surely not passed yet.
//!
//! A select loop with a timer case (`after(Duration::from_secs(5))` beside
//! the channels it serves) asks the timer on every try pass whether it is
//! due, and `Instant::now()` (the `CLOCK_MONOTONIC` vDSO read) was 4-10% of
//! Go's select producer/consumer shape here: 25 ns a read against about
//! 4 ns for `CLOCK_MONOTONIC_COARSE`, which returns the same clock as of
//! its last tick. So a timer also notes the coarse clock when it reads
//! `Instant::now()` at its start, and a try first asks whether the coarse
//! clock shows the deadline still far ahead; only a deadline within the
//! margin below (about 100 ms) needs the exact read.
//!
//! The argument. Let `F` be `CLOCK_MONOTONIC` (what `Instant` reads on
//! Linux, as std documents today) and `C` the coarse clock, which is `F` as
//! of the timekeeper's last update: `F - lag <= C <= F`. A timer reads
//! `c0 = C` and then `f0 = F`, so `f0 >= c0`. A later coarse read `c1`,
//! taken when `F = f1`, gives `f1 <= c1 + lag`, hence
//! `f1 - f0 <= (c1 - c0) + lag`. With `MARGIN >= lag`, a reading
//! `c1 - c0 + MARGIN < d` shows `f1 < f0 + d`: not due.
//!
//! `lag` is one tick while the CPU that keeps time runs its tick, but
//! nothing bounds it absolutely: a timekeeping CPU stalled by its
//! hypervisor stops the coarse clock while the exact one (the cycle
//! counter) runs on (Linux hands the duty over after 5 stalled ticks; older
//! kernels never do). So the margin is wide, 100 ms plus eight ticks
//! (`clock_getres` of the coarse clock), and the test is only taken where
//! being late by a stall beyond it is harmless: a try (`Receiver::try_recv`,
//! a select's try pass: a select parked until the timer's exact time that
//! finds it not yet due parks again, so it is late by the stall; with a
//! deadline of its own at or just after the timer's, it may report its
//! timeout instead). A blocking `recv` on a timer compares with
//! `Instant::now()` only. (Were std's `Instant` to move to `CLOCK_BOOTTIME`, a try after a
//! suspend would see the timer late by the suspend, as a Go timer is.)
//!
//! Elsewhere (other systems, Miri, loom) there is no coarse clock and every
//! test falls through to `Instant::now()`.

/// A coarse-clock reading in nanoseconds, taken just before the timer's
/// `Instant::now()`. `None` where there is no coarse clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchor(Option<u64>);

impl Anchor {
    /// Reads the coarse clock; call it right before the `Instant::now()`
    /// it anchors.
    pub(crate) fn now() -> Self {
        Anchor(imp::coarse_nanos())
    }

    /// True when the anchored `Instant` plus `offset` nanoseconds is surely
    /// still in the future. False means "not known": read the exact clock.
    #[inline]
    pub(crate) fn surely_before(&self, offset: u64) -> bool {
        let Some(c0) = self.0 else { return false };
        let margin = imp::margin();
        // A short offset cannot be shown ahead: skip the clock read.
        if offset <= margin {
            return false;
        }
        imp::coarse_nanos().is_some_and(|c1| c1.saturating_sub(c0) < offset - margin)
    }
}

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
mod imp {
    use std::sync::OnceLock;

    /// The clock calls' shape: `clock_gettime` and `clock_getres`.
    type ClockFn = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

    #[inline]
    fn read(clock: libc::clockid_t, f: ClockFn) -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        if unsafe { f(clock, &mut ts) } != 0 {
            return None;
        }
        let secs = u64::try_from(ts.tv_sec).ok()?;
        let nanos = u64::try_from(ts.tv_nsec).ok()?;
        secs.checked_mul(1_000_000_000)?.checked_add(nanos)
    }

    #[inline]
    pub(super) fn coarse_nanos() -> Option<u64> {
        read(libc::CLOCK_MONOTONIC_COARSE, libc::clock_gettime)
    }

    /// 100 ms and eight tick periods (see the module docs); `u64::MAX`
    /// (never shown ahead) if the resolution cannot be read.
    #[inline]
    pub(super) fn margin() -> u64 {
        static MARGIN: OnceLock<u64> = OnceLock::new();
        *MARGIN.get_or_init(|| {
            read(libc::CLOCK_MONOTONIC_COARSE, libc::clock_getres)
                .and_then(|res| res.checked_mul(8)?.checked_add(100_000_000))
                .unwrap_or(u64::MAX)
        })
    }
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
mod imp {
    #[inline]
    pub(super) fn coarse_nanos() -> Option<u64> {
        None
    }

    #[inline]
    pub(super) fn margin() -> u64 {
        u64::MAX
    }
}

// (Not under loom or Miri: neither has a real clock.)
#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::Anchor;
    use std::time::{Duration, Instant};

    #[test]
    fn far_deadlines_are_shown_ahead_near_ones_are_not() {
        let anchor = Anchor::now();
        let start = Instant::now();
        // Nothing within the margin is ever shown ahead.
        assert!(!anchor.surely_before(0));
        assert!(!anchor.surely_before(10_000_000));
        // Where the coarse clock can be read (not everywhere: sandboxes),
        // an hour is shown ahead.
        if super::imp::coarse_nanos().is_some() && super::imp::margin() < u64::MAX {
            assert!(anchor.surely_before(3_600_000_000_000));
        }
        // Whatever it says, it is never wrong. (Elapsed is read first: an
        // answer at a later moment implies it.)
        let d = Duration::from_millis(150);
        loop {
            let elapsed = start.elapsed();
            if elapsed >= 2 * d {
                break;
            }
            let ahead = anchor.surely_before(d.as_nanos() as u64);
            assert!(!ahead || elapsed < d, "{d:?} shown ahead at {elapsed:?}");
        }
        assert!(!anchor.surely_before(d.as_nanos() as u64));
    }
}
