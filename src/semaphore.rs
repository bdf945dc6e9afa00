//! The permit counter in front of a bounded channel's sends.
//!
//! `bounded(n)` for `n >= 1` is the unbounded cell channel behind a counting
//! semaphore of `n` permits: a sender takes a permit, then deposits its value
//! without ever blocking; a receiver returns the permit after taking a value.
//! So at most `n` sends are complete and not yet received.
//!
//! Why not kotlinx's `expandBuffer` (the bound kept inside the cell array):
//! here a blocked sender waits holding its own message, so close hands it back
//! by waking the waiter, nothing is ever stranded in a cell, and `try_send`
//! on a full channel is two loads.
//!
//! The waiter queue is the semaphore of Kotlin's `SemaphoreImpl`: a negative
//! `permits` counts waiters; an acquirer that finds none takes a cell by
//! fetch-and-add on `enq` and parks there; a releaser that finds waiters takes
//! a cell by fetch-and-add on `deq` and hands its permit to whoever is (or
//! will be) in it.
//!
//! **Giving up.** A waiter that gives up (a timeout, a select's other case)
//! takes its debt back out of `permits` if they are still negative (no
//! releaser has counted on it yet), then hands its index back to `enq` if
//! it is still the last one taken (the cell is left `EMPTY`), or leaves the
//! cell `WITHDRAWN`, which releasers and the quitter itself pass without
//! paying (`pass_withdrawn`, marking it `DONE` first). A waiter that hands
//! its index back also hands back the withdrawn cells just below it
//! (`give_back_withdrawn`), and a waiter about to queue first takes over a
//! withdrawn cell of the queue's last segment if there is one
//! (`reuse_withdrawn`), so waiters timing out behind one blocked for
//! good leave no trail, even when they keep taking indices above each
//! other's. Only if every debt is already counted on does
//! it leave a skip, which the releaser on its way pays by releasing again.
//! Without this, senders timing out on a full channel that nobody drains
//! would leave a trail of skipped cells (one segment per 32 attempts) for
//! the next release to walk. See `InCell::cancel` for why any debt
//! may be taken back.
//!
//! **Lazy returns.** If receivers added their permits to `permits` directly,
//! that word would be written by both sides on every message and its cache
//! line would cross between the sender's and the receiver's cores twice per
//! message (measured: two thirds of a one-producer `bounded(1024)` run's time
//! went to those two instructions). So a receiver adds its permit to
//! `returned`, a word only receivers write on the fast path, and moves a
//! batch into `permits` when one is complete; senders that run short collect
//! whatever is there. A receiver must not leave a permit there while a
//! sender waits for one, so `returned` also counts waiters' announcements
//! (its high bits): a waiter announces itself with a fetch-and-add on it and
//! collects any permits that add finds; a receiver's own fetch-and-add finds
//! any announcement made before it and collects for the waiter. Both are
//! read-modify-writes of one word, so one of them comes second and sees the
//! other: no fence. The announcements are cleared by a collector that finds
//! every queued waiter served (`enq == deq`), with a CAS that fails if
//! anyone announced since it looked. A collect moves the count into a
//! transit share of the same word, adds it to `permits`, and only then
//! takes it out of transit, so a reader that looks at `returned` before
//! `permits` misses no free permit (`is_exhausted`).

use crate::cell::{
    self, AtomicWord, Claim, Claimer, InCell, Word, BUFFERED, CLAIMED, DONE, EMPTY, WITHDRAWN,
};
use crate::epoch::{self, Domain};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::loom::{Backoff, CachePadded};
use crate::segment::{
    give_back, may_give_back, LazySegments, Segment, SegmentCell, Segments, Side, SEGMENT_CELLS,
};
use crate::segment_chan::{Mode, RecvStop};
use crate::waiter::{linger, Entry, Outcome, Parked};
use crate::Fail;
use std::ptr;
use std::time::Instant;

/// A semaphore cell holds only a state (`BUFFERED`: a permit was left here
/// before its waiter arrived; `SKIP_SEND`: the waiter gave up still owing
/// its permit; `WITHDRAWN`: it gave up and took its debt back).
pub(crate) struct WaitCell {
    state: AtomicWord,
    // Keeps the layout of a cell; no payload.
    _unit: UnsafeCell<()>,
}

impl SegmentCell for WaitCell {
    /// The permit queue pins in its channel's domain.
    const MAY_SHARE_DOMAIN: bool = true;

    unsafe fn init(slot: *mut Self) {
        // SAFETY: per the trait contract.
        unsafe {
            slot.write(WaitCell {
                state: AtomicWord::new(EMPTY),
                _unit: UnsafeCell::new(()),
            })
        }
    }
}

const SKIP: Word = cell::SKIP_SEND;

pub(crate) struct Semaphore {
    /// Free permits (not counting `returned`); negative: minus the number
    /// of waiters. Written by senders, and by receivers only while someone
    /// waits.
    permits: CachePadded<AtomicU64>,
    /// Low `COUNT_BITS`: permits given back by receivers and not yet moved
    /// into `permits`; then `TRANSIT_BITS`: permits a collector has taken
    /// from the count and not yet added to `permits` (so a reader that
    /// looks here first, then at `permits`, sees each free permit in one
    /// place or the other); above: waiters' announcements since the last
    /// clear (non-zero: a receiver must collect at once).
    returned: CachePadded<AtomicU64>,
    /// A receiver that brings `returned` to this many moves them into
    /// `permits` itself; 1: every permit goes straight to `permits`.
    batch: u64,
    /// The waiter queue's counters (not padded: written only by senders
    /// that wait and by receivers that serve them).
    enq: AtomicU64,
    deq: AtomicU64,
    /// Set when a waiter leaves a cell `WITHDRAWN`, cleared by a queueing
    /// waiter that found none to take over: a hint that spares queueing
    /// waiters the scan while nobody gives up (see `reuse_withdrawn`).
    maybe_withdrawn: AtomicBool,
    /// The waiter queue, allocated when the first sender has to wait.
    cells: LazySegments<WaitCell>,
}

/// The batch in which receivers hand permits to senders: an eighth of the
/// capacity, at most 32 (one segment of messages), and 1 (no laziness) for
/// capacities under 16, where a blocked sender would too often wait out
/// its spin for permits that are already free. Under loom, 2 from a
/// capacity of 2, so that small models reach the lazy path.
///
/// Batches of half the capacity (at most 32; none below 8) were tried and
/// taken back: criterion, 4 alternating rounds, `bounded(10)` selects
/// (Go's select producer/consumer shape) 0.82-0.97 of the time, but
/// `chan_prod_cons_100` at 2 pairs 1.11-1.22x in every round (batches of
/// 32 against 12) and `chan_prod_cons_10` at 8 pairs 1.18-1.45x in three
/// (5 against 1): fewer hand-overs of `permits` between the sides, but
/// more permits out of a waiting sender's sight while it lingers.
fn batch_for(cap: usize) -> u64 {
    if cfg!(loom) {
        cap.clamp(1, 2) as u64
    } else {
        (cap / 8).clamp(1, 32) as u64
    }
}

/// The permit count's share of `returned`: at most a batch plus one per
/// concurrent receiver is ever there.
const COUNT_BITS: u32 = 20;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// The share of `returned` in transit: what collectors mid-collect took
/// from the count, at most the count's bound per such collector.
const TRANSIT_BITS: u32 = 20;
const TRANSIT_ONE: u64 = 1 << COUNT_BITS;
const TRANSIT_MASK: u64 = ((1 << TRANSIT_BITS) - 1) << COUNT_BITS;
/// Free permits in `returned`, counted or in transit.
const FREE_MASK: u64 = COUNT_MASK | TRANSIT_MASK;
/// One announcement, in the bits above the transit share. The field skips
/// zero when it wraps (`announce`), so "announced" never reads as "none";
/// a clear that raced exactly 2^24 announcements could still miss them.
const ANNOUNCED: u64 = 1 << (COUNT_BITS + TRANSIT_BITS);
const ANNOUNCE_MASK: u64 = !FREE_MASK;

#[inline]
fn signed(v: u64) -> i64 {
    v as i64
}

impl Semaphore {
    /// Writes a semaphore of `permits` to `p`, field by field (a channel
    /// builds its own in place: see `Kind` in `segment_chan.rs`). Its
    /// waiter queue pins in a domain of its own until
    /// [`Semaphore::share_domain`].
    ///
    /// # Safety
    /// `p` is valid for writes of a `Semaphore`, aligned, and unshared.
    #[inline]
    pub(crate) unsafe fn init_at(p: *mut Self, permits: usize) {
        // SAFETY: per the contract; each field is written once.
        unsafe {
            CachePadded::write_at(
                ptr::addr_of_mut!((*p).permits),
                AtomicU64::new(permits.min(i64::MAX as usize) as u64),
            );
            CachePadded::write_at(ptr::addr_of_mut!((*p).returned), AtomicU64::new(0));
            ptr::addr_of_mut!((*p).batch).write(batch_for(permits));
            ptr::addr_of_mut!((*p).enq).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).deq).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).maybe_withdrawn).write(AtomicBool::new(false));
            ptr::addr_of_mut!((*p).cells).write(LazySegments::new());
        }
    }

    /// A semaphore of `permits`, standing alone (the unit tests').
    #[cfg(test)]
    pub(crate) fn new(permits: usize) -> Self {
        let mut sem = std::mem::MaybeUninit::uninit();
        // SAFETY: a fresh local, written whole by `init_at`.
        unsafe {
            Self::init_at(sem.as_mut_ptr(), permits);
            sem.assume_init()
        }
    }

    /// Makes the waiter queue pin in `domain` (from
    /// [`crate::segment::Segments::domain_of`]), before any use.
    ///
    /// # Safety
    /// The list at `domain` outlives this semaphore, and `domain` stays
    /// valid for reads and atomic writes as long (see
    /// `Channel::share_domains`).
    pub(crate) unsafe fn share_domain(&mut self, domain: *const Domain) {
        // SAFETY: per the contract.
        unsafe { self.cells.share_domain(domain) }
    }

    /// True when no permit is free (read only).
    #[inline]
    pub(crate) fn is_exhausted(&self) -> bool {
        // `returned` first, Acquire: a collector adds to `permits` before
        // it takes the permits out of transit (Release), so whatever it
        // moved is in what we read there or in `permits` after. Read the
        // other way round, a collect between the two loads hid its permits
        // from both, and a `try_send` said `Full` with room (found in
        // review; loom `try_send_sees_permits_in_transit`).
        self.returned.load(Ordering::Acquire) & FREE_MASK == 0
            && signed(self.permits.load(Ordering::Relaxed)) <= 0
    }

    /// Whether a permit is free, after collecting the returned ones if
    /// `permits` has none.
    #[inline]
    fn has_free(&self) -> bool {
        // Relaxed: a hint; the fetch_sub or CAS that follows decides.
        signed(self.permits.load(Ordering::Relaxed)) > 0
            || (self.collect_returned() && signed(self.permits.load(Ordering::Relaxed)) > 0)
    }

    /// Takes a permit. `is_closed` is re-checked after a waiter is published
    /// (the other half of close's fence): a closer either sees the waiter or
    /// the waiter sees the close. In `Mode::Register` a select's entry waits
    /// for the permit instead, and `Registered` returns at once.
    #[inline]
    pub(crate) fn acquire(
        &self,
        mode: Mode<'_>,
        is_closed: impl Fn() -> bool,
    ) -> Result<(), RecvStop> {
        // The common case, inlined in the send: a blocking send that sees a
        // free permit takes it with the fetch_sub below, as `acquire_slow`
        // would (a permit seen free skips its linger), without a call whose
        // register saves and frame cost a bounded channel's send a tenth of
        // its instructions (callgrind: 33 of ~300 per message).
        if let Mode::Park(deadline) = mode {
            // Relaxed: a hint; the fetch_sub decides.
            if signed(self.permits.load(Ordering::Relaxed)) > 0 {
                // Acquire: as in `acquire_slow`.
                if signed(self.permits.fetch_sub(1, Ordering::Acquire)) > 0 {
                    return Ok(());
                }
                return self.queue_for_permit(deadline, None, is_closed);
            }
        }
        if let Mode::Try = mode {
            return self.try_acquire(is_closed).map_err(RecvStop::Fail);
        }
        self.acquire_slow(mode, is_closed)
    }

    /// [`Semaphore::acquire`] past its inlined common case.
    fn acquire_slow(&self, mode: Mode<'_>, is_closed: impl Fn() -> bool) -> Result<(), RecvStop> {
        let (deadline, select_entry) = match mode {
            Mode::Try => return self.try_acquire(is_closed).map_err(RecvStop::Fail),
            Mode::Park(deadline) => {
                // Wait a little for a free permit before queueing for one:
                // a queued acquirer gets the next permit released, so with
                // more threads than cores every permit would wait for its
                // acquirer's time slice (see `Channel::await_sender`).
                // The wait reads only senders' words: receivers hand over
                // permits in batches (polling `returned` would pull its line
                // away from every receive: tried, `bounded_mpmc` ran
                // 1.11-1.20x the time at 1, 2 and 4 pairs, medians of 4
                // alternating rounds). If fewer than a batch come back
                // meanwhile, the waiter collects them once it has queued.
                if !self.has_free() {
                    linger(deadline, || {
                        signed(self.permits.load(Ordering::Relaxed)) > 0 || is_closed()
                    });
                }
                (deadline, None)
            }
            // (The select's first pass already tried `try_acquire`.)
            Mode::Register { entry, .. } => (None, Some(entry)),
        };
        // Acquire: pairs with the Release adds into `permits`, so the
        // receive that freed this permit happens before our send.
        let before = signed(self.permits.fetch_sub(1, Ordering::Acquire));
        if before > 0 {
            return Ok(());
        }
        self.queue_for_permit(deadline, select_entry, is_closed)
    }

    /// Waits in the queue for the permit that the `fetch_sub` which left
    /// `permits` at or below zero made this acquirer owed (parks until
    /// `deadline`, or registers `select_entry` and returns).
    #[cold]
    fn queue_for_permit(
        &self,
        deadline: Option<Instant>,
        select_entry: Option<&Entry>,
        is_closed: impl Fn() -> bool,
    ) -> Result<(), RecvStop> {
        let cells = self.cells.get_or_init();
        let guard = cells.pin();
        // (A select's waiter and entry are its own; ours share a line, see
        // `Parked`. No slot: a permit carries nothing.)
        let mut parked = Parked::<()>::new();
        let own_entry = parked.entry_with_slot(ptr::null_mut());
        let waiter = own_entry.waiter();
        let entry = select_entry.unwrap_or(own_entry);
        let word = cell::entry_word(entry, false);
        // An untimed plain waiter never touches its cell once decided, so
        // its registration holds no reference on the segment, only our pin
        // while it may still cancel (see `Channel::park_untimed`).
        let untimed = deadline.is_none() && select_entry.is_none();
        // (A reused cell comes with a reference.)
        let mut referenced = true;
        let (seg, index) = if let Some(reused) = self.reuse_withdrawn(cells, word, &guard) {
            self.announce();
            reused
        } else {
            let start = cells.cursor(Side::Push, &guard);
            // Acquire: an index handed back (`give_back`, Release) comes
            // with its holder's CLAIMED, so the CAS below cannot read the
            // cell's state from before it (and take a stale word for a
            // permit).
            let index = self.enq.fetch_add(1, Ordering::Acquire);
            // Queued (`enq`); now announce, and collect what receivers
            // returned before the announcement (those after it see it and
            // collect for us). A permit collected may come back to our own
            // cell.
            self.announce();
            let seg = cells.find(Side::Push, start, index, &guard);
            let cell = &seg.cell(index).state;
            // Release publishes the entry; Acquire on failure reads the
            // permit.
            while let Err(state) =
                cell.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Acquire)
            {
                match state {
                    // The index's last holder is giving it back (see
                    // `InCell::cancel`): it leaves the cell EMPTY.
                    CLAIMED => {
                        cell::wait_unclaimed(cell);
                        continue;
                    }
                    BUFFERED => {}
                    // Only a permit may be taken: a failed CAS is a load,
                    // and anything else it reads is a state from before
                    // the index was handed back (ruled out by the Acquire
                    // above; a second line of defence costs nothing).
                    _ => continue,
                }
                cell.store(DONE, Ordering::Relaxed);
                return Ok(());
            }
            if untimed {
                referenced = false;
            } else {
                // (Pinned, so `seg` is alive.)
                seg.acquire_ref();
            }
            (seg, index)
        };
        let cell = &seg.cell(index).state;
        // SAFETY: `word` is in `cell`, a cell of `seg`, on which we hold the
        // reference taken above, or (not `referenced`) our pin until the
        // closed check below, after which we only complete; `permits` and
        // `enq` are ours, and we outlive every registration (the channel
        // does). No skip counter: the releaser that lands on a skipped cell
        // settles the permit count itself.
        let reg = unsafe {
            InCell::new(
                cell,
                word,
                SKIP,
                None,
                None,
                seg as *const Segment<WaitCell> as *const (),
                release_segment,
            )
            .owing(
                &self.permits,
                may_give_back(index).then_some((&self.enq, index)),
            )
            .after_skip(self as *const Semaphore as *const (), pass_withdrawn)
            .after_give_back(self as *const Semaphore as *const (), give_back_withdrawn)
        };
        let reg = if referenced {
            reg
        } else {
            // SAFETY: as said above.
            unsafe { reg.unreferenced() }
        };
        // Dekker with `close_waiters`: our entry store, then the closed check.
        fence(Ordering::SeqCst);
        if is_closed() && (entry.waiter().is_registering() || waiter.try_abort()) {
            reg.cancel();
            return Err(RecvStop::Fail(Fail::Closed));
        }
        // A pin held through the wait would stall the queue's reclamation.
        drop(guard);
        if select_entry.is_some() {
            return Err(RecvStop::Registered(reg.into()));
        }
        match waiter.wait(deadline) {
            Outcome::Selected(_) => {
                reg.complete();
                Ok(())
            }
            // Decided by the closer, which already marked the cell.
            Outcome::Closed(_) => {
                reg.complete();
                Err(RecvStop::Fail(Fail::Closed))
            }
            Outcome::TimedOut => {
                // (Only a timed wait times out, and its registration holds
                // a reference for the cancel.)
                debug_assert!(referenced, "an untimed wait timed out");
                reg.cancel();
                Err(RecvStop::Fail(Fail::Timeout))
            }
        }
    }

    /// Announces a waiter in `returned` (receivers seeing it stop keeping
    /// permits back in batches), collecting what they returned before.
    /// Release: a clearer that reads the announcement sees our `enq`.
    fn announce(&self) {
        let mut before = self.returned.fetch_add(ANNOUNCED, Ordering::AcqRel);
        if before.wrapping_add(ANNOUNCED) & ANNOUNCE_MASK == 0 {
            // Wrapped to "none": announce once more.
            before = self.returned.fetch_add(ANNOUNCED, Ordering::AcqRel);
        }
        if before & COUNT_MASK != 0 {
            self.collect_returned();
        }
    }

    /// Before queueing at a new index: publishes the entry `word` in a cell
    /// of the queue's last segment whose waiter gave up and took its debt
    /// back (`WITHDRAWN`), if there is one, and returns that segment (with
    /// a reference taken for the registration) and the cell's index.
    ///
    /// Without this, two threads timing out in turn behind a waiter that is
    /// never served (a sender blocked for good on a full channel nobody
    /// drains) each take an index while the other waits, so neither is ever
    /// the last to hand its index back, and the withdrawn cells between
    /// them pile up (measured with both cores busy: 900 segments after
    /// 2 x 20 000 timed-out 1 us sends; 2 with this). Reusing them keeps
    /// the queue near the number of waiters. A withdrawn cell is owed
    /// nothing, and every other claim on it is a CAS from `WITHDRAWN` too
    /// (a releaser or passer marking it `DONE`, a give-back holding it
    /// `CLAIMED`), so exactly one of them takes it; a releaser that loses
    /// to us finds our entry and serves it as any waiter's. Releasers serve
    /// whichever entries they meet in index order, so a waiter that reuses
    /// a cell below others is served before them: fairness among senders
    /// blocked on a full channel gives way where waiters time out, while
    /// the count of debts and waiters stays exact.
    fn reuse_withdrawn<'c>(
        &self,
        cells: &'c Segments<WaitCell>,
        word: Word,
        guard: &epoch::Guard,
    ) -> Option<(&'c Segment<WaitCell>, u64)> {
        if !self.maybe_withdrawn.load(Ordering::Relaxed) {
            return None;
        }
        // Cursor first: the segment of any index read after it is at or
        // past it. Relaxed (the counters): hints; the CAS below decides.
        let start = cells.cursor(Side::Push, guard);
        let top = self.enq.load(Ordering::Relaxed);
        let served = self.deq.load(Ordering::Relaxed);
        if top <= served {
            return None;
        }
        let seg = cells.peek(start, top - 1, guard)?;
        let reused = seg
            .take_over(served, top, |cell| &cell.state, WITHDRAWN, word)
            .map(|index| (seg, index));
        if reused.is_none() {
            self.maybe_withdrawn.store(false, Ordering::Relaxed);
        }
        reused
    }

    /// No read-modify-write when no permit is free. The first attempt is
    /// inlined (a select's try pass makes it on every bounded send case:
    /// the call was 34 of ~530 instructions of a send case on a
    /// `bounded(1)` and the receive after it, callgrind); a lost CAS
    /// leaves nothing changed for the full attempt.
    #[inline]
    fn try_acquire(&self, is_closed: impl Fn() -> bool) -> Result<(), Fail> {
        let cur = self.permits.load(Ordering::Relaxed);
        // Acquire: pairs with the Release adds into `permits`, so the
        // receive that freed this permit happens before our send.
        if signed(cur) > 0
            && self
                .permits
                .compare_exchange_weak(cur, cur - 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Ok(());
        }
        self.try_acquire_slow(is_closed)
    }

    /// [`Semaphore::try_acquire`] past its first attempt.
    #[inline(never)]
    fn try_acquire_slow(&self, is_closed: impl Fn() -> bool) -> Result<(), Fail> {
        let mut cur = self.permits.load(Ordering::Relaxed);
        loop {
            if signed(cur) <= 0 {
                if self.collect_returned() {
                    cur = self.permits.load(Ordering::Relaxed);
                    continue;
                }
                // Nothing counted in `returned`; a collector may still
                // hold permits in transit, which are free: wait until some
                // land (a few instructions, unless it was preempted), or
                // none are in transit, then look again. Acquire, as in
                // `is_exhausted`: once none are in transit, `permits` shows
                // what they became.
                let backoff = Backoff::new();
                while signed(self.permits.load(Ordering::Relaxed)) <= 0
                    && self.returned.load(Ordering::Acquire) & TRANSIT_MASK != 0
                {
                    backoff.snooze();
                }
                cur = self.permits.load(Ordering::Relaxed);
                if signed(cur) > 0 {
                    continue;
                }
                return Err(Fail::closed_or_blocked(is_closed()));
            }
            match self.permits.compare_exchange_weak(
                cur,
                cur - 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(c) => cur = c,
            }
        }
    }

    /// Returns a permit (a receiver's): lazily, into `returned`, unless a
    /// batch is complete or a waiter has announced itself.
    #[inline]
    pub(crate) fn release(&self) {
        if self.batch == 1 {
            return self.give(1);
        }
        // Release: our receive happens before the send this permit allows
        // (through the collector's Acquire and its Release add).
        let before = self.returned.fetch_add(1, Ordering::Release);
        if before & ANNOUNCE_MASK != 0 || (before & COUNT_MASK) + 1 >= self.batch {
            self.collect_returned();
        }
    }

    /// Moves the permits in `returned` into `permits`, serving waiters, and
    /// clears the announcements if no queued waiter is left unserved.
    /// Returns whether there were permits.
    fn collect_returned(&self) -> bool {
        // Relaxed load: no read-modify-write when nothing was returned (a
        // failing `try_send` stays read-only).
        let mut word = self.returned.load(Ordering::Relaxed);
        // Moves the count into transit, where readers still see it until
        // `give` has added it to `permits`. Acquire: the receives that
        // returned these permits happen before our add, hence before the
        // sends they allow.
        let n = loop {
            let n = word & COUNT_MASK;
            if n == 0 {
                return false;
            }
            match self.returned.compare_exchange_weak(
                word,
                word - n + n * TRANSIT_ONE,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break n,
                Err(now) => word = now,
            }
        };
        self.give(n);
        // Release: a reader that sees them gone from transit sees them in
        // `permits` (see `is_exhausted`).
        self.returned.fetch_sub(n * TRANSIT_ONE, Ordering::Release);
        // (Every receive while announcements stand comes here with a
        // permit, so the first one after the last waiter clears them,
        // passing the withdrawn cells behind that waiter first.)
        if word & ANNOUNCE_MASK != 0 {
            self.clear_announcements();
        }
        true
    }

    /// Resets the announcements once every queued waiter's cell has been
    /// visited by a releaser, so receivers go back to batching.
    fn clear_announcements(&self) {
        // Acquire: an announcement we read comes with its waiter's `enq`.
        let word = self.returned.load(Ordering::Acquire);
        if word & ANNOUNCE_MASK == 0 {
            return;
        }
        // Relaxed: the CAS below fails if anyone announced after `word`;
        // a waiter queued before announcing shows in `enq` (Acquire above).
        let served = || self.enq.load(Ordering::Relaxed) == self.deq.load(Ordering::Relaxed);
        if !served() {
            // Cells whose waiters withdrew may sit between the last waiter
            // served and `enq`, for good: one that cannot be handed back
            // (a segment's last index, see `may_give_back`) is passed only
            // by the next releaser, and with no waiter left no releaser
            // comes, so receivers would collect one permit at a time until
            // a sender next had to queue. (Not while a waiter is still owed
            // a permit: the releaser that serves it passes them, and the
            // pass would pin and CAS on every receive meanwhile.)
            if signed(self.permits.load(Ordering::Relaxed)) < 0 {
                return;
            }
            self.pass_head_withdrawn();
            if !served() {
                return;
            }
        }
        let _ = self.returned.compare_exchange(
            word,
            word & FREE_MASK,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Adds `n` permits to `permits`, handing one to each waiter they owe
    /// (in the queue's next cells); those a waiter gave up go in again.
    /// Inlined, with the serving out of line: with nobody waiting it is
    /// one add (on a `bounded(1)`, the call was 30 of ~530 instructions of
    /// a select's send case and the receive after it, callgrind).
    #[inline]
    fn give(&self, mut n: u64) {
        while n > 0 {
            // Release: our permits' receives happen before the sends they
            // allow.
            let before = signed(self.permits.fetch_add(n, Ordering::Release));
            if before >= 0 {
                return;
            }
            n = self.serve_owed(before, n);
        }
    }

    /// After `n` permits were added to a count that stood at `before`
    /// (negative: waiters owed), serves the waiters they owe. Returns how
    /// many of those had given up: their permits are to be given again.
    #[inline(never)]
    fn serve_owed(&self, before: i64, n: u64) -> u64 {
        let owed = before.unsigned_abs().min(n);
        (0..owed).filter(|_| !self.serve_next()).count() as u64
    }

    /// Hands one permit to the waiter of the next cell (or leaves it there
    /// for a waiter still on its way), passing cells whose waiters took
    /// their debts back. False if the waiter gave up without taking its
    /// debt back: the permit is still the caller's.
    fn serve_next(&self) -> bool {
        // (The waiter this permit is for may not have made the list yet.)
        let cells = self.cells.get_or_init();
        let guard = cells.pin();
        'index: loop {
            let start = cells.cursor(Side::Pop, &guard);
            let index = self.deq.fetch_add(1, Ordering::Relaxed);
            let cell = &cells
                .find(Side::Pop, start, index, &guard)
                .cell(index)
                .state;
            let mut state = cell.load(Ordering::Acquire);
            loop {
                match state {
                    EMPTY => match cell.compare_exchange(
                        EMPTY,
                        BUFFERED,
                        Ordering::Release,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return true,
                        Err(s) => state = s,
                    },
                    SKIP => return false,
                    // Owed nothing: our permit is for a later cell. Marked
                    // passed first, so that a give-back cannot take the
                    // index back from under us.
                    WITHDRAWN => match cell.compare_exchange(
                        WITHDRAWN,
                        DONE,
                        Ordering::Relaxed,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => continue 'index,
                        Err(s) => state = s,
                    },
                    // Passed by a quitter that lost the index to us.
                    DONE => continue 'index,
                    CLAIMED => state = cell::wait_unclaimed(cell),
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(cell, word, Claimer::Sender, SKIP) {
                            Claim::Won { waiter, end, .. } => {
                                cell::finish(cell, end, waiter);
                                return true;
                            }
                            Claim::Gone(_) => return false,
                            Claim::Moved(s) => state = s,
                        }
                    }
                    other => unreachable!("semaphore cell in state {other:?}"),
                }
            }
        }
    }

    /// Moves `deq` past the withdrawn cells at the head of the queue, as the
    /// releaser that would land on them next would: while nobody releases
    /// (a full channel whose receiver is stuck), waiters that give up out
    /// of order would otherwise leave a trail of segments behind the head.
    /// A releaser's fetch-and-add or another passer wins any race for an
    /// index (the CAS fails), and passing a withdrawn cell settles nothing.
    fn pass_withdrawn(&self) {
        // Relaxed (the hint, here and in `reuse_withdrawn`): a waiter that
        // misses a withdrawn cell queues at a new index, as before there
        // was any reuse; the next withdrawal sets the hint again.
        self.maybe_withdrawn.store(true, Ordering::Relaxed);
        self.pass_head_withdrawn();
    }

    /// Moves `deq` past the withdrawn cells at the head of the queue.
    fn pass_head_withdrawn(&self) {
        let Some(cells) = self.cells.get() else {
            return;
        };
        cells.pass_head(
            Side::Pop,
            &self.deq,
            |i| i < self.enq.load(Ordering::Relaxed),
            // Marked passed before `deq` moves (see `give_back_withdrawn`);
            // a cell already marked is one another passer is moving past.
            |cell| {
                cell.state
                    .compare_exchange(WITHDRAWN, DONE, Ordering::Relaxed, Ordering::Relaxed)
                    .map_or_else(|now| now == DONE, |_| true)
            },
            // Left `DONE` either way: a releaser that won the index finds
            // it passed and goes on, owed nothing.
            |_, _| {},
        );
    }

    /// A waiter just handed `index` back to `enq`: the cells below it in
    /// its segment `seg` that waiters gave up (`WITHDRAWN`) go back too,
    /// while each is the last index taken.
    ///
    /// Behind a waiter that never leaves the head of the queue (a sender
    /// blocked for good on a channel nobody drains), waiters that time out
    /// out of order leave withdrawn cells nobody can pass; without this
    /// they piled up (measured: 580 segments after 2 x 20 000 timed-out
    /// sends). A cell is given back exactly as its own waiter would have:
    /// held `CLAIMED` (a releaser that took the index waits, then finds it
    /// `EMPTY` and leaves its permit there for the next acquirer), `enq`
    /// moved back by CAS. Releasers and passers mark a withdrawn cell
    /// `DONE` before passing it, so a cell is never given back once its
    /// index was passed. Only within `seg`, so the index is never a
    /// segment's last (see `may_give_back`).
    fn give_back_withdrawn(&self, seg: &Segment<WaitCell>, mut index: u64) {
        while index % SEGMENT_CELLS as u64 != 0 {
            let below = index - 1;
            let cell = &seg.cell(below).state;
            if cell
                .compare_exchange(WITHDRAWN, CLAIMED, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                return;
            }
            let given = give_back(&self.enq, below);
            // Release: pairs with the Acquire of whoever waits on CLAIMED.
            cell.store(if given { EMPTY } else { WITHDRAWN }, Ordering::Release);
            if !given {
                return;
            }
            index = below;
        }
    }

    /// Wakes every parked acquirer with `Closed`. Called once, after the
    /// channel's closed bit is set and a SeqCst fence.
    pub(crate) fn close_waiters(&self) {
        // No list: no waiter had published before the caller's fence, and
        // any later one sees the closed bit after its own fence.
        let Some(cells) = self.cells.get() else {
            return;
        };
        let guard = cells.pin();
        let lo = self.deq.load(Ordering::Relaxed);
        let hi = self.enq.load(Ordering::Relaxed);
        cells.visit(lo, hi, &guard, |cell| {
            let word = cell.state.load(Ordering::Acquire);
            if cell::is_entry(word) {
                cell::close_entry(&cell.state, word, SKIP);
            }
        });
    }
}

/// [`Semaphore::give_back_withdrawn`] for a registration.
///
/// # Safety
/// `sem` is a live `Semaphore`; `seg` a `Segment<WaitCell>` on which the
/// caller holds a reference.
unsafe fn give_back_withdrawn(sem: *const (), seg: *const (), index: u64) {
    // SAFETY: per the contract.
    let (sem, seg) = unsafe {
        (
            &*(sem as *const Semaphore),
            &*(seg as *const Segment<WaitCell>),
        )
    };
    sem.give_back_withdrawn(seg, index);
}

/// A semaphore waiter's cancel left its cell withdrawn: pass what can be.
///
/// # Safety
/// `sem` points to a live `Semaphore`.
unsafe fn pass_withdrawn(sem: *const ()) {
    // SAFETY: per the contract.
    unsafe { &*(sem as *const Semaphore) }.pass_withdrawn();
}

/// The segment reference a [`Registration`](crate::cell::Registration) in
/// a semaphore cell drops.
///
/// # Safety
/// `seg` is a `Segment<WaitCell>` on which the caller holds a reference.
unsafe fn release_segment(seg: *const ()) {
    // SAFETY: per the contract.
    unsafe { Segment::release_ref(seg as *const Segment<WaitCell>) };
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The announcement field skips zero when it wraps: a waiter that
    /// announced must never read as "no waiter" to receivers, which would
    /// then keep its permit back in a batch.
    #[test]
    fn announcements_skip_zero_when_they_wrap() {
        let sem = Semaphore::new(64);
        // The field's last value before it wraps; nothing counted.
        sem.returned.store(ANNOUNCE_MASK, Ordering::Relaxed);
        sem.announce();
        assert_ne!(sem.returned.load(Ordering::Relaxed) & ANNOUNCE_MASK, 0);
        assert_eq!(sem.returned.load(Ordering::Relaxed) & FREE_MASK, 0);
    }

    /// Waiters that withdrew behind the last waiter served, up to a
    /// segment's last index (which no waiter can hand back), are passed by
    /// the receive that serves that waiter: receivers batch their permits
    /// again instead of collecting every one of them for good.
    #[test]
    fn announcements_cleared_past_withdrawn_cells() {
        let sem = &Semaphore::new(64);
        assert!(sem.batch > 1, "the lazy path needs batches");
        let enq = || sem.enq.load(Ordering::Relaxed);
        for _ in 0..64 {
            assert!(sem.acquire(Mode::Try, || false).is_ok());
        }
        std::thread::scope(|s| {
            // Index 0: waits until the release below.
            let blocked = s.spawn(move || sem.acquire(Mode::Park(None), || false).is_ok());
            while enq() < 1 {
                std::thread::yield_now();
            }
            // Indices 1 to the segment's last, queued in order, all giving
            // up at once: none is the last index taken when it leaves, or
            // it is a segment's last, so every cell stays withdrawn.
            // (Generous: on a loaded machine the spawns must all queue
            // before the first waiter gives up.)
            let deadline = Instant::now() + Duration::from_secs(1);
            let quitters: Vec<_> = (1..SEGMENT_CELLS as u64)
                .map(|i| {
                    let quitter =
                        s.spawn(move || sem.acquire(Mode::Park(Some(deadline)), || false).is_err());
                    while enq() < i + 1 {
                        if Instant::now() >= deadline {
                            // Free the blocked waiter, or the scope never ends.
                            sem.release();
                            panic!("the machine is too slow to queue in time");
                        }
                        std::thread::yield_now();
                    }
                    quitter
                })
                .collect();
            for quitter in quitters {
                assert!(quitter.join().unwrap(), "timed out");
            }
            assert_eq!(enq(), SEGMENT_CELLS as u64, "no index handed back");
            sem.release();
            assert!(blocked.join().unwrap());
        });
        assert_eq!(
            sem.deq.load(Ordering::Relaxed),
            enq(),
            "withdrawn cells passed"
        );
        assert_eq!(
            sem.returned.load(Ordering::Relaxed) & ANNOUNCE_MASK,
            0,
            "announcements cleared"
        );
        // And receivers batch again: a release leaves its permit in
        // `returned` until a batch is complete.
        sem.release();
        assert_eq!(sem.returned.load(Ordering::Relaxed) & COUNT_MASK, 1);
    }
}

/// Loom models of the permit queue's bookkeeping (run with `--cfg loom ...
/// --lib`; the channel-level models are in `tests/loom/`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Bound 3. Capacity 2 (batches of 2 under loom) and 2-cell segments:
    /// a waiter queues behind another and gives up (a timed park may expire
    /// at once), in either order of queueing, while a receive serves the
    /// other. A withdrawn cell at a segment's end cannot be handed back,
    /// yet once every waiter is gone the next release must find the queue
    /// passed and clear the announcements, so that receivers batch again.
    #[test]
    fn announcements_cleared_past_a_withdrawn_segment_end() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            let sem = Arc::new(Semaphore::new(2));
            for _ in 0..2 {
                assert!(sem.acquire(Mode::Try, || false).is_ok());
            }
            let waiting = {
                let sem = sem.clone();
                loom::thread::spawn(move || sem.acquire(Mode::Park(None), || false).is_ok())
            };
            let quitter = {
                let sem = sem.clone();
                loom::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(3600);
                    sem.acquire(Mode::Park(Some(deadline)), || false).is_ok()
                })
            };
            // Nothing is released before the quitter is done: it gives up.
            assert!(!quitter.join().unwrap(), "no permit was free");
            sem.release();
            assert!(waiting.join().unwrap());
            // The permit the waiter got goes back; with no waiter left, it
            // clears the announcements on its way.
            sem.release();
            assert_eq!(
                sem.enq.load(Ordering::Relaxed),
                sem.deq.load(Ordering::Relaxed),
                "every queued cell passed"
            );
            assert_eq!(
                sem.returned.load(Ordering::Relaxed) & ANNOUNCE_MASK,
                0,
                "announcements cleared"
            );
        });
    }
}
