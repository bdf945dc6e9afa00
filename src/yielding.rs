//! Whether a blocked thread should spin or yield before it parks.
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
    /// When the phase started and the process's CPU time then, if this
    /// thread is judging its yields (it saw a slow one lately).
    judged: Option<(Instant, Duration)>,
}

impl Phase {
    /// Starts a yield phase; `None` if waiters should not yield now (park
    /// instead). Reads the clock only while a quiet window was ever opened
    /// or this thread judges its yields: a blocked rendezvous ping-pong on
    /// one CPU begins a phase per message.
    #[inline]
    pub(crate) fn begin() -> Option<Phase> {
        let quiet_until = QUIET_UNTIL.load(Ordering::Relaxed);
        let judge_until = JUDGE_UNTIL.with(Cell::get);
        if quiet_until == 0 && judge_until.is_none() {
            return Some(Phase { judged: None });
        }
        Self::begin_timed(quiet_until, judge_until)
    }

    /// [`Phase::begin`] when it must read the clock.
    #[cold]
    #[inline(never)]
    fn begin_timed(quiet_until: u64, judge_until: Option<Instant>) -> Option<Phase> {
        let now = Instant::now();
        if quiet_until != 0 && nanos_since_base(now) < quiet_until {
            return None;
        }
        let judge = judge_until.is_some_and(|until| now < until);
        if judge_until.is_some() && !judge {
            // Judging is over: later phases can skip the clock again.
            JUDGE_UNTIL.with(|j| j.set(None));
        }
        Some(Phase {
            judged: if judge {
                process_cpu().map(|cpu| (now, cpu))
            } else {
                None
            },
        })
    }

    /// A yield of this phase took [`SLOW_YIELD`] or longer (the phase ends).
    pub(crate) fn slow_yield(&self, now: Instant) {
        JUDGE_UNTIL.with(|j| j.set(Some(now + JUDGE_FOR)));
        let Some((start, cpu_at_start)) = self.judged else {
            return;
        };
        // Under a quarter of one core since the phase began: the CPU went
        // to other processes.
        let used = process_cpu().map(|cpu| cpu.saturating_sub(cpu_at_start));
        if used.is_some_and(|used| used * 4 < now - start) {
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

/// A thread's record of how its last spins in a cell ended, kept so that a
/// thread whose partner keeps arriving only after it yielded stops paying
/// for the spin (see [`spin_in_cell_pays`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SpinRecord {
    /// Spins in a row that ended without the partner (skipped ones count).
    misses: u32,
}

/// Spins in a row that found no partner before a thread stops spinning.
const SKIP_AFTER_MISSES: u32 = 4;

/// While it skips, a thread still spins once in this many waits, to see
/// whether its partner has come back within a spin's reach.
const PROBE_EVERY: u32 = 8;

impl SpinRecord {
    /// Whether this wait should spin; a wait that will not counts as a
    /// miss.
    fn should_spin(&mut self) -> bool {
        if self.misses < SKIP_AFTER_MISSES || self.misses % PROBE_EVERY == 0 {
            return true;
        }
        self.misses = self.misses.checked_add(1).unwrap_or(SKIP_AFTER_MISSES);
        false
    }

    /// A spin ended: `won` if the partner came during it.
    fn spun(&mut self, won: bool) {
        self.misses = if won {
            0
        } else {
            self.misses.checked_add(1).unwrap_or(SKIP_AFTER_MISSES)
        };
    }
}

thread_local! {
    static SPINS: Cell<SpinRecord> = const { Cell::new(SpinRecord { misses: 0 }) };
}

/// Whether a waiter parked in a cell should spin before it yields. With
/// more runnable threads than cores, its partner is often not running,
/// and each spin is a few hundred nanoseconds of a CPU the partner may be
/// waiting for: a thread whose last [`SKIP_AFTER_MISSES`] spins all ended
/// without its partner goes straight to yielding, except once every
/// [`PROBE_EVERY`] waits. Measured on the 2-core Xeon (criterion quick
/// mode, 4 rounds in alternating order, against a spin on every wait):
/// rendezvous ping-pong (`chan_sync`) at 2-16 pairs 0.77-0.88 of the time,
/// Go's producer/consumer shape on `bounded(0)` 0.85-0.88, `chan_popular`
/// 0.87-0.91 and `select_sync_contended` 0.89-0.97 at 2-16; one pair,
/// where the partner runs on the other core and the spin finds it, and
/// the buffered shapes, within 0.90-1.08. Only for waits in cells (the
/// unbound waits before a thread takes an index spin as before), and a
/// delay policy only: no protocol depends on it.
pub(crate) fn spin_in_cell_pays() -> bool {
    with_spin_record(SpinRecord::should_spin).unwrap_or(true)
}

/// Records how a spin that [`spin_in_cell_pays`] allowed ended.
pub(crate) fn spun_in_cell(won: bool) {
    with_spin_record(|record| record.spun(won));
}

/// Runs `f` on this thread's [`SpinRecord`]; `None` once the thread's
/// locals are gone (a channel used from another thread-local's
/// destructor), where the record is not kept.
#[inline]
fn with_spin_record<R>(f: impl FnOnce(&mut SpinRecord) -> R) -> Option<R> {
    SPINS
        .try_with(|spins| {
            let mut record = spins.get();
            let out = f(&mut record);
            spins.set(record);
            out
        })
        .ok()
}

/// Whether spinning can help this thread: false when it may run on only
/// one CPU (pinned there, or alone on the machine). Its partner then runs
/// only once this thread gives the CPU up, so every pause spent waiting for
/// it is lost: a rendezvous ping-pong with both threads on one CPU took
/// 1420 ns per round trip with the 15-pause spin and 1180 without (kanal
/// 945 in the same runs). Asked once per thread (a system call): a thread
/// that changes its affinity later keeps the first answer.
#[inline]
pub(crate) fn spinning_helps() -> bool {
    thread_local! {
        static HELPS: Cell<Option<bool>> = const { Cell::new(None) };
    }
    HELPS
        .try_with(|helps| {
            helps.get().unwrap_or_else(|| {
                let answer = allowed_cpus() > 1;
                helps.set(Some(answer));
                answer
            })
        })
        // Thread-locals already destroyed (a channel used from another
        // thread-local's destructor): ask each time.
        .unwrap_or_else(|_| allowed_cpus() > 1)
}

/// How many CPUs this thread may run on.
#[cfg(all(target_os = "linux", not(miri)))]
fn allowed_cpus() -> usize {
    // SAFETY: `cpu_set_t` is plain data and all zeroes is a valid (empty)
    // set; the call writes at most `size_of::<cpu_set_t>()` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return usize::MAX; // unknown: keep spinning, as before
        }
        libc::CPU_COUNT(&set) as usize
    }
}

/// Elsewhere the process's share of the machine (std's answer, which reads
/// the affinity mask or the platform's equivalent where it can).
#[cfg(not(all(target_os = "linux", not(miri))))]
fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(usize::MAX, |n| n.get())
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
    fn spins_stop_after_misses_and_probe_until_one_wins() {
        let mut record = SpinRecord::default();
        for _ in 0..SKIP_AFTER_MISSES {
            assert!(record.should_spin());
            record.spun(false);
        }
        // Skipping now, with a probe once every PROBE_EVERY waits.
        let spins: Vec<bool> = (0..3 * PROBE_EVERY)
            .map(|_| {
                let spin = record.should_spin();
                if spin {
                    record.spun(false);
                }
                spin
            })
            .collect();
        assert_eq!(spins.iter().filter(|&&s| s).count(), 3, "{spins:?}");
        assert!(!spins[0], "the first wait after the misses skips");
        // A probe that wins: spinning again on every wait.
        while !record.should_spin() {}
        record.spun(true);
        assert_eq!(record, SpinRecord::default());
        assert!((0..SKIP_AFTER_MISSES).all(|_| record.should_spin()));
        // Counting past the largest count does not overflow.
        let mut record = SpinRecord { misses: u32::MAX };
        record.spun(false);
        assert_eq!(record.misses, SKIP_AFTER_MISSES);
        let mut record = SpinRecord { misses: u32::MAX };
        assert!(!record.should_spin());
        assert_eq!(record.misses, SKIP_AFTER_MISSES);
    }

    /// Confines the calling thread to the first CPU it may run on.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn pin_to_one_cpu() {
        // SAFETY: as in `allowed_cpus`; the calls read and write only the
        // sets given.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
                0
            );
            let first = (0..libc::CPU_SETSIZE as usize)
                .find(|&cpu| libc::CPU_ISSET(cpu, &set))
                .unwrap();
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(first, &mut one);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of_val(&one), &one),
                0
            );
        }
    }

    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_thread_pinned_to_one_cpu_does_not_spin() {
        let machine = allowed_cpus();
        std::thread::spawn(move || {
            pin_to_one_cpu();
            assert_eq!(allowed_cpus(), 1);
            assert!(!spinning_helps(), "pinned before its first wait");
        })
        .join()
        .unwrap();
        std::thread::spawn(move || {
            // Asked before the pin: the machine's answer, which is kept.
            assert_eq!(spinning_helps(), machine > 1);
            pin_to_one_cpu();
            assert_eq!(spinning_helps(), machine > 1, "the first answer is kept");
        })
        .join()
        .unwrap();
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
