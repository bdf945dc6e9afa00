//! Cell states shared by the channel's cells and the semaphore's cells.
//!
//! A cell word is a small constant or a pointer to a waiter's [`Entry`]
//! (aligned to 8, so never one of the constants; bit 0 tags a sender's
//! entry on a rendezvous channel). Every transition is a single CAS or a
//! store by the one thread that owns the cell at that moment.
//!
//! ```text
//!  EMPTY ──send──────────────▶ BUFFERED ──recv──▶ DONE
//!    │ └─recv parks──▶ entry ──send claims──▶ CLAIMED ──▶ DONE        (handed over)
//!    │                   │                        └──────▶ SKIP_RECV   (waiter gone)
//!    │                   └─owner withdraws──────────────▶ SKIP_RECV   (timeout, close)
//!    ├─try_recv gives up (sender late)──────────────────▶ SKIP_RECV
//!    └─try_send gives up (receiver late)────────────────▶ SKIP_SEND   (rendezvous)
//! ```
//! A parked rendezvous sender mirrors the receiver's path with `SKIP_SEND`.
//! A partner landing on a `SKIP_*` cell abandons its index and takes a new
//! one; the skip counters keep `len()` exact.
//!
//! [`Entry`]: crate::waiter::Entry

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::{Backoff, SpinLoad};
use crate::waiter::{Entry, Waiter, CLOSED, SELECTED};

/// Nobody has arrived.
pub(crate) const EMPTY: usize = 0;
/// A value sits in the cell's slot (or, in a semaphore, a permit).
pub(crate) const BUFFERED: usize = 1;
/// Both sides are finished with the cell.
pub(crate) const DONE: usize = 2;
/// A partner or closer holds the cell while it deals with the entry.
pub(crate) const CLAIMED: usize = 3;
/// The send side of this index gave up: the receiver skips the cell.
pub(crate) const SKIP_SEND: usize = 4;
/// The receive side of this index gave up: the sender skips the cell.
pub(crate) const SKIP_RECV: usize = 5;

/// Tag bit on an entry pointer published by a sender.
pub(crate) const SENDER_TAG: usize = 1;

#[inline]
pub(crate) fn is_entry(state: usize) -> bool {
    state >= 8
}

#[inline]
pub(crate) fn entry_word(entry: &Entry, sender: bool) -> usize {
    entry as *const Entry as usize | sender as usize
}

#[inline]
pub(crate) fn entry_ptr(state: usize) -> *const Entry {
    (state & !SENDER_TAG) as *const Entry
}

/// Moves a cell holding `word` (an entry) to `CLAIMED`. Acquire: the entry's
/// fields, written before it was published, are visible.
#[inline]
pub(crate) fn claim(state: &AtomicUsize, word: usize) -> Result<(), usize> {
    state
        .compare_exchange(word, CLAIMED, Ordering::Acquire, Ordering::Acquire)
        .map(|_| ())
}

/// What [`claim_waiter`] found.
pub(crate) enum Claim<'a> {
    /// The waiter is ours: move the value through `slot` (a
    /// `*mut MaybeUninit<T>` of the cell's `T`), then call [`finish`].
    Won { waiter: &'a Waiter, slot: *mut () },
    /// The waiter was already decided (it timed out, or was closed); the
    /// cell is now `skip`.
    Gone,
    /// The cell changed before we could claim it; this is its new state.
    Moved(usize),
}

/// A partner (or, with `close`, a closer) takes the waiter whose entry
/// `word` it read from `state`: claims the cell, then decides the waiter
/// for the entry's case (or `CLOSED`). A lost decision leaves `skip`.
#[inline]
pub(crate) fn claim_waiter<'a>(
    state: &AtomicUsize,
    word: usize,
    skip: usize,
    close: bool,
) -> Claim<'a> {
    if let Err(now) = claim(state, word) {
        return Claim::Moved(now);
    }
    let entry = entry_ptr(word);
    // SAFETY: we hold the claim, so the entry's owner cannot return (see
    // `withdraw`) and the entry is alive until we release the cell.
    let (waiter, case, slot) = unsafe { (&*(*entry).waiter, (*entry).case, (*entry).slot) };
    if waiter.try_decide(if close { CLOSED } else { SELECTED + case }) {
        Claim::Won { waiter, slot }
    } else {
        // Release: a withdrawing owner waits for this store.
        state.store(skip, Ordering::Release);
        Claim::Gone
    }
}

/// Completes a won claim: releases the cell as `end` and wakes the waiter.
/// The waiter (and, for a closer, its cell's segment) may be gone after.
#[inline]
pub(crate) fn finish(state: &AtomicUsize, end: usize, waiter: &Waiter) {
    // Release: a withdrawing owner, or a receiver spinning on CLAIMED, reads
    // the cell after us.
    state.store(end, Ordering::Release);
    waiter.wake();
}

/// The owner of an aborted entry takes it out of its cell, leaving `skip`.
/// If a partner or closer holds the cell, waits for it to let go (it then
/// writes `skip` itself, having lost the waiter's state CAS): the entry lives
/// on the owner's stack and must outlive every reader.
pub(crate) fn withdraw(state: &AtomicUsize, word: usize, skip: usize) {
    if state
        .compare_exchange(word, skip, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    let backoff = Backoff::new();
    // Acquire: the claimer's last read of our entry happens before we return.
    while state.spin_load(Ordering::Acquire) == CLAIMED {
        backoff.snooze();
    }
}

/// Waits for a cell someone else has claimed to be released.
pub(crate) fn wait_unclaimed(state: &AtomicUsize) -> usize {
    let backoff = Backoff::new();
    loop {
        let s = state.spin_load(Ordering::Acquire);
        if s != CLAIMED {
            return s;
        }
        backoff.snooze();
    }
}
