//! Receives: the blocking and non-blocking forms, the short paths that
//! take a message waiting at the cursor, and the wait for a sender before
//! an index is taken.

use super::counted::recv_counted;
use super::park::give_up;
use super::*;

impl<T> Channel<T> {
    /// A blocking receive (`Receiver::recv` and its timed forms), which
    /// on an unbounded channel starts with [`Channel::recv_unbounded`].
    /// Apart from [`Channel::recv`], so that a `try_recv` keeps its
    /// inlined loads alone: checked in `recv`, the extra call made a closed
    /// channel's `try_recv` 1.1 -> 2.5 ns.
    #[inline]
    pub(crate) fn recv_parked(&self, deadline: Option<Instant>) -> RecvResult<T> {
        // (Small messages only: a large one would take a second place on
        // this path's stack, beside the one `recv` keeps for it.)
        let small = std::mem::size_of::<T>() <= NEAR_WAITER;
        if let (Kind::Unbounded, true, false) = (&self.kind, small, cfg!(loom)) {
            return self.recv_unbounded(deadline);
        }
        self.recv(Wait::Until(deadline))
    }

    #[inline(always)]
    pub(crate) fn recv(&self, wait: Wait) -> RecvResult<T> {
        // A large message goes into a place in this frame, and from there
        // into the caller's result: one copy on the way up, not one per
        // `Result` conversion (1 MiB: 3 MiB of stack to receive, was 4).
        // Small ones keep `recv_in`'s path, which keeps an empty
        // `try_recv` two loads inlined in the caller (hence `inline(always)`:
        // without it this function was called, 1.1 -> 1.7-2.4 ns).
        if std::mem::size_of::<T>() <= NEAR_WAITER {
            return self.recv_in(wait.into()).map_err(RecvStop::unregistered);
        }
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` is ours to write.
        match unsafe { self.recv_to(wait.into(), out.as_mut_ptr()) } {
            // SAFETY: `Ok` means the receive moved a message into `out`.
            Ok(()) => Ok(unsafe { out.assume_init() }),
            Err(stop) => Err(stop.unregistered()),
        }
    }

    /// Receives in any mode; a select's receive case registers here.
    #[inline]
    pub(crate) fn recv_in(&self, mode: Mode<'_>) -> Result<T, RecvStop> {
        if std::mem::size_of::<T>() == 0 {
            if let Kind::Counting { count, .. } = &self.kind {
                // As in `send_from`: the uncontended receive inlined.
                if count.recv_fast() {
                    // SAFETY: a `Counting` channel carries zero-sized `T`,
                    // and the count we took stands for a message sent and
                    // forgotten.
                    return Ok(unsafe { conjure() });
                }
            }
        }
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` is ours to write.
        unsafe { self.recv_to(mode, out.as_mut_ptr())? };
        // SAFETY: `Ok` means the receive moved a message into `out`.
        Ok(unsafe { out.assume_init() })
    }

    /// Receives in any mode into `out`, which holds the message after
    /// `Ok(())`: a select's receive case takes its message straight into
    /// its slot this way, with no copy of `T` in between.
    ///
    /// # Safety
    /// `out` is valid for a write of `T`, and nothing else writes it while
    /// this runs.
    #[inline]
    pub(crate) unsafe fn recv_to(&self, mode: Mode<'_>, out: *mut T) -> Result<(), RecvStop> {
        // Here as well as in `recv_into`'s loop: a failing `try_recv` then
        // never enters that large function, and is two loads inlined in the
        // caller (0.6 ns per poll on one thread, 3 ns through the call).
        // (Not for zero-sized messages on a count, which has its own words.)
        //
        // A consumer that drains a backlog this way (`try_iter`, a polling
        // loop, a select with `default`) read `senders` on every message,
        // and so pulled that line away from each next send's index CAS:
        // one producer sending as fast as it could to one consumer
        // draining with `try_iter`, 2 cores, took 176 ns per message on an
        // unbounded channel (crossbeam-channel 48). While `backlog` says
        // that more than one message was waiting, the try skips the loads
        // and takes the message at the cursor, reading `receivers` and the
        // cell only (as a waiting select's try does:
        // `try_recv_at_cursor_first`); the first that finds none there
        // clears the hint and checks as usual (in `try_take`): 62 ns. The
        // empty poll pays one more load, on the line of `receivers`.
        let on_cells = std::mem::size_of::<T>() != 0 || !matches!(self.kind, Kind::Counting { .. });
        if let (Mode::Try, true) = (mode, on_cells) {
            // (Not under loom, as `try_take` below: the attempt is the one
            // `recv_into` makes, which the models check. 0: not counted.)
            let waiting = if !cfg!(loom) && self.receivers.backlog.load(Ordering::Relaxed) {
                0
            } else {
                self.receivable().map_err(RecvStop::Fail)?
            };
            if !cfg!(loom) {
                // SAFETY: the caller's contract.
                return unsafe { self.try_take(out, waiting) };
            }
        }
        self.recv_into(mode, out)
    }

    /// A select's try of a receive case when the select waits if nothing
    /// is ready: first the message at the cursor, taken as
    /// [`Channel::take_buffered`] takes it (which reads `receivers` and the
    /// cell, not `senders`), then the usual try. The emptiness check of
    /// [`Channel::recv_to`] reads `senders`, and a select that polls a
    /// channel its producers fill pulls that line away from every next
    /// send's index CAS: in Go's select producer/consumer shape on a
    /// `bounded(10)` (producers' and consumers' selects each with a timer
    /// case and a quit channel), 0.80-0.88 of the time at 1, 4 and 16
    /// pairs (9 alternating runs each). Not for a select that gives up
    /// when nothing is ready: there an empty case would pay the pin first
    /// (`select_nonblock`'s select over four empty or full cases ran 1.12x
    /// the time).
    ///
    /// # Safety
    /// As for [`Channel::recv_to`].
    #[inline]
    pub(crate) unsafe fn try_recv_at_cursor_first(&self, out: *mut T) -> Result<(), RecvStop> {
        // (The kinds `take_buffered` serves: no pin for the others.)
        if matches!(self.kind, Kind::Unbounded | Kind::Bounded { .. })
            && self.take_at_cursor(out, false)
        {
            self.release_permit();
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe { self.recv_to(Mode::Try, out) }
    }

    /// A try that found something to receive: a message waiting at the
    /// cursor is taken in this small frame (as `recv_unbounded` takes it),
    /// not in `recv_into`'s; anything else (a parked sender, a deposit
    /// still in progress) goes on to `recv_into`, which pins and looks
    /// again. A select's try pass and a `try_recv` or a timed receive that
    /// find their message take it this way: a two-case `select!` that
    /// found its message, 39-40 -> 36-38 ns; `recv_timeout` 17.6-19.9 ->
    /// 14.6-15.2. A lost race for the index does not wait here (the
    /// attempt in `recv_into` does): waiting in both made contended
    /// selects wait twice. Out of line, so that the failing `try_recv`
    /// stays two loads inlined in its caller. Not under loom, where
    /// `recv_into` makes the same attempt with the pin it then keeps.
    ///
    /// `waiting`: how many messages the emptiness check counted, or 0 if
    /// the try skipped the check on the strength of `Receivers::backlog`.
    /// With more than the one taken here, the next try skips the check
    /// too; with none found at the cursor after skipping it, the check
    /// comes now and the hint is cleared.
    ///
    /// # Safety
    /// As for [`Channel::recv_to`].
    #[inline(never)]
    unsafe fn try_take(&self, out: *mut T, waiting: u64) -> Result<(), RecvStop> {
        if matches!(self.kind, Kind::Unbounded | Kind::Bounded { .. })
            && self.take_at_cursor(out, false)
        {
            self.release_permit();
            if waiting > 1 && !self.receivers.backlog.load(Ordering::Relaxed) {
                self.receivers.backlog.store(true, Ordering::Relaxed);
            }
            return Ok(());
        }
        if waiting == 0 {
            self.receivers.backlog.store(false, Ordering::Relaxed);
        }
        // (Its loop starts with the emptiness check.)
        self.recv_into(Mode::Try, out)
    }

    /// A blocking receive on an unbounded channel. One that finds its
    /// message waiting takes it in this small frame, not in `recv_into`'s
    /// (six saved registers, 440 bytes, the mode dispatch): callgrind, one
    /// thread, 100 sends then 100 receives, 240 -> 186 instructions per
    /// message with [`Channel::send_unbounded`]. It takes only a
    /// `BUFFERED` cell at the cursor and leaves anything else unchanged,
    /// for `recv` to start afresh with `await_sender`'s look, so a
    /// receiver that catches up with its senders still waits without an
    /// index. Out of line, so it grows no caller.
    ///
    /// Not for bounded channels: there a faster consumer catches up with
    /// its producer and then waits on every message (measured: one
    /// producer and one consumer on a `bounded(100)`, 30 -> 37 ns per
    /// message; see `take_buffered`), and a bounded channel's send, made
    /// as short, ran slower on one thread (19.7 -> 21.6 ns) for fewer
    /// instructions. Not under loom, which skips `await_sender` too: the
    /// models keep exploring the general path (the attempt itself is
    /// `try_recv`'s, which they check).
    #[inline(never)]
    fn recv_unbounded(&self, deadline: Option<Instant>) -> RecvResult<T> {
        let mut out = MaybeUninit::<T>::uninit();
        // (No permit to return: unbounded.)
        if self.take_at_cursor(out.as_mut_ptr(), true) {
            // SAFETY: `take_buffered` moved a message into `out`.
            return Ok(unsafe { out.assume_init() });
        }
        self.recv(Wait::Until(deadline))
    }

    /// [`Channel::take_buffered`] pinned on the receivers' cursor segment
    /// alone ([`Segments::pin_at_cursor`]); the caller returns a bounded
    /// channel's permit.
    #[inline(always)]
    fn take_at_cursor(&self, out: *mut T, wait_on_loss: bool) -> bool {
        let (guard, at) = self.cells.pin_at_cursor(Side::Pop, true);
        self.take_buffered((&guard, at), out, wait_on_loss)
    }

    /// The receive of a message already waiting in the next cell, when that
    /// cell lies in the segment at the receivers' cursor: the common case
    /// without the general loop's frame and states. Reads first, and takes
    /// the index (by CAS from the value read) only once its cell is seen
    /// `BUFFERED`, so `false` leaves nothing changed (a lost race first
    /// waits, as in `take_index`, unless `wait_on_loss` is false because a
    /// full attempt follows) and the general path starts afresh.
    ///
    /// A `try_recv` (and a select's try pass) makes this attempt first;
    /// a blocking receive makes it once `await_sender` has seen the cell
    /// filled, with that pin. Made first, before that look, the
    /// faster receive ran a one-producer one-consumer `bounded(100)` 35%
    /// slower (30 -> 42 ns per message, 7 alternating runs): the consumer
    /// caught up with the producer and waited on nearly every message.
    /// Where it is now, that shape ran 28 ns against 31.
    #[inline(always)]
    fn take_buffered(&self, pin: (&epoch::Guard, u64), out: *mut T, wait_on_loss: bool) -> bool {
        if !matches!(self.kind, Kind::Unbounded | Kind::Bounded { .. }) {
            return false;
        }
        // `at`: the cursor's id bound, read before the cursor (by
        // `pin_at_cursor`, or by the caller under a wider pin),
        // then R: if the bound is R's segment, so is the cursor (see
        // `Segments::cursor_id`), and the guard covers it.
        let (guard, at) = pin;
        let start = self.cells.cursor(Side::Pop, guard);
        let r = self.receivers.count.load(Ordering::Relaxed);
        // (A closing mark in R: `recv_into` looks at the close.)
        if r & CLOSED_BIT != 0 || r / SEGMENT_CELLS as u64 != at {
            return false;
        }
        debug_assert!(
            self.cells.protects(guard, at),
            "the pin does not keep the cursor"
        );
        // SAFETY: the cursor was loaded under `guard`, and is segment `at`.
        let seg = unsafe { &*start };
        debug_assert!(seg.holds(r), "the cursor is not at the index's segment");
        let cell = seg.cell(r);
        // Acquire: the sender's value is visible once BUFFERED is.
        if cell.state.load(Ordering::Acquire) != BUFFERED {
            return false;
        }
        let claimed = if wait_on_loss {
            claim_index(&self.receivers.count, r, Ordering::Relaxed)
        } else {
            claim_index_once(&self.receivers.count, r, Ordering::Relaxed)
        };
        if !claimed {
            return false;
        }
        // SAFETY: BUFFERED was read with Acquire, and index `r` is ours;
        // only its receiver moves a BUFFERED cell on, so the cell still
        // holds the value we saw.
        unsafe { Self::move_message(cell, out) };
        true
    }

    /// Moves the message out of `cell` into `out` and marks the cell done.
    /// The caller returns a bounded channel's permit
    /// ([`Channel::release_permit`]) once unpinned: every receive's pin is
    /// ranged, and serving a queued sender works on the permit queue,
    /// outside its cover (a pin nested there would become the wildcard).
    ///
    /// # Safety
    /// The caller holds the cell's receive index and read `BUFFERED` there
    /// with Acquire (so the sender's value is in the slot and visible);
    /// `out` is valid for a write.
    #[inline(always)]
    unsafe fn move_message(cell: &Cell<T>, out: *mut T) {
        // SAFETY: per the contract.
        unsafe { cell.read_into(out) };
        // Relaxed: nobody reads a DONE cell's slot.
        cell.state.store(DONE, Ordering::Relaxed);
    }

    /// Decides "empty" and "closed and drained" from reads alone.
    ///
    /// R first, then S: if S <= R when S is read, every message sent so
    /// far has a receiver, so the channel was empty at that instant. Go
    /// (seed 000) reads the closed flag between two emptiness checks
    /// because its flag and its count are two words; here the closed bit
    /// lives in S, so the one load of S sees "empty" and "closed" at the
    /// same instant, and a message sent before the close is always counted
    /// in it. With S equal to R, a select's duplex may wait in the cell
    /// they point at (see `duplex_waiting`).
    ///
    /// "Closed and drained" reads R once more, after the closed bit: R can
    /// go down (a receiver that times out hands its index back), and a send
    /// that took that index before the close, slow to deposit, would then
    /// deliver a message after we said there would be none (found in
    /// review; loom `closed_and_drained_is_final`). The closer marks R
    /// before it sets the bit in S, and a marked R never goes down, so an R
    /// read after the bit in S is final: every index below it has its
    /// receiver for good.
    #[inline]
    pub(super) fn nothing_to_receive(&self) -> Option<Fail> {
        self.receivable().err()
    }

    /// [`Channel::nothing_to_receive`], or else how many messages it
    /// counted (sends started and not yet received; 1 for a duplex, which
    /// the counts do not show).
    #[inline]
    fn receivable(&self) -> Result<u64, Fail> {
        // SeqCst, for `duplex_waiting` and for the second read of R (which
        // must come after the closer's mark in the single total order).
        let r = count(self.receivers.count.load(Ordering::SeqCst));
        let s = self.senders.load(Ordering::SeqCst);
        if s & CLOSED_BIT != 0 {
            // (A duplex's send half fails too, so D does not matter.)
            let r = count(self.receivers.count.load(Ordering::SeqCst));
            // Every message is below `closed_at` (failed sends after the
            // close still bump S).
            let sent = self.closed_at(s).unwrap_or(count(s));
            return if sent <= r {
                Err(Fail::Closed)
            } else {
                Ok(sent - r)
            };
        }
        if count(s) > r {
            Ok(count(s) - r)
        } else if self.duplex_waiting(s, r, Ordering::SeqCst) {
            Ok(1)
        } else {
            Err(Fail::WouldBlock)
        }
    }

    /// Receives in any mode into `out`, which holds the message after
    /// `Ok(())`. Values move by pointer (into `out` from the cell or from a
    /// parked sender's slot, or a partner writes `out` itself while we are
    /// parked), so the frame holds no `T`: a 1 MiB message does not cost
    /// megabytes of stack, here or in the drain of the last receiver's drop.
    pub(super) fn recv_into(&self, mode: Mode<'_>, out: *mut T) -> Result<(), RecvStop> {
        if std::mem::size_of::<T>() == 0 {
            if let Kind::Counting { count, .. } = &self.kind {
                // SAFETY: `out` is valid for a write (the caller's contract).
                return recv_counted(count, mode).map(|msg| unsafe { out.write(msg) });
            }
        }
        let look = match mode {
            // Not on a rendezvous channel: its sender waits for a receiver
            // anyway, and sees only one that took an index, so a receiver
            // waiting without one makes both wait (Go's producer/consumer
            // shape on `bounded(0)`: 25-38% faster without the wait).
            Mode::Park(deadline) if !matches!(self.kind, Kind::Rendezvous) => {
                self.await_sender(deadline)
            }
            // (Here, not inlined in `recv_to`: there it made the failing
            // `try_recv` in front of it a call again, 0.6 -> 1.2 ns.)
            // Pinned on the cursor's segment alone, as `try_take` (so that
            // loom, which skips that attempt, checks this one's protocol).
            Mode::Try => Some(self.cells.pin_at_cursor(Side::Pop, true)),
            _ => None,
        };
        // Both kinds of pin are ranged: the general path below pins afresh.
        let looked = look.is_some();
        if let Some((guard, at)) = look {
            if self.take_buffered((&guard, at), out, true) {
                drop(guard);
                self.release_permit();
                return Ok(());
            }
        }
        if !looked && !matches!(mode, Mode::Try) && self.may_adopt(Side::Pop) {
            if let Some(done) = self.recv_adopting(mode, out) {
                return done;
            }
        }
        'index: loop {
            if let Mode::Try = mode {
                if let Some(fail) = self.nothing_to_receive() {
                    return Err(RecvStop::Fail(fail));
                }
            }
            let (mut guard, start, taken) =
                self.cells
                    .pin_and_take(Side::Pop, &self.receivers.count, Ordering::Relaxed);
            let r = count(taken);
            // Past the close, no send takes this index: answer before the
            // walk to its cell, which would grow the list for good (a
            // closed channel polled with `recv` grew by a segment every 32
            // calls; found in review). The mark in R says when to look; it
            // comes before the bit in S, so S has the last word.
            if taken & CLOSED_BIT != 0
                && self
                    .closed_at(self.senders.load(Ordering::Acquire))
                    .is_some_and(|at| r >= at)
            {
                return Err(RecvStop::Fail(Fail::Closed));
            }
            let seg = self.cells.find(Side::Pop, start, r, &guard);
            let cell = seg.cell(r);
            let mut state = cell.state.load(Ordering::Acquire);
            loop {
                match state {
                    BUFFERED => {
                        // SAFETY: BUFFERED was read with Acquire, and
                        // index `r` is ours.
                        unsafe { Self::move_message(cell, out) };
                        // The permit once unpinned, as `take_buffered`'s
                        // callers return it: the pin is ranged.
                        drop(guard);
                        self.release_permit();
                        return Ok(());
                    }
                    SKIP_SEND => {
                        match self.land_on_skip(&cell.state, SKIP_SEND, &self.skipped_sends) {
                            Ok(()) => continue 'index,
                            Err(s) => state = s,
                        }
                    }
                    word if own_word(mode) == word => return Err(RecvStop::SelfMet),
                    word if cell::is_entry(word) && self.is_closed() => {
                        // A parked sender's send has not completed, and the
                        // channel is closed: it gets its message back.
                        close::close_counted(&cell.state, word, SKIP_SEND, &self.skipped_sends);
                        state = cell::wait_unclaimed(&cell.state);
                    }
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(&cell.state, word, Claimer::Receiver, SKIP_SEND) {
                            Claim::Won { waiter, slot, end } => {
                                // SAFETY: the decided sender's value is ours,
                                // and `out` is valid for a write.
                                unsafe { ptr::copy_nonoverlapping(slot as *const T, out, 1) };
                                cell::finish(&cell.state, end, waiter);
                                // (A parked sender: rendezvous, no permits.)
                                return Ok(());
                            }
                            Claim::Gone(s) | Claim::Moved(s) => state = s,
                        }
                    }
                    CLAIMED => state = cell::wait_unclaimed(&cell.state),
                    EMPTY => {
                        let s = self.senders.load(Ordering::Acquire);
                        if self.closed_at(s).is_some_and(|at| r >= at) {
                            // No send will ever take this index.
                            return Err(RecvStop::Fail(Fail::Closed));
                        }
                        match mode {
                            Mode::Try => {
                                // The sender took its index but has not
                                // written yet: wait a moment, then give up.
                                match give_up(&cell.state, SKIP_RECV, &self.skipped_recvs) {
                                    Ok(()) => continue 'index,
                                    Err(s) => state = s,
                                }
                            }
                            Mode::Park(deadline) => {
                                // A small message is written beside our
                                // waiter, so the sender's write and its
                                // wake-up move one cache line (written to
                                // `out` in the caller's frame, the
                                // rendezvous ping-pong ran 25-30% slower); a
                                // large one goes straight to `out` (no
                                // second copy on our stack).
                                let parked = with_entry(out, |entry, slot| {
                                    let parked = self.park_in(
                                        seg,
                                        &cell.state,
                                        entry,
                                        false,
                                        r,
                                        deadline,
                                        guard,
                                    );
                                    if parked.is_ok() && slot != out {
                                        // SAFETY: the sender wrote our slot
                                        // before waking us (and returned the
                                        // permit); `out` is writable.
                                        unsafe { ptr::copy_nonoverlapping(slot, out, 1) };
                                    }
                                    parked
                                });
                                match parked {
                                    Ok(()) => return Ok(()),
                                    Err(ParkFail::Lost(s, g)) => {
                                        guard = g;
                                        state = s;
                                    }
                                    Err(ParkFail::Fail(fail)) => return Err(RecvStop::Fail(fail)),
                                }
                            }
                            Mode::Register { entry, .. } => {
                                match self.publish(seg, &cell.state, entry, false, r, guard) {
                                    Ok(reg) => return Err(RecvStop::Registered(reg)),
                                    Err(ParkFail::Lost(s, g)) => {
                                        guard = g;
                                        state = s;
                                    }
                                    Err(ParkFail::Fail(fail)) => return Err(RecvStop::Fail(fail)),
                                }
                            }
                        }
                    }
                    other => unreachable!("recv found cell in state {other:?}"),
                }
            }
        }
    }

    /// Before a blocking receive takes its index: if the cell of the next
    /// receive is still empty, waits a little (spin, then yield; never
    /// parks) for its sender, holding no index. Returns the pin when it
    /// did not have to yield, for the receive to go on with (a second pin
    /// would cost a second fence).
    ///
    /// An index taken on an empty channel belongs to one particular future
    /// send, so receivers that wait in cells are served in the order they
    /// arrived: with more threads than cores, every message then waits for
    /// its receiver's next time slice (a context switch per message,
    /// measured). A receiver that waits without an index lets whichever
    /// receiver is running take the next message. Read only: the fast
    /// paths are unchanged, and so is the protocol (loom skips the wait).
    fn await_sender(&self, deadline: Option<Instant>) -> Option<(epoch::Guard, u64)> {
        if cfg!(loom) {
            return None;
        }
        // Pinned on the cursor's segment alone, where the next cell lies in
        // it (31 receives in 32), so that a receiver preempted while it
        // spins holds back that one segment; else from the cursor on.
        // Relaxed (all loads here): a hint; the fetch-and-add that follows
        // decides. Cursor first: it must not be past the index read next.
        let (guard, at) = self.cells.pin_at_cursor(Side::Pop, true);
        let start = self.cells.cursor(Side::Pop, &guard);
        let r = count(self.receivers.count.load(Ordering::Relaxed));
        let (guard, narrow, r, seg) = if r / SEGMENT_CELLS as u64 == at {
            // SAFETY: the cursor is segment `at` (see `Segments::cursor_id`),
            // which `guard` covers.
            (guard, true, r, Some(unsafe { &*start }))
        } else {
            drop(guard);
            let (guard, _) = self.cells.pin_at_cursor(Side::Pop, false);
            let start = self.cells.cursor(Side::Pop, &guard);
            let r = count(self.receivers.count.load(Ordering::Relaxed));
            let seg = self.cells.peek(start, r, &guard);
            (guard, false, r, seg)
        };
        // Watch the cell, not `senders`: its sender writes it once anyway,
        // while a read of `senders` per receive pulls that line away from
        // the next send's fetch-and-add (measured, one producer and one
        // consumer on an unbounded channel: 150 ns per message reading
        // `senders` first, 60 ns without). `closed_at` is written only by a close.
        let Some(seg) = seg else {
            // The list does not reach the cell yet (an empty channel at a
            // segment boundary): watch the count instead.
            drop(guard);
            linger(deadline, || {
                let s = self.senders.load(Ordering::Relaxed);
                count(s) > r || s & CLOSED_BIT != 0
            });
            return None;
        };
        let state = &seg.cell(r).state;
        // A close under way is enough to stop waiting (the receive then
        // looks properly).
        let ready = || {
            state.load(Ordering::Relaxed) != EMPTY || self.closed_at.load(Ordering::Relaxed) != 0
        };
        if ready() || spin(ready) {
            // The cursor's id bound for `take_buffered`: the one this pin
            // covers alone, or any read under the wider pin.
            let at = if narrow {
                at
            } else {
                self.cells.cursor_id(Side::Pop)
            };
            return Some((guard, at));
        }
        // Past a brief spin, a reference, not the pin, keeps the segment
        // alive: a pin held through a time slice would stall reclamation.
        seg.acquire_ref();
        drop(guard);
        yield_until(deadline, ready);
        // SAFETY: our reference, taken above.
        unsafe { Segment::release_ref(seg) };
        None
    }

    /// After a receive of a buffered value, or a hand-off to a parked
    /// receiver: a bounded channel's permit goes back to the senders.
    #[inline]
    pub(super) fn release_permit(&self) {
        if let Kind::Bounded { permits, .. } = &self.kind {
            permits.release();
        }
    }
}
