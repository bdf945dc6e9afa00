//! Closing: the closed bit, failing the waiters a close leaves without a
//! partner, and dropping what the last receiver leaves behind.

use super::*;

impl<T> Channel<T> {
    /// Closes the channel; `true` if this call closed it.
    pub(crate) fn close(&self) -> bool {
        if let Kind::Counting { count, .. } = &self.kind {
            // The count's own flag is the closed state of a zero-sized
            // channel (its sends and `is_closed` read only that), so it
            // alone says who closed it: a close that answered from the bit
            // in `senders` could return `false` before the flag was set,
            // and a send on its thread still succeed (found in review;
            // loom `zst_close_answer_is_final`).
            return count.close();
        }
        // The bit never clears: a close that finds it set has nothing to
        // do (the last receiver's drop usually closes the channel, and the
        // last sender's drop then spares the read-modify-write).
        if self.senders.load(Ordering::Relaxed) & CLOSED_BIT != 0 {
            return false;
        }
        // R first: from this mark on, R never goes down (a timed-out
        // receiver's give-back expects R unmarked, so it fails and leaves
        // a skip instead), and it comes before the bit in S in the single
        // total order (SeqCst), so a `try_recv` that sees the bit in S and
        // then reads R reads a final R (see `nothing_to_receive`). Racing
        // closers may both mark it; only one sets the bit in S.
        self.receivers.count.fetch_or(CLOSED_BIT, Ordering::SeqCst);
        // The count goes to `closed_at` before the bit goes into S, so a
        // reader that sees the bit never waits for it (with a `fetch_or`
        // and a store after it, readers spun on a closer preempted in
        // between; loom `close_behind_timed_receivers` found two of them
        // starving it). Racing closers both raise `closed_at`: every count
        // raised to was read before the winning CAS, and counts only grow,
        // so the maximum is the winner's.
        let mut s = self.senders.load(Ordering::Relaxed);
        let closed_at = loop {
            if s & CLOSED_BIT != 0 {
                return false;
            }
            // Relaxed: the CAS below releases it to whoever reads the bit.
            self.closed_at.fetch_max(count(s) + 1, Ordering::Relaxed);
            // A failed CAS means a send took an index meanwhile: retry at
            // once (a wait would only let more sends in).
            match self.senders.compare_exchange(
                s,
                s | CLOSED_BIT,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break count(s),
                Err(now) => s = now,
            }
        };
        // Dekker with `park_in`: the bit, then the scan for entries.
        fence(Ordering::SeqCst);
        let r = count(self.receivers.count.load(Ordering::Relaxed));
        match &self.kind {
            Kind::Rendezvous => {
                let guard = self.cells.pin();
                // Parked senders anywhere, parked receivers from `closed_at`,
                // and select duplexes, which may also sit in the one cell
                // past both counts.
                let lo = r.min(closed_at);
                self.cells.visit(lo, r.max(closed_at) + 1, &guard, |cell| {
                    let word = cell.state.load(Ordering::Acquire);
                    if cell::is_entry(word) && word.addr() & (SENDER_TAG | DUPLEX_TAG) != 0 {
                        close_counted(&cell.state, word, SKIP_SEND, &self.skipped_sends);
                    }
                });
                self.close_receivers(closed_at, r);
            }
            Kind::Unbounded => self.close_receivers(closed_at, r),
            Kind::Bounded { permits, .. } => {
                self.close_receivers(closed_at, r);
                permits.close_waiters();
            }
            Kind::Counting { .. } => unreachable!("closed above"),
        }
        true
    }

    /// Fails the receivers parked at `closed_at..r` (those that came before
    /// any message they could get). Most closes find none (`r <= closed_at`)
    /// and skip the pin with its fence.
    fn close_receivers(&self, closed_at: u64, r: u64) {
        if r <= closed_at {
            return;
        }
        let guard = self.cells.pin();
        self.cells.visit(closed_at, r, &guard, |cell| {
            let word = cell.state.load(Ordering::Acquire);
            if cell::is_entry(word) && word.addr() & (SENDER_TAG | DUPLEX_TAG) == 0 {
                cell::close_entry(&cell.state, word, SKIP_RECV);
            }
        });
    }

    /// Closes and drops every buffered message (the last receiver is gone).
    ///
    /// If a message's `Drop` panics, the messages after it are received
    /// and leaked while the panic unwinds, never dropped: a second panic
    /// during the unwind would abort the process (SPEC: the panic surfaces,
    /// the rest may leak), and receiving them keeps `len()` at 0 as after a
    /// drain that completed.
    pub(crate) fn close_and_drain(&self) {
        /// Receives and leaks what is left, when dropped. It receives
        /// into the drain's own buffer: no second `T` on the stack.
        struct LeakRest<'a, T>(&'a Channel<T>, *mut T);
        impl<T> Drop for LeakRest<'_, T> {
            fn drop(&mut self) {
                // The buffer is a `MaybeUninit`, which never drops its
                // content: each message received here is leaked.
                while self.0.recv_into(Mode::Try, self.1).is_ok() {}
            }
        }

        self.close();
        let mut buf = MaybeUninit::<T>::uninit();
        let out = buf.as_mut_ptr();
        let on_unwind = LeakRest(self, out);
        // SAFETY: `out` is our buffer, written only by these receives.
        // (`recv_to`: a drained channel is told by its read-only check,
        // without the general receive's frame.)
        while unsafe { self.recv_to(Mode::Try, out) }.is_ok() {
            // SAFETY: `Ok`: the receive moved a message into `out`, which
            // is ours to drop (it is not read again before the next move).
            unsafe { ptr::drop_in_place(out) };
        }
        // Drained: nothing left for the guard.
        mem::forget(on_unwind);
    }
}

/// Fails the waiter whose entry `word` was read from `state` (the channel
/// is closed), leaving `skip`, counted in `skipped` for whoever passes it.
/// A select's duplex failed this way leaves its cell `EMPTY` (see
/// `cell::claim_waiter`), with no skip to count.
pub(super) fn close_counted(state: &AtomicWord, word: Word, skip: Word, skipped: &AtomicU64) {
    if cell::close_entry(state, word, skip) && word.addr() & DUPLEX_TAG == 0 {
        skipped.fetch_add(1, Ordering::Relaxed);
    }
}
