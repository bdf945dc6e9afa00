//! A select's send and receive cases on one rendezvous channel: registered
//! as a pair, so that the select never meets itself, and counted in
//! `duplexes` while they wait, for the non-blocking operations that must
//! meet them.

use super::park::release_segment;
use super::*;

impl<T> Channel<T> {
    /// Whether a select's duplex may wait in the cell that both counts,
    /// `s` and `r` as just read, point at: a `try_*` must then take an
    /// index to meet it. Reads D only when the counts are equal, so other
    /// channels (whose D is always zero) pay a branch.
    ///
    /// Why D is read last, all in SeqCst: a select announces itself in D
    /// before it reads the counts and places its duplex, so if our read of
    /// D comes before that announcement, so does our read of the counts,
    /// and the duplex arrives after the instant our answer is taken at.
    /// D drops only once the duplex has left its cell.
    #[inline]
    pub(super) fn duplex_waiting(&self, s: u64, r: u64, order: Ordering) -> bool {
        count(s) == r && self.duplexes.load(order) != 0
    }

    /// A select's duplex on this channel has left its cell (decided,
    /// withdrawn, or closed): see `duplexes`.
    pub(crate) fn duplex_left(&self) {
        // SeqCst: after the duplex left, in the order `duplex_waiting`
        // argues in.
        self.duplexes.fetch_sub(1, Ordering::SeqCst);
    }

    /// Registers a select's receive case (`pair.0[0]`) and send case
    /// (`pair.0[1]`, its value already in its slot) on this rendezvous
    /// channel, completing one of them if it is ready. Registrations left in
    /// `regs` by an earlier call (still live) are kept.
    ///
    /// Taking a receive index and a send index when the two counters are
    /// equal would land both in one cell, where the select meets itself; so
    /// then the pair goes in that cell as a duplex, taking neither index.
    /// Otherwise the side whose counter is behind registers first: its index
    /// belongs to a partner already under way, so the other side's index
    /// (taken next) cannot be the same.
    pub(crate) fn register_pair(&self, pair: &Duplex, regs: &mut PairRegs) -> PairStop<T> {
        debug_assert!(matches!(self.kind, Kind::Rendezvous));
        let recv_word = cell::entry_word(&pair.0[0], false);
        let send_word = cell::entry_word(&pair.0[1], true);
        loop {
            if regs.duplex.is_some() || (regs.recv.is_some() && regs.send.is_some()) {
                return PairStop::Registered;
            }
            // The send cursor before the counts, as an operation loads it
            // before its fetch-and-add: a duplex's walk to its cell must
            // start at or before the cell's segment. (Loaded after the
            // counts, the cursor could already be a segment past them, and
            // `find` would return that segment: the duplex would land a
            // whole segment ahead, where no operation reaches it for a
            // long time. Seen as two selects parked for good in
            // `matching_with_leftover`, duplexes at 40 and 52, counters 34.)
            let mut guard = Some(self.cells.pin());
            let start = self.cells.cursor(Side::Push, guard.as_ref().unwrap());
            let s = self.senders.load(Ordering::Acquire);
            if s & CLOSED_BIT != 0 {
                // The send case is ready: it fails.
                return PairStop::Sent(Err(Fail::Closed));
            }
            let r = count(self.receivers.count.load(Ordering::Acquire));
            let register_recv = match (regs.recv.is_some(), regs.send.is_some()) {
                (false, false) if count(s) == r => {
                    // Announced before the counts are read again and the
                    // duplex placed (see `duplex_waiting`); withdrawn as
                    // soon as it is clear that no duplex stays there.
                    self.duplexes.fetch_add(1, Ordering::SeqCst);
                    let again = self.senders.load(Ordering::SeqCst);
                    if again != s || count(self.receivers.count.load(Ordering::SeqCst)) != r {
                        self.duplex_left();
                        continue;
                    }
                    match self.place_duplex(pair, r, start, guard.take().unwrap()) {
                        Ok(Some(reg)) => {
                            regs.duplex = Some(reg);
                            continue;
                        }
                        Ok(None) => {
                            self.duplex_left();
                            continue;
                        }
                        // The cell holds another select's duplex: meet it as a
                        // sender.
                        Err(()) => {
                            self.duplex_left();
                            false
                        }
                    }
                }
                (false, false) => count(s) > r,
                (false, true) => true,
                (true, _) => false,
            };
            drop(guard); // (the operations below pin for themselves)
            if register_recv {
                let mode = Mode::Register {
                    entry: &pair.0[0],
                    own: send_word,
                };
                match self.recv_in(mode) {
                    Ok(msg) => return PairStop::Received(Ok(msg)),
                    Err(RecvStop::Fail(fail)) => return PairStop::Received(Err(fail)),
                    Err(RecvStop::Registered(reg)) => regs.recv = Some(reg),
                    Err(RecvStop::SelfMet) => {
                        // Both indices of that cell are ours: nobody else
                        // will visit it. Take the send entry back, go again.
                        // (A rendezvous channel hands no index back, so
                        // the cell's send index stays taken too.)
                        if let Some(reg) = regs.send.take() {
                            reg.cancel_met();
                        }
                    }
                }
            } else {
                let mode = Mode::Register {
                    entry: &pair.0[1],
                    own: recv_word,
                };
                // SAFETY: the send slot holds the case's value, which stays
                // there unless the send succeeds or registers.
                match unsafe { self.send_from(pair.0[1].slot as *mut T, mode) } {
                    Ok(()) => return PairStop::Sent(Ok(())),
                    Err(SendStop::Fail(fail)) => return PairStop::Sent(Err(fail)),
                    Err(SendStop::Registered(reg)) => regs.send = Some(reg),
                    Err(SendStop::SelfMet) => {
                        if let Some(reg) = regs.recv.take() {
                            reg.cancel_met();
                        }
                    }
                }
            }
        }
    }

    /// Parks `pair` as a duplex in cell `index`, which both counters pointed
    /// at when read after `start`, the send cursor (loaded under `guard`).
    /// `Ok(None)`: the cell is taken or the channel closed; look again.
    /// `Err(())`: another select's duplex is there.
    fn place_duplex(
        &self,
        pair: &Duplex,
        index: u64,
        start: *const Segment<Cell<T>>,
        guard: epoch::Guard,
    ) -> Result<Option<Registration>, ()> {
        let seg = self.cells.find(Side::Push, start, index, &guard);
        let state = &seg.cell(index).state;
        let word = cell::duplex_word(pair);
        seg.acquire_ref();
        // Release publishes both entries and the send value.
        if let Err(now) = state.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Relaxed)
        {
            // SAFETY: our reference, taken above; the guard still pins `seg`.
            unsafe { Segment::release_ref(seg) };
            return if cell::is_entry(now)
                && now.addr() & DUPLEX_TAG != 0
                && now.addr() & SENDER_TAG == 0
            {
                Err(())
            } else {
                Ok(None)
            };
        }
        drop(guard);
        // SAFETY: as in `publish`. No skip count: a duplex took no index.
        let reg = unsafe {
            InCell::new(
                state,
                word,
                EMPTY,
                None,
                None,
                seg as *const Segment<Cell<T>> as *const (),
                release_segment::<T>,
            )
        };
        // Dekker with `close`, which visits the cell at its count (where a
        // duplex may be) as well as those below.
        fence(Ordering::SeqCst);
        if self.is_closed() {
            reg.cancel();
            return Ok(None);
        }
        Ok(Some(reg.into()))
    }
}
