//! One-shot waiters: what a blocked operation leaves in a cell.
//!
//! A [`Waiter`] is owned by a blocked thread (on its stack). It is published
//! in a cell through an [`Entry`], which adds the case number and the slot a
//! value moves through, so a waiter can in principle be registered in several
//! cells at once (what `select` needs).
//!
//! The waiter's `state` is decided once, by CAS: the owner gives up
//! (`ABORTED`: timeout), a closer closes it (`CLOSED`), or a partner selects
//! one of its entries (`SELECTED + case`). Only the winner may touch the
//! waiter's slots; it then publishes the outcome in `done` and unparks.
//!
//! A partner that finds an entry pointer in a cell first moves the cell to
//! `CLAIMED` by CAS and only then dereferences the entry; an owner that gives
//! up waits for any `CLAIMED` cell of its own to be released before its stack
//! frame can go away. So an entry is never read after its owner returned.

use crate::loom::park::{Parker, UnparkHandle};
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::SpinLoad;
use std::time::Instant;

/// `Waiter::state`: still waiting.
pub(crate) const WAITING: usize = 0;
/// `Waiter::state`: the owner gave up (timeout).
pub(crate) const ABORTED: usize = 1;
/// `Waiter::state`: a closer decided it; the operation reports `Closed`.
pub(crate) const CLOSED: usize = 2;
/// `Waiter::state`: `SELECTED + case` was chosen by a partner.
pub(crate) const SELECTED: usize = 3;

/// `Waiter::done`: nobody has finished with the waiter yet.
const PENDING: usize = 0;
/// `Waiter::done`: the decider has finished; the owner may proceed.
const FINISHED: usize = 1;

/// A blocked operation's rendezvous point.
#[derive(Debug)]
pub(crate) struct Waiter {
    state: AtomicUsize,
    done: AtomicUsize,
    parker: Parker,
}

/// Why a blocked operation woke up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A partner completed entry `case`.
    Selected(usize),
    /// The channel closed.
    Closed,
    /// The deadline passed and the owner withdrew.
    TimedOut,
}

impl Waiter {
    pub(crate) fn new() -> Self {
        Waiter {
            state: AtomicUsize::new(WAITING),
            done: AtomicUsize::new(PENDING),
            parker: Parker::new(),
        }
    }

    /// Decides the waiter for a partner (`SELECTED + case`) or a closer
    /// (`CLOSED`). On success the caller must finish with [`Waiter::wake`].
    #[inline]
    pub(crate) fn try_decide(&self, decision: usize) -> bool {
        // Acquire: the owner's writes to its slots (a sent value) are visible.
        // Release is not needed: the outcome is published through `done`.
        self.state
            .compare_exchange(WAITING, decision, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The owner withdraws. `false`: someone decided first, so the owner
    /// must [`Waiter::wait_finished`] before it may return.
    #[inline]
    pub(crate) fn try_abort(&self) -> bool {
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// The decider is done with the waiter (slot written or read): lets the
    /// owner return, and unparks it. The waiter may be gone after the store.
    #[inline]
    pub(crate) fn wake(&self) {
        let handle: UnparkHandle = self.parker.handle(self.key());
        // Release: the slot transfer happens before the owner reads it.
        self.done.store(FINISHED, Ordering::Release);
        handle.unpark();
    }

    fn key(&self) -> usize {
        &self.done as *const AtomicUsize as usize
    }

    fn is_finished(&self) -> bool {
        // Acquire: pairs with the Release in `wake`.
        self.done.spin_load(Ordering::Acquire) == FINISHED
    }

    /// Parks until decided and finished, or until `deadline`. A timeout
    /// tries to abort; when a decider got there first, waits for it.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Outcome {
        let backoff = crate::loom::Backoff::new();
        // Partners usually come within microseconds: spin a little before
        // paying ~10-30 us for a park/unpark round trip (NOTES.md).
        while !backoff.is_completed() {
            if self.is_finished() {
                return self.outcome();
            }
            backoff.snooze();
        }
        loop {
            if self.is_finished() {
                return self.outcome();
            }
            // loom has no clock: its parker models the timeout instead.
            if !cfg!(loom) && deadline.is_some_and(|d| Instant::now() >= d) {
                if self.try_abort() {
                    return Outcome::TimedOut;
                }
                self.wait_finished();
                return self.outcome();
            }
            let in_time = self
                .parker
                .park(self.key(), || !self.is_finished(), deadline);
            if !in_time && !self.is_finished() {
                if self.try_abort() {
                    return Outcome::TimedOut;
                }
                self.wait_finished();
                return self.outcome();
            }
        }
    }

    /// Waits, without a deadline, for the decider to finish.
    pub(crate) fn wait_finished(&self) {
        while !self.is_finished() {
            self.parker.park(self.key(), || !self.is_finished(), None);
        }
    }

    fn outcome(&self) -> Outcome {
        match self.state.load(Ordering::Relaxed) {
            CLOSED => Outcome::Closed,
            s if s >= SELECTED => Outcome::Selected(s - SELECTED),
            s => unreachable!("waiter finished in state {s}"),
        }
    }
}

/// One registration of a waiter in one cell.
#[derive(Debug)]
#[repr(align(8))]
pub(crate) struct Entry {
    pub(crate) waiter: *const Waiter,
    pub(crate) case: usize,
    /// `*mut MaybeUninit<T>` for the cell's `T`: where a parked sender keeps
    /// its value and where a parked receiver gets one.
    pub(crate) slot: *mut (),
}
