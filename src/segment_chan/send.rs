//! Sends: the unbounded deposit, the bounded deposit behind a permit, and
//! the rendezvous send that meets a parked receiver or parks itself.

use super::counted::send_counted;
use super::park::give_up;
use super::*;

impl<T> Channel<T> {
    /// Sends `msg`, or gives it back with the reason.
    ///
    /// Every layer below takes the message by pointer, from the one place
    /// this frame keeps it, and copies it once, into its cell or its
    /// receiver's slot: passed by value through each layer (and returned by
    /// value on failure), a 1 MiB message needed 12 MiB of stack.
    #[inline]
    pub(crate) fn send(&self, msg: T, wait: Wait) -> Result<(), (T, Fail)> {
        let mut msg = MaybeUninit::new(msg);
        // SAFETY: `msg` holds our value and is used by nothing else during
        // the call; `Mode::Try` and `Mode::Park` never register.
        match unsafe { self.send_from(msg.as_mut_ptr(), wait.into()) } {
            Ok(()) => Ok(()),
            // SAFETY: a failed send leaves the value where it was.
            Err(SendStop::Fail(fail)) => Err((unsafe { msg.assume_init_read() }, fail)),
            Err(_) => unreachable!("only Mode::Register registers"),
        }
    }

    /// A timed receive gave up: answers the message a `try_recv` would
    /// take now, `Closed` on a closed and drained channel, or `Timeout`.
    ///
    /// Reads alone cannot tell. A receive parked at its index behind a
    /// send still on its way there (the send took the index, has not
    /// deposited) gives up while a later message, perhaps sent before the
    /// receive began, sits in the channel; closed or not, `try_recv` would
    /// pass the slow send's cell and take it (found in review, twice; loom
    /// `timed_recv_gives_up_beside_a_sent_message` and
    /// `timed_recv_on_a_closed_channel_gives_up_behind_a_slow_send`). So it
    /// makes that try, whose read-only check answers an empty channel
    /// from the counts. The try also answers a close that came before the
    /// deadline but has not reached the waiter (a closer sets its bit,
    /// then fails the waiters it finds).
    ///
    /// Not on an open rendezvous channel: there a try every time (or
    /// whenever the counts show a send beyond the receivers, which a
    /// select's duplex makes them do) took `duplex_stays_reachable_after_timeouts`
    /// from 23 s to over ten minutes of loom. So a timed receive on a
    /// rendezvous channel that gives up behind a send still on its way can
    /// report `Timeout` while another sender waits at a later index (the
    /// send parked there is served by the next receive).
    ///
    /// Called by the public timed operations only: settled deeper, on the
    /// paths `try_send` and `try_recv` share, it made an empty `try_recv`
    /// a call again (1.1 -> 1.9-2.0 ns).
    #[cold]
    #[inline(never)]
    pub(crate) fn recv_after_timeout(&self) -> RecvResult<T> {
        if matches!(self.kind, Kind::Rendezvous) && !self.is_closed() {
            return Err(Fail::Timeout);
        }
        self.recv(Wait::Try).map_err(|fail| match fail {
            Fail::Closed => Fail::Closed,
            _ => Fail::Timeout,
        })
    }

    /// Sends the value at `msg` in any mode. A select's send case registers
    /// here: on a bounded channel in the permit queue, on a rendezvous
    /// channel in a cell.
    ///
    /// # Safety
    /// `msg` points to a value of `T` that the caller owns and leaves alone
    /// until this returns; with `Mode::Register`, `msg` is the entry's slot.
    /// On `Ok` and on `SendStop::Registered` the value has moved out (the
    /// caller must not use or drop it; a registered value is handed over
    /// from the slot later); on any other `Err` it is still the caller's.
    #[inline]
    pub(crate) unsafe fn send_from(&self, msg: *mut T, mode: Mode<'_>) -> Result<(), SendStop> {
        if let Mode::Register { entry, .. } = mode {
            debug_assert_eq!(
                entry.slot, msg as *mut (),
                "a registering send sends from its slot"
            );
        }
        // A zero-sized message on a count: one CAS, inlined here, in every
        // mode (each would make this attempt first); `send_counted` has the
        // rest.
        if std::mem::size_of::<T>() == 0 {
            if let Kind::Counting { count, .. } = &self.kind {
                if count.send_fast() {
                    // The value moved into the count: the caller forgets it
                    // (`Ok`), and a receiver conjures its own.
                    return Ok(());
                }
            }
        }
        // As for `try_recv` (see `recv_in`): a failing `try_send` is a few
        // loads inlined in the caller, not a call into the send proper.
        if let Mode::Try = mode {
            if let Some(fail) = self.nothing_to_send() {
                return Err(SendStop::Fail(fail));
            }
        }
        // A send on an unbounded channel, in any mode (it never waits and
        // never registers), skips `send_in`'s frame (see `send_unbounded`).
        if let Kind::Unbounded = &self.kind {
            // SAFETY: our caller's contract.
            return unsafe { self.send_unbounded(msg) };
        }
        // SAFETY: our caller's contract.
        unsafe { self.send_in(msg, mode) }
    }

    /// Decides "full" and "closed" for a `try_send` from reads alone, where
    /// that is cheap: a rendezvous channel with no receiver waiting (the
    /// reads `send_rendezvous` makes first), a bounded one with no permit
    /// free (the reads of a failing `Semaphore::try_acquire`, in its order:
    /// the permits, what receivers returned, then the closed bit). `None`:
    /// ask the send proper.
    #[inline]
    fn nothing_to_send(&self) -> Option<Fail> {
        match &self.kind {
            Kind::Rendezvous => {
                // S, then R: if no receiver has started beyond the senders
                // when R is read, none was waiting at that instant; nor a
                // duplex, if none was announced when D is read next.
                // (SeqCst, for `duplex_waiting`; plain loads on x86-64 and
                // the same instruction as Acquire on AArch64.)
                let s = self.senders.load(Ordering::SeqCst);
                if s & CLOSED_BIT != 0 {
                    return Some(Fail::Closed);
                }
                let r = count(self.receivers.count.load(Ordering::SeqCst));
                (count(s) >= r && !self.duplex_waiting(s, r, Ordering::SeqCst))
                    .then_some(Fail::WouldBlock)
            }
            Kind::Bounded { permits, .. } => permits
                .is_exhausted()
                .then(|| Fail::closed_or_blocked(self.is_closed())),
            Kind::Unbounded | Kind::Counting { .. } => None,
        }
    }

    /// [`Channel::send_from`] past its read-only check.
    ///
    /// # Safety
    /// As [`Channel::send_from`].
    unsafe fn send_in(&self, msg: *mut T, mode: Mode<'_>) -> Result<(), SendStop> {
        // SAFETY (all arms): `msg` as this function's contract says.
        match &self.kind {
            // (`send_from` sends on unbounded channels itself.)
            Kind::Unbounded => unsafe { self.send_unbounded(msg) },
            Kind::Rendezvous => unsafe { self.send_rendezvous(msg, mode) },
            Kind::Counting { count, .. } => unsafe { send_counted(count, msg, mode) },
            Kind::Bounded { permits, .. } => {
                match permits.acquire(mode, || self.is_closed()) {
                    Ok(()) => {}
                    Err(RecvStop::Fail(fail)) => return Err(SendStop::Fail(fail)),
                    // The value waits in the select's slot (`msg`) until a
                    // partner decides the case (it then only hands us a
                    // permit; the value stays put).
                    Err(RecvStop::Registered(reg)) => return Err(SendStop::Registered(reg)),
                    Err(RecvStop::SelfMet) => unreachable!("permits have no receive side"),
                }
                unsafe { self.send_permitted(msg) }.map_err(SendStop::Fail)
            }
        }
    }

    /// A send on an unbounded channel: [`Channel::send_buffered`]
    /// in a small frame of its own, not `send_in`'s (whose rendezvous and
    /// count arms need six saved registers and a 360-byte frame), and out
    /// of line, so that it grows no caller (see [`Channel::recv_unbounded`]
    /// for what it saves, and why bounded channels keep `send_in`).
    ///
    /// # Safety
    /// As [`Channel::send_from`].
    #[inline(never)]
    unsafe fn send_unbounded(&self, msg: *mut T) -> Result<(), SendStop> {
        // SAFETY: per the contract.
        unsafe { self.send_buffered(msg) }.map_err(SendStop::Fail)
    }

    /// Deposits the value at `msg`, for which a permit is held (bounded
    /// channels): it cannot block, and a failed deposit returns the permit.
    ///
    /// # Safety
    /// As [`Channel::send_from`]: on `Ok` the value has moved out, on `Err`
    /// it is still the caller's.
    pub(crate) unsafe fn send_permitted(&self, msg: *mut T) -> Result<(), Fail> {
        let Kind::Bounded { permits, .. } = &self.kind else {
            unreachable!("permits exist only on bounded channels")
        };
        // SAFETY: per the contract.
        unsafe { self.send_buffered(msg) }.inspect_err(|_| permits.release())
    }

    /// Deposits the value at `msg` in the next cell, or hands it to the
    /// receiver parked there. Never blocks.
    ///
    /// # Safety
    /// As [`Channel::send_permitted`].
    #[inline(always)]
    unsafe fn send_buffered(&self, msg: *mut T) -> Result<(), Fail> {
        // SAFETY (both): per the contract.
        match unsafe { self.deposit_at_cursor(msg) } {
            Some(sent) => sent,
            None => unsafe { self.send_buffered_walk(msg) },
        }
    }

    /// The common case of [`Channel::send_buffered`], inlined in it: the
    /// next index lies in the segment at the senders' cursor (31 sends in
    /// 32). Takes the index by CAS from the value read, so `None` (the
    /// index is in another segment, the channel is closed, or another send
    /// took it first) leaves nothing changed. Once the index is ours, its
    /// cell is settled as the full path settles it (a receiver may be
    /// parked there, or may have given it up).
    ///
    /// Pinned on the cursor's segment alone ([`Segments::pin_at_cursor`]):
    /// a sender preempted here keeps that one segment from being freed,
    /// not every segment the channel retires meanwhile. The segment is
    /// known without reading it: its id is the bound the pin read, and the
    /// index's segment (see [`Segments::cursor_id`]); otherwise the
    /// attempt declines without touching it.
    ///
    /// # Safety
    /// As [`Channel::send_permitted`].
    #[inline(always)]
    unsafe fn deposit_at_cursor(&self, msg: *mut T) -> Option<Result<(), Fail>> {
        let (guard, at) = self.cells.pin_at_cursor(Side::Push, true);
        let start = self.cells.cursor(Side::Push, &guard);
        let s = self.senders.load(Ordering::Relaxed);
        if s & CLOSED_BIT != 0 || s / SEGMENT_CELLS as u64 != at {
            return None;
        }
        debug_assert!(
            self.cells.protects(&guard, at),
            "the pin does not keep the cursor"
        );
        // SAFETY: the cursor was loaded under `guard`, and is the segment
        // `at`, which `guard` covers.
        let seg = unsafe { &*start };
        debug_assert!(seg.holds(s), "the cursor is not at the index's segment");
        // Relaxed, as in `send_buffered_walk`.
        if !claim_index(&self.senders, s, Ordering::Relaxed) {
            return None;
        }
        let cell = seg.cell(s);
        // SAFETY: index `s` is ours, so is the slot; `msg` is readable.
        unsafe { cell.write_from(msg) };
        // Release: the value is visible to whoever sees BUFFERED.
        match cell
            .state
            .compare_exchange(EMPTY, BUFFERED, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => Some(Ok(())),
            // SAFETY: as above; the value at `msg` is still the caller's.
            Err(state) => Some(unsafe { self.settle_taken(cell, state, msg) }),
        }
    }

    /// [`Channel::deposit_at_cursor`] found its cell in `state`: settles it
    /// (still pinned), or sends afresh if the cell was a skip.
    ///
    /// # Safety
    /// As [`Channel::send_permitted`].
    #[cold]
    #[inline(never)]
    unsafe fn settle_taken(&self, cell: &Cell<T>, state: Word, msg: *mut T) -> Result<(), Fail> {
        // SAFETY (both): per the contract.
        if unsafe { self.settle_deposit(cell, state, msg) } {
            Ok(())
        } else {
            unsafe { self.send_buffered_walk(msg) }
        }
    }

    /// [`Channel::send_buffered`] when the first attempt could not be
    /// made: takes an index, walks (and grows) the list to its cell.
    ///
    /// # Safety
    /// As [`Channel::send_permitted`].
    #[inline(never)]
    unsafe fn send_buffered_walk(&self, msg: *mut T) -> Result<(), Fail> {
        loop {
            // Relaxed: the cell CAS carries the data; the closed bit is read
            // from this RMW, which is ordered with the closer's `fetch_or`.
            let (guard, start, s) =
                self.cells
                    .pin_and_take(Side::Push, &self.senders, Ordering::Relaxed);
            if s & CLOSED_BIT != 0 {
                return Err(Fail::Closed);
            }
            let cell = self.cells.find(Side::Push, start, s, &guard).cell(s);
            // A copy: until a receiver can see it, the value is still the
            // one at `msg`, and a copy left in a skipped cell is never read.
            // SAFETY: index `s` is ours, so is the slot; `msg` is readable.
            unsafe { cell.write_from(msg) };
            // SAFETY: per the contract.
            if unsafe { self.settle_deposit(cell, EMPTY, msg) } {
                return Ok(());
            }
        }
    }

    /// Settles the cell of a send index we hold, its copy of the value
    /// written, last seen in `state`: deposits the value, or hands it to
    /// the receiver parked there. `false`: the cell was a receiver's skip
    /// (now passed), and the value is still the caller's, for a new index.
    ///
    /// # Safety
    /// As [`Channel::send_permitted`]; `cell` is the cell of our index,
    /// and reachable (we are pinned, or hold its index).
    unsafe fn settle_deposit(&self, cell: &Cell<T>, mut state: Word, msg: *mut T) -> bool {
        loop {
            match state {
                // Release: the value is visible to whoever sees BUFFERED.
                EMPTY => match cell.state.compare_exchange(
                    EMPTY,
                    BUFFERED,
                    Ordering::Release,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return true,
                    Err(s) => state = s,
                },
                SKIP_RECV => match self.land_on_skip(&cell.state, SKIP_RECV, &self.skipped_recvs) {
                    Ok(()) => return false,
                    Err(s) => state = s,
                },
                word if cell::is_entry(word) => {
                    match cell::claim_waiter(&cell.state, word, Claimer::Sender, SKIP_RECV) {
                        Claim::Won { waiter, slot, end } => {
                            // SAFETY: the value at `msg` is ours to move,
                            // and the decided waiter's slot is ours to fill.
                            unsafe { ptr::copy_nonoverlapping(msg, slot as *mut T, 1) };
                            cell::finish(&cell.state, end, waiter);
                            // The receive completed with the hand-off:
                            // its permit goes back now, not when the
                            // receiver next runs (which, with more
                            // threads than cores, can be a time slice
                            // later, throttling every sender meanwhile).
                            self.release_permit();
                            return true;
                        }
                        Claim::Gone(s) | Claim::Moved(s) => state = s,
                    }
                }
                // The receiver of this index is giving up (it may hand
                // the index back and leave the cell empty).
                CLAIMED => state = cell::wait_unclaimed(&cell.state),
                other => unreachable!("send found cell in state {other:?}"),
            }
        }
    }

    /// # Safety
    /// As [`Channel::send_from`].
    unsafe fn send_rendezvous(&self, msg: *mut T, mode: Mode<'_>) -> Result<(), SendStop> {
        // `send_from` has made the read-only check once already.
        if !matches!(mode, Mode::Try) && self.may_adopt(Side::Push) {
            // SAFETY: our caller's contract.
            if let Some(done) = unsafe { self.send_adopting(msg, mode) } {
                return done;
            }
        }
        let mut skipped = false;
        'index: loop {
            // Again after a skipped cell: the receiver we counted on may be
            // the one that gave up.
            if let (Mode::Try, true) = (mode, skipped) {
                if let Some(fail) = self.nothing_to_send() {
                    return Err(SendStop::Fail(fail));
                }
            }
            skipped = true;
            let (mut guard, start, s) =
                self.cells
                    .pin_and_take(Side::Push, &self.senders, Ordering::Relaxed);
            if s & CLOSED_BIT != 0 {
                return Err(SendStop::Fail(Fail::Closed));
            }
            let seg = self.cells.find(Side::Push, start, s, &guard);
            let cell = seg.cell(s);
            let mut state = cell.state.load(Ordering::Acquire);
            loop {
                match state {
                    SKIP_RECV => {
                        match self.land_on_skip(&cell.state, SKIP_RECV, &self.skipped_recvs) {
                            Ok(()) => continue 'index,
                            Err(s) => state = s,
                        }
                    }
                    word if own_word(mode) == word => return Err(SendStop::SelfMet),
                    word if cell::is_entry(word) && self.is_closed() => {
                        // Our index came before the close, but a rendezvous
                        // send completes only when it meets its receiver,
                        // and that would now be after the close: the send
                        // fails instead, and so does the receiver parked
                        // here (no send can reach it any more), as a
                        // receiver that finds a parked sender after the
                        // close fails it (found in review: a receive begun
                        // after `close` returned got a message).
                        // The cell then holds a receiver's skip, which we
                        // pass as any (our next index reports `Closed`),
                        // or, where a select's duplex was failed (by us or
                        // by the closer), is `EMPTY`: our index is below
                        // `closed_at`, so a receiver may still come to it,
                        // and we settle it as any send does (a parked or
                        // registering send withdraws on seeing the close,
                        // a try gives the index up), leaving a skip for
                        // that receiver. Returning at once left it to park
                        // for good (found in review; loom
                        // `send_fails_a_duplex_after_close_then_recv`).
                        close::close_counted(&cell.state, word, SKIP_RECV, &self.skipped_recvs);
                        state = cell::wait_unclaimed(&cell.state);
                    }
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(&cell.state, word, Claimer::Sender, SKIP_RECV) {
                            Claim::Won { waiter, slot, end } => {
                                // SAFETY: the value at `msg` is ours to move,
                                // and the decided waiter's slot is ours to fill.
                                unsafe { ptr::copy_nonoverlapping(msg, slot as *mut T, 1) };
                                cell::finish(&cell.state, end, waiter);
                                return Ok(());
                            }
                            Claim::Gone(s) | Claim::Moved(s) => state = s,
                        }
                    }
                    EMPTY => match mode {
                        Mode::Try => {
                            // The receiver took its index but has not parked
                            // yet: give it a moment, then give the index up.
                            match give_up(&cell.state, SKIP_SEND, &self.skipped_sends) {
                                Ok(()) => continue 'index,
                                Err(s) => state = s,
                            }
                        }
                        Mode::Park(deadline) => {
                            // A small message waits in a copy beside our
                            // waiter, so the receiver's read and its wake-up
                            // move one cache line (as in `recv_into`); a
                            // large one waits where the caller keeps it. A
                            // copy not taken is never read: the value at
                            // `msg` stays the caller's until one is.
                            let parked = with_entry(msg, |entry, slot| {
                                if slot != msg {
                                    // SAFETY: `msg` is readable; the slot is ours.
                                    unsafe { ptr::copy_nonoverlapping(msg, slot, 1) };
                                }
                                self.park_in(seg, &cell.state, entry, true, s, deadline, guard)
                            });
                            match parked {
                                // The receiver took the value out of `slot`.
                                Ok(()) => return Ok(()),
                                // Never visible: the value is still ours.
                                Err(ParkFail::Lost(s, g)) => {
                                    guard = g;
                                    state = s;
                                }
                                // Not taken: decided closed, or withdrawn.
                                Err(ParkFail::Fail(fail)) => return Err(SendStop::Fail(fail)),
                            }
                        }
                        // The value is already in the select's slot (`msg`).
                        Mode::Register { entry, .. } => {
                            match self.publish(seg, &cell.state, entry, true, s, guard) {
                                Ok(reg) => return Err(SendStop::Registered(reg)),
                                // Never visible: the value is still ours.
                                Err(ParkFail::Lost(s, g)) => {
                                    guard = g;
                                    state = s;
                                }
                                // Withdrawn before anyone took it.
                                Err(ParkFail::Fail(fail)) => return Err(SendStop::Fail(fail)),
                            }
                        }
                    },
                    CLAIMED => state = cell::wait_unclaimed(&cell.state),
                    other => unreachable!("rendezvous send found cell in state {other:?}"),
                }
            }
        }
    }
}
