//! Parking a thread until a waker flips a flag, optionally until a deadline.
//!
//! Normal builds park in `parking_lot_core`'s global table, keyed by the
//! address of the waiter's flag: the waker needs only that address, so it may
//! unpark after the waiter's memory is gone (a stale key at worst wakes an
//! unrelated waiter spuriously, and every waiter re-checks its flag).
//!
//! Under loom the waker holds a token shared with the waiter (a mutex and a
//! condvar), and a timed park never sleeps: it yields once and reports a
//! timeout, which models a timeout that fires at any point the scheduler
//! picks (loom has no clock).

use std::time::Instant;

/// Identifies a parked thread to its waker. Taken before the waker publishes
/// the state change that lets the waiter return.
pub(crate) struct UnparkHandle {
    #[cfg(not(loom))]
    key: usize,
    #[cfg(loom)]
    token: std::sync::Arc<LoomToken>,
}

/// Under loom: an unpark token behind a mutex and condvar. (loom's own
/// `thread::park` drops an unpark that lands while the target is in its
/// yield state, which reads as a false deadlock.)
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct LoomToken {
    unparked: loom::sync::Mutex<bool>,
    cv: loom::sync::Condvar,
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
        {
            *self.token.unparked.lock().unwrap() = true;
            self.token.cv.notify_one();
        }
    }
}

/// The park side, embedded in a waiter.
#[derive(Debug)]
pub(crate) struct Parker {
    #[cfg(loom)]
    token: std::sync::Arc<LoomToken>,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            #[cfg(loom)]
            token: std::sync::Arc::new(LoomToken {
                unparked: loom::sync::Mutex::new(false),
                cv: loom::sync::Condvar::new(),
            }),
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
                token: self.token.clone(),
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
            if deadline.is_some() {
                if !still_waiting() {
                    return true;
                }
                loom::thread::yield_now();
                return false;
            }
            let mut unparked = self.token.unparked.lock().unwrap();
            while !*unparked && still_waiting() {
                unparked = self.token.cv.wait(unparked).unwrap();
            }
            *unparked = false;
            true
        }
    }
}
