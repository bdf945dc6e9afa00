//! Timer channels: [`after`](crate::after), [`tick`](crate::tick) and
//! [`never`](crate::never).
//!
//! No thread per timer and no message in any queue: a timer is a deadline
//! the receiver compares with the clock. `after` delivers once; `tick`
//! delivers on the grid `start + k * period` (Go's schedule) and a receiver
//! that falls behind gets one stale tick and then the next grid point, never
//! a backlog. A blocked receiver sleeps until the next delivery time (or its
//! own deadline) in `parking_lot_core`, from which `close` wakes it.
//!
//! A select waits for a timer's delivery time with its own deadline, but it
//! parks on its own waiter, not on the timer's key: so a select case on a
//! timer also lists its entry with the timer, and `close` decides every
//! listed select as closed (the waiter protocol of `waiter.rs`, under the
//! list's lock, as a zero-sized channel's close does).
//!
//! Timers are plain atomics on the real clock: nothing here is shared with
//! the cell protocol, so the loom models do not cover them (loom has no
//! clock); the tests in `tests/timers.rs` do.

use crate::cell::{self, Registration, Word};
use crate::coarse_clock::Anchor;
use crate::waiter::{close_listed, Entry};
use crate::Fail;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `d` in nanoseconds, saturated (a u64 of them lasts 584 years).
fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What a timer delivers, and when.
#[derive(Debug)]
enum Schedule {
    /// Once, at `at` (`None`: a delay too long for `Instant`, so never),
    /// which is `delay` nanoseconds (saturated) after the coarse clock's
    /// `anchor`.
    After {
        at: Option<Instant>,
        delay: u64,
        anchor: Anchor,
        fired: AtomicBool,
    },
    /// At `start + k * period` for k >= 1; `next` is the next undelivered
    /// grid point, as nanoseconds after `start` (and after `anchor`).
    Tick {
        start: Instant,
        anchor: Anchor,
        period: u64,
        next: AtomicU64,
    },
    /// Never.
    Never,
}

/// The shared state behind a timer [`Receiver`](crate::Receiver).
#[derive(Debug)]
pub(crate) struct Timer {
    schedule: Schedule,
    closed: AtomicBool,
    /// The entries of selects waiting with a case on this timer.
    selects: Mutex<Vec<*const Entry>>,
}

// SAFETY: the entries in `selects` are only dereferenced by `close`, under
// the lock, and a listed entry's owner keeps it alive until it has taken it
// out (which takes the lock) or was decided and woken (see `close`).
unsafe impl Send for Timer {}
// SAFETY: as above; everything else is atomics.
unsafe impl Sync for Timer {}

impl Timer {
    pub(crate) fn after(delay: Duration) -> Self {
        // (The anchor first: see `coarse_clock`.)
        let anchor = Anchor::now();
        Timer::new(Schedule::After {
            at: Instant::now().checked_add(delay),
            delay: saturating_nanos(delay),
            anchor,
            fired: AtomicBool::new(false),
        })
    }

    pub(crate) fn tick(period: Duration) -> Self {
        assert!(
            !period.is_zero(),
            "scalechan::tick: the period must be greater than zero"
        );
        // Periods beyond 584 years tick never in practice; saturate.
        let period = saturating_nanos(period);
        let anchor = Anchor::now();
        Timer::new(Schedule::Tick {
            start: Instant::now(),
            anchor,
            period,
            next: AtomicU64::new(period),
        })
    }

    pub(crate) fn never() -> Self {
        Timer::new(Schedule::Never)
    }

    fn new(schedule: Schedule) -> Self {
        Timer {
            schedule,
            closed: AtomicBool::new(false),
            selects: Mutex::new(Vec::new()),
        }
    }

    /// `Some(1)` for `after` and `tick` (at most one message is ever
    /// pending), `Some(0)` for `never`.
    pub(crate) fn capacity(&self) -> Option<usize> {
        match self.schedule {
            Schedule::Never => Some(0),
            _ => Some(1),
        }
    }

    /// The next delivery time; `None` if there will be none.
    pub(crate) fn next_delivery(&self) -> Option<Instant> {
        if self.is_closed() {
            return None;
        }
        match &self.schedule {
            // Relaxed: a stale `false` only makes a receiver look once more.
            Schedule::After { at, fired, .. } if !fired.load(Ordering::Relaxed) => *at,
            Schedule::After { .. } | Schedule::Never => None,
            Schedule::Tick { start, next, .. } => {
                start.checked_add(Duration::from_nanos(next.load(Ordering::Relaxed)))
            }
        }
    }

    /// Takes the pending delivery, if one is due. No read-modify-write when
    /// none is, and no exact clock read while the coarse clock shows the
    /// delivery time far ahead (a select loop asks on every pass).
    pub(crate) fn try_recv(&self) -> Result<Instant, Fail> {
        self.take_due(true)
    }

    /// [`try_recv`](Self::try_recv); `coarse`: whether the coarse clock
    /// may answer "not due" (see `coarse_clock`: not for a blocking
    /// receive, which would spin through a stalled coarse clock).
    fn take_due(&self, coarse: bool) -> Result<Instant, Fail> {
        if self.is_closed() {
            return Err(Fail::Closed);
        }
        match &self.schedule {
            Schedule::After {
                at: Some(at),
                delay,
                anchor,
                fired,
            } => {
                if fired.load(Ordering::Relaxed)
                    || (coarse && anchor.surely_before(*delay))
                    || Instant::now() < *at
                {
                    return Err(Fail::WouldBlock);
                }
                // Relaxed: the flag carries no other data; the CAS makes
                // exactly one receiver the one that gets the message.
                match fired.compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => Ok(*at),
                    Err(_) => Err(Fail::WouldBlock),
                }
            }
            Schedule::After { at: None, .. } | Schedule::Never => Err(Fail::WouldBlock),
            Schedule::Tick {
                start,
                anchor,
                period,
                next,
            } => {
                let mut due = next.load(Ordering::Relaxed);
                if coarse && anchor.surely_before(due) {
                    return Err(Fail::WouldBlock);
                }
                let elapsed = saturating_nanos(start.elapsed());
                loop {
                    if elapsed < due {
                        return Err(Fail::WouldBlock);
                    }
                    // The grid point after now: ticks missed meanwhile are
                    // dropped, as Go's ticker drops them.
                    let after_now = (elapsed / period).saturating_add(1).saturating_mul(*period);
                    match next.compare_exchange_weak(
                        due,
                        after_now,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return Ok(*start + Duration::from_nanos(due)),
                        Err(now) => due = now,
                    }
                }
            }
        }
    }

    /// Blocks until a delivery, the close, or `deadline`.
    pub(crate) fn recv(&self, deadline: Option<Instant>) -> Result<Instant, Fail> {
        loop {
            match self.take_due(false) {
                Err(Fail::WouldBlock) => {}
                done => return done,
            }
            let wake = match (self.next_delivery(), deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                // A close between `take_due`'s read of the flag and the
                // clock read may have come before the deadline: a timed
                // receive on a closed channel reports `Closed` (SPEC).
                return Err(if self.is_closed() {
                    Fail::Closed
                } else {
                    Fail::Timeout
                });
            }
            // SAFETY: the key is our own address, used only for hashing; the
            // validation callback runs under the bucket lock, so a close
            // between it and the park is seen by `close`'s unpark.
            unsafe {
                parking_lot_core::park(
                    self.key(),
                    || !self.is_closed(),
                    || {},
                    |_, _| {},
                    parking_lot_core::DEFAULT_PARK_TOKEN,
                    wake,
                );
            }
        }
    }

    fn key(&self) -> usize {
        &self.closed as *const AtomicBool as usize
    }

    pub(crate) fn is_closed(&self) -> bool {
        // Acquire: pairs with the Release in `close`.
        self.closed.load(Ordering::Acquire)
    }

    /// Stops the timer; blocked receivers and selects wake up and report
    /// `Closed`.
    pub(crate) fn close(&self) -> bool {
        let first = !self.closed.swap(true, Ordering::Release);
        if first {
            // SAFETY: the key is only hashed.
            unsafe {
                parking_lot_core::unpark_all(self.key(), parking_lot_core::DEFAULT_UNPARK_TOKEN);
            }
            let mut selects = self.selects.lock().unwrap_or_else(|e| e.into_inner());
            for entry in selects.drain(..) {
                // SAFETY: listed, and we hold the lock (see the `Sync` impl).
                // A select still registering looks again and finds the
                // timer closed (see `register`).
                unsafe { close_listed(entry) };
            }
        }
        first
    }

    /// Lists a select's `entry`, for `close` to decide. `None`: the timer
    /// is closed (the case completes at once).
    pub(crate) fn register(&self, entry: &Entry) -> Option<Registration> {
        let mut selects = self.selects.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock: `close` sets the flag before it takes the lock to
        // drain, so either it finds our entry or we see the flag.
        if self.is_closed() {
            return None;
        }
        selects.push(entry);
        // SAFETY: the timer outlives the registration (the select holds
        // the receiver), and `listed_ops` only takes the lock.
        Some(unsafe {
            Registration::listed(
                self as *const Self as *const (),
                cell::entry_word(entry, false),
                listed_ops,
            )
        })
    }

    /// 1 while a delivery is due and not taken, else 0.
    pub(crate) fn len(&self) -> usize {
        match self.next_delivery() {
            Some(at) if Instant::now() >= at => 1,
            _ => 0,
        }
    }
}

/// What a listed [`Registration`] of a select calls back: whether the entry
/// is still listed (`remove` false), or take it out (`remove` true).
///
/// # Safety
/// `owner` is the live `Timer` whose list `word`'s entry went into.
unsafe fn listed_ops(owner: *const (), word: Word, remove: bool) -> bool {
    // SAFETY: per the contract.
    let timer = unsafe { &*(owner as *const Timer) };
    let mut selects = timer.selects.lock().unwrap_or_else(|e| e.into_inner());
    let at = selects
        .iter()
        .position(|&e| ptr::eq(e, cell::entry_ptr(word)));
    match at {
        Some(at) if remove => {
            selects.swap_remove(at);
            false
        }
        at => at.is_some(),
    }
}
