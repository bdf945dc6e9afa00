//! Parking a thread until a waker flips a flag, optionally until a deadline.
//!
//! Normal builds park in `parking_lot_core`'s global table, keyed by the
//! address of the waiter's flag: the waker needs only that address, so it may
//! unpark after the waiter's memory is gone (a stale key at worst wakes an
//! unrelated waiter spuriously, and every waiter re-checks its flag).
//!
//! Under loom the waker holds the waiter's `Thread` handle instead, and a
//! timed park never sleeps: it yields once and reports a timeout, which models
//! a timeout that fires at any point the scheduler picks (loom has no clock).

use std::time::Instant;

/// Identifies a parked thread to its waker. Taken before the waker publishes
/// the state change that lets the waiter return.
pub(crate) struct UnparkHandle {
    #[cfg(not(loom))]
    key: usize,
    #[cfg(loom)]
    thread: loom::thread::Thread,
}

impl UnparkHandle {
    /// Wakes the thread this handle names, if it is parked.
    #[inline]
    pub(crate) fn unpark(self) {
        #[cfg(not(loom))]
        // SAFETY: `unpark_one` only hashes the key; no memory is read through it.
        unsafe {
            parking_lot_core::unpark_one(self.key, |_| parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
        #[cfg(loom)]
        self.thread.unpark();
    }
}

/// The park side, embedded in a waiter.
#[derive(Debug)]
pub(crate) struct Parker {
    #[cfg(loom)]
    thread: loom::thread::Thread,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            #[cfg(loom)]
            thread: loom::thread::current(),
        }
    }

    /// A handle for the waker. `key` is the address of the flag the waiter
    /// re-checks; it must be the same address passed to [`Parker::park`].
    #[inline]
    pub(crate) fn handle(&self, key: usize) -> UnparkHandle {
        #[cfg(not(loom))]
        return UnparkHandle { key };
        #[cfg(loom)]
        {
            let _ = key;
            UnparkHandle {
                thread: self.thread.clone(),
            }
        }
    }

    /// Sleeps while `still_waiting()` holds, until woken or `deadline`.
    /// Returns `false` if the deadline passed. May return early (spurious
    /// wake-up): callers loop on their own flag.
    pub(crate) fn park(
        &self,
        key: usize,
        still_waiting: impl Fn() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        #[cfg(not(loom))]
        {
            // SAFETY: the validate callback only reads an atomic flag, and no
            // callback calls back into parking_lot_core.
            let result = unsafe {
                parking_lot_core::park(
                    key,
                    still_waiting,
                    || {},
                    |_, _| {},
                    parking_lot_core::DEFAULT_PARK_TOKEN,
                    deadline,
                )
            };
            !matches!(result, parking_lot_core::ParkResult::TimedOut)
        }
        #[cfg(loom)]
        {
            let _ = key;
            if !still_waiting() {
                return true;
            }
            if deadline.is_some() {
                loom::thread::yield_now();
                return false;
            }
            loom::thread::park();
            true
        }
    }
}
