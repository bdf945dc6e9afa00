//! The channel: fetch-and-add over an infinite array of cells (seed 004).
//!
//! Send number `i` and receive number `i` meet in cell `i`: each side takes
//! its index with one fetch-and-add on its counter (`senders`, `receivers`)
//! and then settles the cell with one CAS (see [`crate::cell`] for the state
//! diagram). Whoever arrives second completes the transfer; the first only
//! parks when it has to (a receiver on an empty channel, a rendezvous
//! sender), leaving a waiter entry in the cell.
//!
//! The three kinds share the cell protocol:
//! - **unbounded**: a sender deposits its value in the cell and returns;
//! - **bounded(n), n >= 1**: the same, behind a semaphore of `n` permits
//!   ([`crate::semaphore`]), returned by the receiver that takes the value;
//! - **bounded(0)**: a sender parks in its cell (holding its value in its own
//!   stack frame) until its receiver takes it.
//!
//! **Closing** sets bit 63 of `senders` with one `fetch_or`: the count under
//! it freezes at `closed_at`, every later send sees the bit in its own
//! fetch-and-add and fails, receivers take indices below `closed_at` (every
//! message sent before the close) and report `Closed` from then on. The
//! closer then wakes the parked threads that can never be served: receivers
//! at indices `>= closed_at`, parked rendezvous senders, and senders waiting
//! for a permit; they get `Closed` (senders with their message).
//!
//! **Indices** are 63-bit counts: at one operation per nanosecond they wrap
//! after 292 years, so wrap-around is not handled.

use crate::cell::{self, Claim, BUFFERED, CLAIMED, DONE, EMPTY, SKIP_RECV, SKIP_SEND};
use crate::epoch;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use crate::loom::{Backoff, CachePadded, SpinLoad};
use crate::segment::{Segment, SegmentCell, Segments, Side};
use crate::semaphore::{self, Semaphore};
use crate::waiter::{Entry, Outcome, Waiter};
use crate::{Fail, Wait};
use std::mem::MaybeUninit;

const CLOSED_BIT: u64 = 1 << 63;

#[inline]
fn count(senders: u64) -> u64 {
    senders & !CLOSED_BIT
}

/// One cell: a state word and room for one buffered value. Zero-sized `T`
/// makes the slot vanish, so a `bounded::<()>(n)` cell is one word.
pub(crate) struct Cell<T> {
    state: AtomicUsize,
    slot: UnsafeCell<MaybeUninit<T>>,
}

impl<T> SegmentCell for Cell<T> {
    unsafe fn init(slot: *mut Self) {
        #[cfg(not(loom))]
        // SAFETY: per the trait contract. The slot may stay uninitialised
        // (it is a `MaybeUninit`), so a large `T` is never written here.
        unsafe {
            std::ptr::addr_of_mut!((*slot).state).write(AtomicUsize::new(EMPTY));
        }
        #[cfg(loom)]
        // SAFETY: per the trait contract (loom must build its cell tracker).
        unsafe {
            slot.write(Cell {
                state: AtomicUsize::new(EMPTY),
                slot: UnsafeCell::new(MaybeUninit::uninit()),
            })
        }
    }
}

impl<T> Cell<T> {
    /// # Safety
    /// The caller owns the slot (it took this cell's send index).
    #[inline]
    unsafe fn write(&self, msg: T) {
        // SAFETY: exclusive per the contract.
        self.slot.with_mut(|p| unsafe { (*p).write(msg) });
    }

    /// # Safety
    /// The slot holds a value the caller owns (it wrote it, or saw BUFFERED).
    #[inline]
    unsafe fn read(&self) -> T {
        // SAFETY: initialised and owned per the contract.
        self.slot.with(|p| unsafe { (*p).assume_init_read() })
    }
}

/// The kinds of channel.
// One per channel, inside its single allocation: boxing the semaphore would
// only add a pointer chase to every bounded send.
#[allow(clippy::large_enum_variant)]
enum Kind {
    Unbounded,
    Rendezvous,
    Bounded { cap: usize, permits: Semaphore },
}

pub(crate) struct Channel<T> {
    /// Sends started; bit 63: closed.
    senders: CachePadded<AtomicU64>,
    /// Receives started.
    receivers: CachePadded<AtomicU64>,
    /// The send count when the channel closed (`u64::MAX` until then).
    /// Sends that fail after the close still bump the count in `senders`,
    /// so the count under the closed bit is not frozen; this is.
    closed_at: AtomicU64,
    /// Send indices given up (a receive landing on them skips them) less
    /// those already skipped; keeps `len()` exact. Touched only on the
    /// cancellation and skip paths.
    skipped_sends: CachePadded<AtomicU64>,
    /// The same for receive indices.
    skipped_recvs: CachePadded<AtomicU64>,
    cells: Segments<Cell<T>>,
    kind: Kind,
}

// SAFETY: values move between threads only through the cell protocol; the
// channel owns buffered values of type `T: Send`.
unsafe impl<T: Send> Send for Channel<T> {}
// SAFETY: as above; all shared state is atomics or cells whose ownership the
// protocol hands to exactly one thread at a time.
unsafe impl<T: Send> Sync for Channel<T> {}

/// How a receive ended.
pub(crate) type RecvResult<T> = Result<T, Fail>;

impl<T> Channel<T> {
    pub(crate) fn new(cap: Option<usize>) -> Self {
        let kind = match cap {
            None => Kind::Unbounded,
            Some(0) => Kind::Rendezvous,
            Some(cap) => Kind::Bounded {
                cap,
                permits: Semaphore::new(cap),
            },
        };
        Channel {
            senders: CachePadded::new(AtomicU64::new(0)),
            receivers: CachePadded::new(AtomicU64::new(0)),
            closed_at: AtomicU64::new(u64::MAX),
            skipped_sends: CachePadded::new(AtomicU64::new(0)),
            skipped_recvs: CachePadded::new(AtomicU64::new(0)),
            cells: Segments::new(),
            kind,
        }
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        match &self.kind {
            Kind::Unbounded => None,
            Kind::Rendezvous => Some(0),
            Kind::Bounded { cap, .. } => Some(*cap),
        }
    }

    /// For a `senders` word with the closed bit: the send count at the close.
    /// The closer publishes it right after setting the bit; a reader that
    /// sees the bit first waits the few instructions in between.
    #[inline]
    fn closed_at(&self, senders: u64) -> Option<u64> {
        if senders & CLOSED_BIT == 0 {
            return None;
        }
        let backoff = Backoff::new();
        loop {
            // Acquire: pairs with the closer's Release store.
            let at = self.closed_at.spin_load(Ordering::Acquire);
            if at != u64::MAX {
                return Some(at);
            }
            backoff.snooze();
        }
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.senders.load(Ordering::Acquire) & CLOSED_BIT != 0
    }

    /// Buffered messages: sends started less receives started, corrected by
    /// the indices each side gave up. Exact when nothing is in flight.
    pub(crate) fn len(&self) -> usize {
        let cap = match &self.kind {
            Kind::Rendezvous => return 0,
            Kind::Unbounded => usize::MAX,
            Kind::Bounded { cap, .. } => *cap,
        };
        loop {
            let r = self.receivers.load(Ordering::SeqCst);
            let s = self.senders.load(Ordering::SeqCst);
            let s = count(s).min(self.closed_at.load(Ordering::SeqCst));
            let cs = self.skipped_sends.load(Ordering::SeqCst);
            let cr = self.skipped_recvs.load(Ordering::SeqCst);
            // A consistent snapshot: nothing moved while we read.
            if self.receivers.load(Ordering::SeqCst) == r {
                let len = (s.wrapping_sub(cs) as i64).wrapping_sub(r.wrapping_sub(cr) as i64);
                return (len.max(0) as u64).min(cap as u64) as usize;
            }
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        match &self.kind {
            Kind::Unbounded => false,
            Kind::Rendezvous => true,
            Kind::Bounded { permits, .. } => permits.is_exhausted(),
        }
    }

    // ---------------------------------------------------------------- send

    pub(crate) fn send(&self, msg: T, wait: Wait) -> Result<(), (T, Fail)> {
        match &self.kind {
            Kind::Unbounded => self.send_buffered(msg),
            Kind::Rendezvous => self.send_rendezvous(msg, wait),
            Kind::Bounded { permits, .. } => {
                if let Err(fail) = permits.acquire(wait, || self.is_closed()) {
                    return Err((msg, fail));
                }
                // Holding a permit, the deposit cannot block.
                self.send_buffered(msg).inspect_err(|_| permits.release())
            }
        }
    }

    /// Deposits `msg` in the next cell, or hands it to the receiver parked
    /// there. Never blocks.
    fn send_buffered(&self, mut msg: T) -> Result<(), (T, Fail)> {
        'index: loop {
            let guard = epoch::pin();
            let start = self.cells.cursor(Side::Push, &guard);
            // Relaxed: the cell CAS carries the data; the closed bit is read
            // from this RMW, which is ordered with the closer's `fetch_or`.
            let s = self.senders.fetch_add(1, Ordering::Relaxed);
            if s & CLOSED_BIT != 0 {
                return Err((msg, Fail::Closed));
            }
            let cell = self.cells.find(Side::Push, start, s, &guard).cell(s);
            // SAFETY: index `s` is ours, so is the slot.
            unsafe { cell.write(msg) };
            // Release: the value is visible to whoever sees BUFFERED.
            let mut state = match cell.state.compare_exchange(
                EMPTY,
                BUFFERED,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(state) => state,
            };
            loop {
                match state {
                    SKIP_RECV => {
                        self.land_on_skip(&self.skipped_recvs);
                        // SAFETY: we wrote it and nobody took it.
                        msg = unsafe { cell.read() };
                        continue 'index;
                    }
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(&cell.state, word, SKIP_RECV, false) {
                            Claim::Won { waiter, slot } => {
                                // SAFETY: the value in our cell is ours, and the
                                // decided waiter's slot is ours to fill.
                                unsafe { (slot as *mut T).write(cell.read()) };
                                cell::finish(&cell.state, DONE, waiter);
                                return Ok(());
                            }
                            Claim::Gone => state = SKIP_RECV,
                            Claim::Moved(s) => state = s,
                        }
                    }
                    other => unreachable!("send found cell in state {other}"),
                }
            }
        }
    }

    fn send_rendezvous(&self, mut msg: T, wait: Wait) -> Result<(), (T, Fail)> {
        'index: loop {
            if let Wait::Try = wait {
                // Read only: S, then R. If no receiver has started beyond the
                // senders when we read R, none was waiting at that instant.
                let s = self.senders.load(Ordering::Acquire);
                if s & CLOSED_BIT != 0 {
                    return Err((msg, Fail::Closed));
                }
                if count(s) >= self.receivers.load(Ordering::Acquire) {
                    return Err((msg, Fail::WouldBlock));
                }
            }
            let mut guard = epoch::pin();
            let start = self.cells.cursor(Side::Push, &guard);
            let s = self.senders.fetch_add(1, Ordering::Relaxed);
            if s & CLOSED_BIT != 0 {
                return Err((msg, Fail::Closed));
            }
            let seg = self.cells.find(Side::Push, start, s, &guard);
            let cell = seg.cell(s);
            let mut state = cell.state.load(Ordering::Acquire);
            loop {
                match state {
                    SKIP_RECV => {
                        self.land_on_skip(&self.skipped_recvs);
                        continue 'index;
                    }
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(&cell.state, word, SKIP_RECV, false) {
                            Claim::Won { waiter, slot } => {
                                // SAFETY: the decided waiter's slot is ours to fill.
                                unsafe { (slot as *mut T).write(msg) };
                                cell::finish(&cell.state, DONE, waiter);
                                return Ok(());
                            }
                            Claim::Gone => state = SKIP_RECV,
                            Claim::Moved(s) => state = s,
                        }
                    }
                    EMPTY => match wait {
                        Wait::Try => {
                            // The receiver took its index but has not parked
                            // yet: give it a moment, then give the index up.
                            match give_up(&cell.state, SKIP_SEND, &self.skipped_sends) {
                                Ok(()) => continue 'index,
                                Err(s) => state = s,
                            }
                        }
                        Wait::Until(deadline) => {
                            let mut slot = MaybeUninit::new(msg);
                            match self.park_in(
                                seg,
                                &cell.state,
                                true,
                                slot.as_mut_ptr() as *mut (),
                                s,
                                deadline,
                                guard,
                            ) {
                                // The receiver took the value out of our slot.
                                Ok(()) => return Ok(()),
                                Err(ParkFail::Lost(s, g)) => {
                                    // SAFETY: the entry never became visible.
                                    msg = unsafe { slot.assume_init_read() };
                                    guard = g;
                                    state = s;
                                }
                                Err(ParkFail::Fail(fail)) => {
                                    // SAFETY: not taken: decided CLOSED or withdrawn.
                                    return Err((unsafe { slot.assume_init_read() }, fail));
                                }
                            }
                        }
                    },
                    CLAIMED => state = cell::wait_unclaimed(&cell.state),
                    other => unreachable!("rendezvous send found cell in state {other}"),
                }
            }
        }
    }

    // ---------------------------------------------------------------- recv

    pub(crate) fn recv(&self, wait: Wait) -> RecvResult<T> {
        'index: loop {
            if let Wait::Try = wait {
                // Decide "empty" and "closed and drained" from reads alone.
                // R first, then S: if S <= R when S is read, every message
                // sent so far has a receiver, so the channel was empty at
                // that instant. Go (seed 000) reads the closed flag between
                // two emptiness checks because its flag and its count are two
                // words; here the closed bit lives in S, so the one load of S
                // sees "empty" and "closed" at the same instant, and a message
                // sent before the close is always counted in it.
                let r = self.receivers.load(Ordering::Acquire);
                let s = self.senders.load(Ordering::Acquire);
                if count(s) <= r {
                    return Err(if s & CLOSED_BIT != 0 {
                        Fail::Closed
                    } else {
                        Fail::WouldBlock
                    });
                }
            }
            let mut guard = epoch::pin();
            let start = self.cells.cursor(Side::Pop, &guard);
            let r = self.receivers.fetch_add(1, Ordering::Relaxed);
            let seg = self.cells.find(Side::Pop, start, r, &guard);
            let cell = seg.cell(r);
            let mut state = cell.state.load(Ordering::Acquire);
            loop {
                match state {
                    BUFFERED => {
                        // SAFETY: BUFFERED (read with Acquire) means the
                        // sender's value is in the slot, and index `r` is ours.
                        let msg = unsafe { cell.read() };
                        // Relaxed: nobody reads a DONE cell's slot.
                        cell.state.store(DONE, Ordering::Relaxed);
                        return Ok(self.received(msg));
                    }
                    SKIP_SEND => {
                        self.land_on_skip(&self.skipped_sends);
                        continue 'index;
                    }
                    word if cell::is_entry(word) && self.is_closed() => {
                        // A parked sender's send has not completed, and the
                        // channel is closed: it gets its message back.
                        if semaphore::close_entry(&cell.state, word, SKIP_SEND) {
                            self.skipped_sends.fetch_add(1, Ordering::Relaxed);
                        }
                        state = cell::wait_unclaimed(&cell.state);
                    }
                    word if cell::is_entry(word) => {
                        match cell::claim_waiter(&cell.state, word, SKIP_SEND, false) {
                            Claim::Won { waiter, slot } => {
                                // SAFETY: the decided sender's value is ours.
                                let msg = unsafe { (slot as *mut T).read() };
                                cell::finish(&cell.state, DONE, waiter);
                                return Ok(self.received(msg));
                            }
                            Claim::Gone => state = SKIP_SEND,
                            Claim::Moved(s) => state = s,
                        }
                    }
                    CLAIMED => state = cell::wait_unclaimed(&cell.state),
                    EMPTY => {
                        let s = self.senders.load(Ordering::Acquire);
                        if self.closed_at(s).is_some_and(|at| r >= at) {
                            // No send will ever take this index.
                            return Err(Fail::Closed);
                        }
                        match wait {
                            Wait::Try => {
                                // The sender took its index but has not
                                // written yet: wait a moment, then give up.
                                match give_up(&cell.state, SKIP_RECV, &self.skipped_recvs) {
                                    Ok(()) => continue 'index,
                                    Err(s) => state = s,
                                }
                            }
                            Wait::Until(deadline) => {
                                let mut slot = MaybeUninit::<T>::uninit();
                                match self.park_in(
                                    seg,
                                    &cell.state,
                                    false,
                                    slot.as_mut_ptr() as *mut (),
                                    r,
                                    deadline,
                                    guard,
                                ) {
                                    // SAFETY: the sender wrote our slot before waking us.
                                    Ok(()) => {
                                        return Ok(self.received(unsafe { slot.assume_init() }))
                                    }
                                    Err(ParkFail::Lost(s, g)) => {
                                        guard = g;
                                        state = s;
                                    }
                                    Err(ParkFail::Fail(fail)) => return Err(fail),
                                }
                            }
                        }
                    }
                    other => unreachable!("recv found cell in state {other}"),
                }
            }
        }
    }

    #[inline]
    fn received(&self, msg: T) -> T {
        if let Kind::Bounded { permits, .. } = &self.kind {
            permits.release();
        }
        msg
    }

    /// Parks the caller in `cell` (index `index`), whose value moves through
    /// `slot`. Consumes the pin: a parked thread must not stall reclamation,
    /// so it keeps its segment alive with a reference instead.
    #[allow(clippy::too_many_arguments)]
    fn park_in(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicUsize,
        sender: bool,
        slot: *mut (),
        index: u64,
        deadline: Option<std::time::Instant>,
        guard: epoch::Guard,
    ) -> Result<(), ParkFail> {
        let waiter = Waiter::new();
        let entry = Entry {
            waiter: &waiter,
            case: 0,
            slot,
        };
        let word = cell::entry_word(&entry, sender);
        seg.acquire_ref();
        // Release publishes the entry (and, for a sender, its value).
        if let Err(s) = state.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Acquire) {
            // SAFETY: our own reference, taken above; `guard` still pins `seg`.
            unsafe { Segment::release_ref(seg) };
            return Err(ParkFail::Lost(s, guard));
        }
        let seg_ptr: *const Segment<Cell<T>> = seg;
        drop(guard);
        let skip = if sender { SKIP_SEND } else { SKIP_RECV };
        // Dekker with `close`: our entry store, then the closed check; the
        // closer sets the bit, then scans for entries. One sees the other.
        fence(Ordering::SeqCst);
        let s = self.senders.load(Ordering::Relaxed);
        let hopeless = self.closed_at(s).is_some_and(|at| sender || index >= at);
        let result = if hopeless && waiter.try_abort() {
            cell::withdraw(state, word, skip);
            if sender {
                self.skipped_sends.fetch_add(1, Ordering::Relaxed);
            }
            Err(ParkFail::Fail(Fail::Closed))
        } else {
            match waiter.wait(deadline) {
                Outcome::Selected(_) => Ok(()),
                Outcome::Closed => Err(ParkFail::Fail(Fail::Closed)),
                Outcome::TimedOut => {
                    cell::withdraw(state, word, skip);
                    let skipped = if sender {
                        &self.skipped_sends
                    } else {
                        &self.skipped_recvs
                    };
                    skipped.fetch_add(1, Ordering::Relaxed);
                    Err(ParkFail::Fail(Fail::Timeout))
                }
            }
        };
        // SAFETY: the reference taken above; our entry has left the cell.
        unsafe { Segment::release_ref(seg_ptr) };
        result
    }

    /// A partner gave up this index before we arrived: settle the count.
    #[inline]
    fn land_on_skip(&self, skipped: &AtomicU64) {
        skipped.fetch_sub(1, Ordering::Relaxed);
    }

    // --------------------------------------------------------------- close

    /// Closes the channel; `true` if this call closed it.
    pub(crate) fn close(&self) -> bool {
        let prev = self.senders.fetch_or(CLOSED_BIT, Ordering::SeqCst);
        if prev & CLOSED_BIT != 0 {
            return false;
        }
        let closed_at = count(prev);
        // Release: pairs with the Acquire in `Channel::closed_at`.
        self.closed_at.store(closed_at, Ordering::Release);
        // Dekker with `park_in`: the bit, then the scan for entries.
        fence(Ordering::SeqCst);
        let guard = epoch::pin();
        let r = self.receivers.load(Ordering::Relaxed);
        match &self.kind {
            Kind::Rendezvous => {
                // Parked senders anywhere, parked receivers from `closed_at`.
                let lo = r.min(closed_at);
                self.cells.visit(lo, r.max(closed_at), &guard, |cell| {
                    let word = cell.state.load(Ordering::Acquire);
                    if cell::is_entry(word)
                        && word & cell::SENDER_TAG != 0
                        && semaphore::close_entry(&cell.state, word, SKIP_SEND)
                    {
                        self.skipped_sends.fetch_add(1, Ordering::Relaxed);
                    }
                });
                self.close_receivers(closed_at, r, &guard);
            }
            Kind::Unbounded => self.close_receivers(closed_at, r, &guard),
            Kind::Bounded { permits, .. } => {
                self.close_receivers(closed_at, r, &guard);
                permits.close_waiters();
            }
        }
        true
    }

    fn close_receivers(&self, closed_at: u64, r: u64, guard: &epoch::Guard) {
        self.cells.visit(closed_at, r, guard, |cell| {
            let word = cell.state.load(Ordering::Acquire);
            if cell::is_entry(word) && word & cell::SENDER_TAG == 0 {
                semaphore::close_entry(&cell.state, word, SKIP_RECV);
            }
        });
    }

    /// Closes and drops every buffered message (the last receiver is gone).
    pub(crate) fn close_and_drain(&self) {
        self.close();
        while let Ok(msg) = self.recv(Wait::Try) {
            drop(msg);
        }
    }
}

/// Why `park_in` did not complete the operation.
enum ParkFail {
    /// The cell changed before the entry was published: re-examine it
    /// (still pinned by the returned guard).
    Lost(usize, epoch::Guard),
    Fail(Fail),
}

/// A non-blocking operation found its cell EMPTY: the partner is between
/// its fetch-and-add and its CAS. Spins briefly for it, then gives the index
/// up (the cell becomes `skip`, counted in `skipped`). `Err(state)`: the
/// partner arrived; settle the cell in that state instead.
#[inline]
fn give_up(state: &AtomicUsize, skip: usize, skipped: &AtomicU64) -> Result<(), usize> {
    let backoff = Backoff::new();
    for _ in 0..4 {
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

impl<T> Drop for Channel<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no handle, so no operation, exists.
        unsafe {
            self.cells.for_each_cell_exclusive(|cell| {
                if cell.state.load(Ordering::Relaxed) == BUFFERED {
                    cell.state.store(DONE, Ordering::Relaxed);
                    drop(cell.read());
                }
            });
        }
    }
}
