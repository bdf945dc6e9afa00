//! A waiter in a cell: publishing its entry, the closed check that may
//! withdraw it, taking over a cell a waiter of the same side gave up,
//! waiting, and passing the skips that withdrawn waiters leave.

use super::*;

impl<T> Channel<T> {
    /// Whether a waiter of `side` may find a skip to take over (see
    /// `adopt_skip`): one load, before a blocking operation takes its index.
    #[inline]
    pub(super) fn may_adopt(&self, side: Side) -> bool {
        self.maybe_skipped[side as usize].load(Ordering::Relaxed)
    }

    /// A blocking receive (`mode` parks or registers) that takes over a
    /// cell a receiver gave up (see `adopt_skip`) instead of a new index.
    /// `None`: none found.
    #[cold]
    pub(super) fn recv_adopting(
        &self,
        mode: Mode<'_>,
        out: *mut T,
    ) -> Option<Result<(), RecvStop>> {
        Some(match mode {
            Mode::Try => return None,
            // SAFETY: `out` is writable (our caller's contract).
            Mode::Park(deadline) => {
                unsafe { self.park_adopting(Side::Pop, out, deadline) }?.map_err(RecvStop::Fail)
            }
            Mode::Register { entry, .. } => Err(self
                .adopt_skip(Side::Pop, entry)?
                .map_or_else(|fail| RecvStop::Fail(fail.failed()), RecvStop::Registered)),
        })
    }

    /// A blocking rendezvous send (`mode` parks or registers) that takes
    /// over a cell a sender gave up (see `adopt_skip`) instead of a new
    /// index. `None`: none found.
    ///
    /// # Safety
    /// As [`Channel::send_from`].
    #[cold]
    pub(super) unsafe fn send_adopting(
        &self,
        msg: *mut T,
        mode: Mode<'_>,
    ) -> Option<Result<(), SendStop>> {
        Some(match mode {
            Mode::Try => return None,
            // SAFETY: `msg` as our caller's contract says.
            Mode::Park(deadline) => {
                unsafe { self.park_adopting(Side::Push, msg, deadline) }?.map_err(SendStop::Fail)
            }
            // The value is already in the select's slot (`msg`).
            Mode::Register { entry, .. } => Err(self
                .adopt_skip(Side::Push, entry)?
                .map_or_else(|fail| SendStop::Fail(fail.failed()), SendStop::Registered)),
        })
    }

    /// Parks a waiter of `side` in a cell taken over from one that gave up
    /// (see `adopt_skip`) until a partner, a close or `deadline` decides
    /// it. `msg` holds a sender's value, or receives a receiver's. `None`:
    /// no cell to take over.
    ///
    /// As on a new index (`send_rendezvous`, `recv_into`), a small message
    /// waits beside the waiter, so the partner's read or write and the
    /// wake-up move one cache line; a large one stays where the caller
    /// keeps it. A sender's copy not taken is never read.
    ///
    /// # Safety
    /// A sender's `msg` is readable, and the value stays the caller's
    /// unless the result is `Ok`; a receiver's `msg` is writable.
    unsafe fn park_adopting(
        &self,
        side: Side,
        msg: *mut T,
        deadline: Option<Instant>,
    ) -> Option<Result<(), Fail>> {
        let sender = matches!(side, Side::Push);
        let done = with_entry(msg, |entry, slot| {
            if sender && slot != msg {
                // SAFETY: `msg` is readable (the contract); the slot is ours.
                unsafe { ptr::copy_nonoverlapping(msg, slot, 1) };
            }
            let done = self
                .adopt_skip(side, entry)?
                .and_then(|reg| self.wait_registered(reg, entry, deadline));
            if done.is_ok() && !sender && slot != msg {
                // SAFETY: the sender wrote our slot before waking us; `msg`
                // is writable (the contract).
                unsafe { ptr::copy_nonoverlapping(slot, msg, 1) };
            }
            Some(done)
        })?;
        Some(done.map_err(ParkFail::failed))
    }

    /// Publishes `entry` in `state` (a cell of `seg`, index `index`), which
    /// the caller found `EMPTY`, then checks for a close that came first
    /// (the other half of close's Dekker fence): a waiter the close cannot
    /// serve withdraws at once. Consumes the pin: a parked thread must not
    /// stall reclamation, so the registration, which may touch its cell
    /// later (a select's case, a timed wait that withdraws), holds a
    /// segment reference instead. (An untimed wait needs none: see
    /// [`Channel::park_untimed`].)
    pub(super) fn publish(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicWord,
        entry: &Entry,
        sender: bool,
        index: u64,
        guard: epoch::Guard,
    ) -> Result<Registration, ParkFail> {
        seg.acquire_ref();
        let word = cell::entry_word(entry, sender);
        // Release publishes the entry (and, for a sender, its value).
        if let Err(s) = state.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Acquire) {
            // SAFETY: our own reference, taken above; `guard` still pins
            // `seg`.
            unsafe { Segment::release_ref(seg) };
            return Err(ParkFail::Lost(s, guard));
        }
        // SAFETY: just published, with the reference taken above.
        let reg = unsafe { self.registered(seg, state, entry, sender, index, Placed::Published) };
        drop(guard);
        reg
    }

    /// The registration of `entry`, published in `state` (a cell of `seg`,
    /// index `index`): what cancelling it must do (give the index back,
    /// or leave a skip and count it and pass it) and what completing it
    /// releases (the segment reference).
    ///
    /// # Safety
    /// The entry word of `entry` is in `state`, and the caller holds a
    /// reference on `seg` that passes to the registration, or makes it
    /// [`InCell::unreferenced`] under that function's contract.
    unsafe fn registration(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicWord,
        entry: &Entry,
        sender: bool,
        index: u64,
    ) -> InCell {
        let word = cell::entry_word(entry, sender);
        let (counter, skip, skipped) = self.side(if sender { Side::Push } else { Side::Pop });
        // A rendezvous channel never hands an index back: a select's duplex
        // entry waits in the cell both counters point at, taking neither
        // index, and counts on the next operation of either side reaching
        // it. A give-back on each side below it moves both counters back,
        // and the next receive parks below the duplex with no sender ever
        // coming (loom: `duplex_stays_reachable_after_timeouts`). There the
        // withdrawn waiters' skips are passed instead (`pass_skips`), which
        // only moves counters forward.
        let give_back = may_give_back(index) && !matches!(self.kind, Kind::Rendezvous);
        // SAFETY: `word` is in `state`, a cell of `seg`, on which the caller
        // holds the reference (our contract); the counter lives as long as
        // `self`, which the caller's handle keeps alive while the entry
        // exists.
        unsafe {
            InCell::new(
                state,
                word,
                skip,
                Some(skipped),
                give_back.then_some((counter, index)),
                seg as *const Segment<Cell<T>> as *const (),
                release_segment::<T>,
            )
            // SAFETY: as above, `self` outlives the registration.
            .after_skip(
                self as *const Self as *const (),
                if sender {
                    pass_skips::<T, true>
                } else {
                    pass_skips::<T, false>
                },
            )
        }
    }

    /// Whether `entry`, just published at `index`, must withdraw: a close
    /// came first and can never serve it (a send, or a receive past the
    /// close), and no partner or closer has decided its waiter yet (a
    /// registering select cannot be decided by anyone else, so it always
    /// can; a plain waiter may already have been). Dekker with `close`:
    /// our entry store, then this check; the closer sets the bit, then
    /// scans for entries. One sees the other.
    #[inline]
    fn withdraws_on_close(&self, entry: &Entry, sender: bool, index: u64) -> bool {
        fence(Ordering::SeqCst);
        // Acquire: for `closed_at`.
        let s = self.senders.load(Ordering::Acquire);
        self.closed_at(s).is_some_and(|at| sender || index >= at)
            && (entry.waiter().is_registering() || entry.waiter().try_abort())
    }

    /// Completes the registration of `entry`, put in `state` (a cell of
    /// `seg`, index `index`, on which the caller took a reference that the
    /// registration now owns) as `placed` says.
    ///
    /// # Safety
    /// As described: the entry word of `entry` is in `state`, and the
    /// caller's reference on `seg` passes to the registration.
    unsafe fn registered(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicWord,
        entry: &Entry,
        sender: bool,
        index: u64,
        placed: Placed,
    ) -> Result<Registration, ParkFail> {
        // SAFETY: per our contract.
        let reg = unsafe { self.registration(seg, state, entry, sender, index) };
        if self.withdraws_on_close(entry, sender, index) {
            return Err(cancel_on_close(reg, sender, placed));
        }
        Ok(reg.into())
    }

    /// Before a waiter of `side` takes a new index: publishes `entry` in a
    /// cell of the side's last segment that a waiter of the same side gave
    /// up (a skip) and that the other side has not reached, if there is
    /// one, and registers it there. `None`: no such cell.
    ///
    /// Behind a waiter that is never served (a receiver blocked for good
    /// on a quiet channel, Go's `done` channel with one goroutine waiting
    /// on it), waiters that give up (`recv_timeout` pollers, a select
    /// loop's timeout) leave skips that `pass_skips` cannot pass: the other
    /// side's next index is the blocked waiter's. When they give up out of
    /// order, the first to give up is not the last index taken and cannot
    /// hand it back, and on a rendezvous channel no index goes back at all;
    /// the skips piled up for good (measured: 620 segments on an unbounded
    /// channel and 1250 on a rendezvous one after 2 x 20 000 timed-out
    /// receives behind a blocked receiver). Taking them over keeps the
    /// cells in use near the number of waiters.
    ///
    /// Every other claim on a skip is a CAS from it too: the operation of
    /// the other side that took its index lands with one (`land_on_skip`),
    /// a passer holds it `CLAIMED` while it moves the counter, and a
    /// select that met itself leaves `DONE` (`InCell::cancel_met`), so
    /// exactly one takes it, and a skip whose partner index is spent is
    /// never taken over. An operation that loses to us finds our entry and
    /// meets it as any waiter's. Only cells at or past the other side's
    /// count are looked at, so a receiver never takes a cell over while the
    /// channel holds messages (nor a sender while receivers wait). Waiters
    /// are then not served in arrival order where some gave up, as on the
    /// permit queue (`Semaphore::reuse_withdrawn`).
    fn adopt_skip(&self, side: Side, entry: &Entry) -> Option<Result<Registration, ParkFail>> {
        let hint = &self.maybe_skipped[side as usize];
        // Relaxed (the hint and the counts): a waiter that misses a skip
        // takes a new index, as before there was any taking over; the CAS
        // below decides.
        if !hint.load(Ordering::Relaxed) {
            return None;
        }
        let sender = matches!(side, Side::Push);
        let (counter, skip, skipped) = self.side(side);
        let (other, _, _) = self.side(if sender { Side::Pop } else { Side::Push });
        let guard = self.cells.pin();
        // Cursor first: the segment of any index read after it is at or
        // past it.
        let start = self.cells.cursor(side, &guard);
        let top = counter.load(Ordering::Relaxed);
        let from = count(other.load(Ordering::Relaxed));
        // Past the close (the bit in S, the mark in R) there is no point.
        if top & CLOSED_BIT != 0 || count(top) <= from {
            return None;
        }
        let seg = self.cells.peek(start, count(top) - 1, &guard)?;
        let word = cell::entry_word(entry, sender);
        let Some(index) = seg.take_over(from, count(top), |cell| &cell.state, skip, word) else {
            hint.store(false, Ordering::Relaxed);
            return None;
        };
        skipped.fetch_sub(1, Ordering::Relaxed);
        drop(guard);
        // SAFETY: our entry is in the cell, with the reference taken above.
        let state = &seg.cell(index).state;
        Some(unsafe { self.registered(seg, state, entry, sender, index, Placed::Adopted) })
    }

    /// Parks the caller in `state` through `entry` (whose slot its value
    /// moves through) until a partner, a close or the deadline decides it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn park_in(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicWord,
        entry: &Entry,
        sender: bool,
        index: u64,
        deadline: Option<Instant>,
        guard: epoch::Guard,
    ) -> Result<(), ParkFail> {
        // A timed wait may cancel its entry when the deadline passes, long
        // after its pin: it holds a reference instead (`publish`).
        if deadline.is_none() {
            return self.park_untimed(seg, state, entry, sender, index, guard);
        }
        let reg = self.publish(seg, state, entry, sender, index, guard)?;
        self.wait_registered(reg, entry, deadline)
    }

    /// [`Channel::park_in`] without a deadline. Such a wait never withdraws
    /// once past its closed check (nothing times it out): a partner or a
    /// closer decides it, each under a pin of its own, and then nothing
    /// here reads the cell again. So it takes no segment reference (our
    /// pin keeps the segment until the closed check is done), and it builds
    /// its registration only to withdraw after that check: completing an
    /// unreferenced registration does nothing.
    fn park_untimed(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicWord,
        entry: &Entry,
        sender: bool,
        index: u64,
        guard: epoch::Guard,
    ) -> Result<(), ParkFail> {
        let word = cell::entry_word(entry, sender);
        // Release publishes the entry (and, for a sender, its value).
        if let Err(s) = state.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Acquire) {
            return Err(ParkFail::Lost(s, guard));
        }
        // (A waiter already decided, by a partner or the closer, waits
        // for what that decided.)
        if self.withdraws_on_close(entry, sender, index) {
            // SAFETY: our entry is in `state`, a cell of `seg`, which
            // `guard` pins until the cancel is done; we took no reference,
            // hence `unreferenced`.
            let reg = unsafe {
                self.registration(seg, state, entry, sender, index)
                    .unreferenced()
            };
            return Err(cancel_on_close(reg, sender, Placed::Published));
        }
        drop(guard);
        match entry.waiter().wait(None) {
            Outcome::Selected(_) => Ok(()),
            // The closer marked the cell and counted the skip.
            Outcome::Closed(_) => Err(ParkFail::Fail(Fail::Closed)),
            Outcome::TimedOut => unreachable!("a wait without a deadline timed out"),
        }
    }

    /// Waits until a partner, a close or the deadline decides `entry`,
    /// registered as `reg`.
    fn wait_registered(
        &self,
        reg: Registration,
        entry: &Entry,
        deadline: Option<Instant>,
    ) -> Result<(), ParkFail> {
        match entry.waiter().wait(deadline) {
            Outcome::Selected(_) => {
                reg.complete();
                Ok(())
            }
            Outcome::Closed(_) => {
                // The closer marked the cell and counted the skip.
                reg.complete();
                Err(ParkFail::Fail(Fail::Closed))
            }
            Outcome::TimedOut => {
                reg.cancel();
                Err(ParkFail::Fail(Fail::Timeout))
            }
        }
    }

    /// A side's index counter, the skip its withdrawn waiters leave, and
    /// the count of those skips not yet passed.
    fn side(&self, side: Side) -> (&AtomicU64, Word, &AtomicU64) {
        match side {
            Side::Push => (&self.senders, SKIP_SEND, &self.skipped_sends),
            Side::Pop => (&self.receivers.count, SKIP_RECV, &self.skipped_recvs),
        }
    }

    /// Moves the other side's counter past cells this side gave up, when
    /// they are next in its line: called after a waiter withdrew and left a
    /// skip (`SKIP_RECV` after a receiver, `SKIP_SEND` after a sender).
    ///
    /// An index given up on a quiet channel (a select's `quit` case, a
    /// polling `recv_timeout`) is passed only when the other side arrives;
    /// until then the segments from that side's cursor on cannot be
    /// retired, and with several waiters giving up out of order (so the
    /// index cannot simply go back, see `InCell::cancel`) they would
    /// pile up without bound. So the withdrawer does for the other side what
    /// its next operation would do on landing there: take the index (a CAS
    /// from the count it read, so any real operation or a close wins) and
    /// settle the skip count. `len` is unchanged; `try_*` see no difference.
    fn pass_skips(&self, withdrawn: Side) {
        let other = match withdrawn {
            Side::Push => Side::Pop,
            Side::Pop => Side::Push,
        };
        // Relaxed: a hint (see `adopt_skip`), set after the skip was left.
        self.maybe_skipped[withdrawn as usize].store(true, Ordering::Relaxed);
        let (ours, skip, skipped) = self.side(withdrawn);
        let (counter, _, _) = self.side(other);
        self.cells.pass_head(
            other,
            counter,
            // Not closed (the bit in either counter), and taken on our side.
            |i| i & CLOSED_BIT == 0 && i < count(ours.load(Ordering::Relaxed)),
            // Held while the counter moves, so that a waiter cannot take
            // the cell over (`adopt_skip`) from under a passed index; an
            // operation that wins the index waits for the hold to end.
            // Acquire: the skip may have been left by a partner that read
            // a waiter's entry before it gave up the cell (Release), and
            // that waiter, spinning on CLAIMED, may read our store below
            // instead: our Release must carry the partner's reads with it,
            // or the waiter could return and free the entry while they are
            // unordered (our plain store ends the partner's release
            // sequence). Found in review.
            |cell| {
                cell.state
                    .compare_exchange(skip, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            },
            |cell, moved| {
                // Release: pairs with the Acquire of whoever waits on CLAIMED.
                cell.state
                    .store(if moved { DONE } else { skip }, Ordering::Release);
                if moved {
                    skipped.fetch_sub(1, Ordering::Relaxed);
                }
            },
        );
    }

    /// The cell of our index in `state` is a skip that the other side left
    /// (`skip`): marks it passed and settles the count, after which the
    /// caller takes a new index. `Err`: the cell changed first (a waiter
    /// took it over, see `adopt_skip`, or a passer holds it): its state.
    ///
    /// A CAS, not a read: the cell could otherwise be taken over after we
    /// left it, by a waiter no operation would ever reach.
    #[inline]
    pub(super) fn land_on_skip(
        &self,
        state: &AtomicWord,
        skip: Word,
        skipped: &AtomicU64,
    ) -> Result<(), Word> {
        // Relaxed: DONE publishes nothing; Acquire on failure, as every
        // state we go on to act on is read.
        state.compare_exchange(skip, DONE, Ordering::Relaxed, Ordering::Acquire)?;
        skipped.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The segment reference a [`Registration`] drops.
///
/// # Safety
/// `seg` is a `Segment<Cell<T>>` on which the caller holds a reference.
pub(super) unsafe fn release_segment<T>(seg: *const ()) {
    // SAFETY: per the contract.
    unsafe { Segment::release_ref(seg as *const Segment<Cell<T>>) };
}

/// [`Channel::pass_skips`] after a sender's (`SENDER`) or a receiver's
/// entry withdrew.
///
/// # Safety
/// `chan` is a live `Channel<T>`.
unsafe fn pass_skips<T, const SENDER: bool>(chan: *const ()) {
    // SAFETY: per the contract.
    let chan = unsafe { &*(chan as *const Channel<T>) };
    chan.pass_skips(if SENDER { Side::Push } else { Side::Pop });
}

/// How an entry came into its cell (see [`Channel::registered`]); either
/// way its registration holds a reference on the cell's segment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// Published in an empty cell ([`Channel::publish`]).
    Published,
    /// Taken over from a waiter of the same side that gave up (see
    /// [`Channel::adopt_skip`]).
    Adopted,
}

/// Takes out `reg`, an entry a close can never serve (see
/// [`Channel::withdraws_on_close`]), placed as `placed` says.
fn cancel_on_close(reg: InCell, sender: bool, placed: Placed) -> ParkFail {
    // A receive index past the close is never reached by a send, so its
    // skip is not counted (`len` clamps what is left); but a cell taken
    // over gives back the skip it took, as it found it.
    if sender || placed == Placed::Adopted {
        reg
    } else {
        reg.uncounted()
    }
    .cancel();
    ParkFail::Fail(Fail::Closed)
}

/// Why `park_in` did not complete the operation.
pub(super) enum ParkFail {
    /// The cell changed before the entry was published: re-examine it
    /// (still pinned by the returned guard).
    Lost(Word, epoch::Guard),
    Fail(Fail),
}

impl ParkFail {
    /// The failure of a registration that was published (never `Lost`).
    fn failed(self) -> Fail {
        match self {
            ParkFail::Fail(fail) => fail,
            ParkFail::Lost(..) => unreachable!("a published entry is not lost"),
        }
    }
}

/// A non-blocking operation found its cell EMPTY: the partner is between
/// its fetch-and-add and its CAS. Spins briefly for it, then gives the index
/// up (the cell becomes `skip`, counted in `skipped`). `Err(state)`: the
/// partner arrived; settle the cell in that state instead.
#[inline]
pub(super) fn give_up(state: &AtomicWord, skip: Word, skipped: &AtomicU64) -> Result<(), Word> {
    let backoff = Backoff::new();
    // Alone on one CPU, the partner cannot write while we spin.
    #[cfg(not(loom))]
    let rounds = if crate::yielding::spinning_helps() {
        4
    } else {
        0
    };
    #[cfg(loom)]
    let rounds = 4;
    for _ in 0..rounds {
        backoff.spin();
        let s = state.load(Ordering::Acquire);
        if s != EMPTY {
            return Err(s);
        }
    }
    state.compare_exchange(EMPTY, skip, Ordering::Relaxed, Ordering::Acquire)?;
    skipped.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
