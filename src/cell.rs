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
//! A partner landing on a `SKIP_*` cell marks it `DONE` by CAS, abandons its
//! index and takes a new one; the skip counters keep `len()` exact. Until
//! then the skip may be taken over by a new waiter of the side that left
//! it (`SKIP_* ──CAS──▶ entry`, see `Channel::adopt_skip`), or held
//! `CLAIMED` by a withdrawer passing it for the partner (`pass_skips`):
//! every claim on a skip is a CAS from it, so exactly one succeeds.
//!
//! A semaphore cell holds no value: `BUFFERED` is a permit left before its
//! waiter came, `SKIP_SEND` a waiter that gave up owing its permit (the
//! releaser landing there pays it), and `WITHDRAWN` one that gave up and
//! took its debt back (passed for free, or taken over by the next waiter
//! to queue).
//!
//! A select with both a send and a receive case on one rendezvous channel
//! cannot take an index on each side when the two counters are equal: both
//! would land in the same cell, where the select would meet itself. It
//! parks a *duplex* entry instead (tag `DUPLEX_TAG`, a pair of entries) in
//! the cell both counters point at, without taking either index. Whichever
//! partner comes first pairs with the half of its kind and leaves the cell
//! marked for the other side to skip; a duplex that goes away unused leaves
//! the cell `EMPTY`, as it found it.
//!
//! [`Entry`]: crate::waiter::Entry

use crate::loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use crate::loom::{Backoff, SpinLoad};
use crate::segment::give_back;
use crate::waiter::{decision, Entry, Waiter};

/// A cell's state: one of the constants below, or a pointer to a waiter's
/// [`Entry`] (or a [`Duplex`]) with tag bits in its low bits. A pointer,
/// not an integer: an entry read back from a cell keeps the provenance it
/// was published with, so no integer-to-pointer cast is needed and Miri
/// checks each access to the entry against the frame it lives in (with
/// an integer word it could only guess, from every exposed allocation).
/// The constants are addresses without provenance (never dereferenced),
/// and a pointer to an entry is never one of them (entries are aligned
/// to 8).
pub(crate) type Word = *mut u8;

/// The atomic cell word.
pub(crate) type AtomicWord = AtomicPtr<u8>;

/// Nobody has arrived.
pub(crate) const EMPTY: Word = std::ptr::without_provenance_mut(0);
/// A value sits in the cell's slot (or, in a semaphore, a permit).
pub(crate) const BUFFERED: Word = std::ptr::without_provenance_mut(1);
/// Both sides are finished with the cell.
pub(crate) const DONE: Word = std::ptr::without_provenance_mut(2);
/// A partner or closer holds the cell while it deals with the entry.
pub(crate) const CLAIMED: Word = std::ptr::without_provenance_mut(3);
/// The send side of this index gave up: the receiver skips the cell.
pub(crate) const SKIP_SEND: Word = std::ptr::without_provenance_mut(4);
/// The receive side of this index gave up: the sender skips the cell.
pub(crate) const SKIP_RECV: Word = std::ptr::without_provenance_mut(5);
/// A semaphore waiter gave up and took its debt back out of the permit
/// count: nobody is owed this cell, and a releaser passes it without
/// spending its permit, unless a new waiter took it over first (see
/// `semaphore.rs`).
pub(crate) const WITHDRAWN: Word = std::ptr::without_provenance_mut(6);

/// Tag bit on an entry pointer published by a sender.
pub(crate) const SENDER_TAG: usize = 1;
/// Tag bit on a pointer to a [`Duplex`] pair of entries.
pub(crate) const DUPLEX_TAG: usize = 2;

#[inline]
pub(crate) fn is_entry(state: Word) -> bool {
    state.addr() >= 8
}

/// The receive half (index 0) and send half (index 1) of a select's duplex
/// registration on one rendezvous channel (see the module docs).
#[derive(Debug)]
#[repr(align(8))]
pub(crate) struct Duplex(pub(crate) [Entry; 2]);

#[inline]
pub(crate) fn duplex_word(pair: &Duplex) -> Word {
    (pair as *const Duplex as Word).map_addr(|a| a | DUPLEX_TAG)
}

/// Who is claiming a waiter's entry, which decides the half of a duplex it
/// takes and what the cell becomes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Claimer {
    /// A sender (or a semaphore releaser): takes a receiver's entry.
    Sender,
    /// A receiver: takes a sender's entry.
    Receiver,
    /// A closer: fails the waiter's send (or receive) case.
    Closer,
}

#[inline]
pub(crate) fn entry_word(entry: &Entry, sender: bool) -> Word {
    (entry as *const Entry as Word).map_addr(|a| a | sender as usize)
}

#[inline]
pub(crate) fn entry_ptr(state: Word) -> *const Entry {
    debug_assert_eq!(state.addr() & DUPLEX_TAG, 0);
    state.map_addr(|a| a & !SENDER_TAG).cast()
}

/// Moves a cell holding `word` (an entry) to `CLAIMED`. Acquire: the entry's
/// fields, written before it was published, are visible.
#[inline]
pub(crate) fn claim(state: &AtomicWord, word: Word) -> Result<(), Word> {
    state
        .compare_exchange(word, CLAIMED, Ordering::Acquire, Ordering::Acquire)
        .map(|_| ())
}

/// What [`claim_waiter`] found.
pub(crate) enum Claim<'a> {
    /// The waiter is ours: move the value through `slot` (a
    /// `*mut MaybeUninit<T>` of the cell's `T`), then [`finish`] with `end`.
    Won {
        waiter: &'a Waiter,
        slot: *mut (),
        end: Word,
    },
    /// The waiter was already decided (it timed out, or was closed, or is a
    /// select still registering); the cell is now `skip` (`EMPTY` for a
    /// duplex, whose indices were never taken).
    Gone(Word),
    /// The cell changed before we could claim it; this is its new state.
    Moved(Word),
}

/// A partner (or, as [`Claimer::Closer`], a closer) takes the waiter whose
/// entry `word` it read from `state`: claims the cell, then decides the
/// waiter for the entry's case. A lost decision leaves `skip` in the cell.
/// A won claim ends with `end`: `DONE` for a partner, `skip` for a closer.
#[inline]
pub(crate) fn claim_waiter<'a>(
    state: &AtomicWord,
    word: Word,
    by: Claimer,
    skip: Word,
) -> Claim<'a> {
    if let Err(now) = claim(state, word) {
        return Claim::Moved(now);
    }
    let (entry, done, skip) = if word.addr() & DUPLEX_TAG == 0 {
        (entry_ptr(word), DONE, skip)
    } else {
        // A sender pairs with the receive half; the receiver of this index
        // must then skip the cell (and the other way round). A closer fails
        // the send half: a send on a closed channel is always ready, while a
        // receive may still be owed a message sent before the close.
        let pair: *const Duplex = word.map_addr(|a| a & !(DUPLEX_TAG | SENDER_TAG)).cast();
        let (half, done) = match by {
            Claimer::Sender => (0, SKIP_SEND),
            Claimer::Receiver => (1, SKIP_RECV),
            Claimer::Closer => (1, EMPTY),
        };
        // SAFETY: claimed, so the pair is alive (as for any entry below).
        (unsafe { &(*pair).0[half] } as *const Entry, done, EMPTY)
    };
    // SAFETY: we hold the claim, so the entry's owner cannot return (see
    // `withdraw`) and the entry is alive until we release the cell.
    let (waiter, case, slot) = unsafe { (&*(*entry).waiter, (*entry).case, (*entry).slot) };
    let closed = by == Claimer::Closer;
    // A closer does not wait for a registering select: the select sees the
    // close when it looks at its cells again.
    if waiter.try_decide(decision(case, closed), !closed) {
        Claim::Won {
            waiter,
            slot,
            end: if closed { skip } else { done },
        }
    } else {
        // Release: a withdrawing owner waits for this store.
        state.store(skip, Ordering::Release);
        Claim::Gone(skip)
    }
}

/// Closes the waiter whose entry `word` was read from `state`; `skip` marks
/// the cell. Returns whether this call decided the waiter. If the cell moved
/// on (a partner claimed it, or the owner withdrew), there is nothing to do:
/// an entry published after the closer's fence sees the closed bit itself.
pub(crate) fn close_entry(state: &AtomicWord, word: Word, skip: Word) -> bool {
    match claim_waiter(state, word, Claimer::Closer, skip) {
        Claim::Won { waiter, end, .. } => {
            finish(state, end, waiter);
            true
        }
        Claim::Gone(_) | Claim::Moved(_) => false,
    }
}

/// Completes a won claim: releases the cell as `end` and wakes the waiter.
/// The waiter (and, for a closer, its cell's segment) may be gone after.
#[inline]
pub(crate) fn finish(state: &AtomicWord, end: Word, waiter: &Waiter) {
    // Release: a withdrawing owner, or a receiver spinning on CLAIMED, reads
    // the cell after us.
    state.store(end, Ordering::Release);
    waiter.wake();
}

/// The owner of an aborted entry takes it out of its cell, leaving `skip`.
/// If a partner or closer holds the cell, waits for it to let go (it then
/// writes `skip` itself, having lost the waiter's state CAS): the entry lives
/// on the owner's stack and must outlive every reader.
pub(crate) fn withdraw(state: &AtomicWord, word: Word, skip: Word) {
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
pub(crate) fn wait_unclaimed(state: &AtomicWord) -> Word {
    let backoff = Backoff::new();
    loop {
        let s = state.spin_load(Ordering::Acquire);
        if s != CLAIMED {
            return s;
        }
        backoff.snooze();
    }
}

/// A blocked operation's entry, published where its partners find it, until
/// its owner is done with it.
#[derive(Debug)]
pub(crate) enum Registration {
    /// In a cell.
    Cell(InCell),
    /// In a wait list (zero-sized messages, see `counting.rs`; a select's
    /// timer case, see `timer.rs`): the list's
    /// owner, the entry word, and the call that checks (`remove` false) or
    /// takes out (`remove` true) the entry.
    Listed {
        owner: *const (),
        word: Word,
        op: ListOp,
    },
}

/// `op(owner, word, remove)`: see [`Registration::Listed`].
pub(crate) type ListOp = unsafe fn(*const (), Word, bool) -> bool;

impl From<InCell> for Registration {
    fn from(reg: InCell) -> Self {
        Registration::Cell(reg)
    }
}

impl Registration {
    /// An entry `word` waiting in `owner`'s list (see
    /// [`Registration::Listed`]). Completing it releases nothing.
    ///
    /// # Safety
    /// `op(owner, ..)` must be sound to call while the registration lives.
    pub(crate) unsafe fn listed(owner: *const (), word: Word, op: ListOp) -> Self {
        Registration::Listed { owner, word, op }
    }

    /// Whether the entry is still where it was published (a partner that
    /// met its owner still registering took it out).
    pub(crate) fn is_live(&self) -> bool {
        match *self {
            Registration::Cell(ref reg) => reg.is_live(),
            // SAFETY: per `listed`.
            Registration::Listed { owner, word, op } => unsafe { op(owner, word, false) },
        }
    }

    /// A partner completed the operation through this entry.
    pub(crate) fn complete(self) {
        if let Registration::Cell(reg) = self {
            reg.complete();
        }
    }

    /// Takes the entry out unused (see [`InCell::cancel`]).
    pub(crate) fn cancel(self) {
        match self {
            Registration::Cell(reg) => reg.cancel(),
            Registration::Listed { owner, word, op } => {
                // SAFETY: per `listed`.
                unsafe { op(owner, word, true) };
            }
        }
    }

    /// Takes the entry out of a cell where the same select's other case
    /// arrived (see [`InCell::cancel_met`]).
    pub(crate) fn cancel_met(self) {
        match self {
            Registration::Cell(reg) => reg.cancel_met(),
            listed => listed.cancel(),
        }
    }
}

/// An entry published in one cell. It holds a reference on the cell's
/// segment, so the cell outlives it (unless it is
/// [`InCell::unreferenced`]: then its owner's pin does, while it needs it).
#[derive(Debug)]
pub(crate) struct InCell {
    state: *const AtomicWord,
    word: Word,
    /// What the cell becomes when the entry is taken out unused.
    skip: Word,
    /// The skip counter that a withdrawn entry bumps (null: none).
    skipped: *const AtomicU64,
    /// The counter our cell's index came from, and the index: a withdrawn
    /// entry whose index is still the last one taken gives it back (null:
    /// never).
    taken_from: *const AtomicU64,
    index: u64,
    segment: *const (),
    release: unsafe fn(*const ()),
    /// Whether the registration holds the reference `release` drops (see
    /// [`InCell::unreferenced`]).
    referenced: bool,
    /// Called with its pointer after the entry left a cell the other side
    /// may pass (a skip; for a semaphore waiter, `WITHDRAWN`), not after a
    /// give-back: the channel's `pass_skips`, the semaphore's
    /// `pass_withdrawn`.
    after_skip: Option<Callback>,
    /// A semaphore waiter's permit count, in which its debt (one unit below
    /// zero) stands; null for a channel cell.
    debt: *const AtomicU64,
    /// A semaphore waiter's: called as `f(owner, segment, index)` after it
    /// handed its index back (see `Semaphore::give_back_withdrawn`).
    after_give_back: Option<(*const (), GiveBackOp)>,
}

/// `f(owner, segment, index)`: see `InCell::after_give_back`.
pub(crate) type GiveBackOp = unsafe fn(*const (), *const (), u64);

/// A function and the pointer it is called with.
type Callback = (*const (), unsafe fn(*const ()));

impl InCell {
    /// # Safety
    /// `state` is a cell of `segment`, on which the caller took a reference
    /// that `release(segment)` drops; `skipped` (if not null) outlives the
    /// registration; `word` is the entry the caller published in `state`.
    pub(crate) unsafe fn new(
        state: &AtomicWord,
        word: Word,
        skip: Word,
        skipped: Option<&AtomicU64>,
        taken_from: Option<(&AtomicU64, u64)>,
        segment: *const (),
        release: unsafe fn(*const ()),
    ) -> Self {
        let (taken_from, index) = taken_from.map_or((std::ptr::null(), 0), |(c, i)| (c, i));
        InCell {
            state,
            word,
            skip,
            skipped: skipped.map_or(std::ptr::null(), |c| c as *const AtomicU64),
            taken_from,
            index,
            segment,
            release,
            referenced: true,
            after_skip: None,
            debt: std::ptr::null(),
            after_give_back: None,
        }
    }

    /// The same registration for a semaphore waiter that owes one unit of
    /// `permits`: cancelling it takes the debt back when no releaser has
    /// counted on it yet, and then hands the index back to the waiter
    /// queue's `enq` if `give_back` names it (see [`InCell::cancel`]).
    ///
    /// # Safety
    /// `permits` and the counter of `give_back` outlive the registration.
    pub(crate) unsafe fn owing(
        mut self,
        permits: &AtomicU64,
        give_back: Option<(&AtomicU64, u64)>,
    ) -> Self {
        self.debt = permits;
        (self.taken_from, self.index) = give_back.map_or((std::ptr::null(), 0), |(c, i)| (c, i));
        self
    }

    /// The same registration, and a cancel that leaves a skip calls
    /// `f(owner)` afterwards.
    ///
    /// # Safety
    /// `f(owner)` must be sound to call while the registration lives.
    pub(crate) unsafe fn after_skip(mut self, owner: *const (), f: unsafe fn(*const ())) -> Self {
        self.after_skip = Some((owner, f));
        self
    }

    /// The same registration, and a cancel that hands the index back calls
    /// `f(owner, segment, index)` afterwards, while the segment is still
    /// referenced.
    ///
    /// # Safety
    /// `f(owner, ..)` must be sound to call while the registration lives.
    pub(crate) unsafe fn after_give_back(mut self, owner: *const (), f: GiveBackOp) -> Self {
        self.after_give_back = Some((owner, f));
        self
    }

    /// The same registration, without a reference on the segment: for an
    /// owner that does not touch the cell once decided (an untimed wait,
    /// which only completes), so the reference's two read-modify-writes on
    /// the segment's line are not needed (`Channel::park_untimed`).
    ///
    /// # Safety
    /// The caller took no reference for the registration, and keeps the
    /// cell's segment pinned while it may still cancel it; after that it
    /// only completes it ([`InCell::complete`] reads no cell).
    pub(crate) unsafe fn unreferenced(mut self) -> Self {
        self.referenced = false;
        self
    }

    /// Drops the segment reference, if the registration holds one.
    ///
    /// # Safety
    /// Once, when the registration is done with its cell.
    unsafe fn release_segment(&self) {
        if self.referenced {
            // SAFETY: per `new`, the reference is ours to drop.
            unsafe { (self.release)(self.segment) }
        }
    }

    /// The same registration, but cancelling it bumps no skip counter.
    pub(crate) fn uncounted(mut self) -> Self {
        self.skipped = std::ptr::null();
        self
    }

    fn state(&self) -> &AtomicWord {
        // SAFETY: our segment reference (or our owner's pin, see
        // `unreferenced`) keeps the cell alive.
        unsafe { &*self.state }
    }

    /// Whether the entry is still in its cell. Waits out a partner that has
    /// claimed it (it must then lose, the waiter being registering).
    pub(crate) fn is_live(&self) -> bool {
        match self.state().load(Ordering::Acquire) {
            CLAIMED => wait_unclaimed(self.state()) == self.word,
            s => s == self.word,
        }
    }

    /// The select completed through this entry: its partner already
    /// released the cell; drop the segment reference.
    pub(crate) fn complete(self) {
        // SAFETY: per `new`; the partner is finished with the cell.
        unsafe { self.release_segment() };
    }

    /// Takes the entry out of its cell unused (or finds a partner skipped
    /// it), settles the skip count, and drops the segment reference. The
    /// waiter must already be decided or aborted, or still registering.
    ///
    /// A waiter that gives up on a quiet channel (a select's `quit` case, a
    /// polling `recv_timeout`) would otherwise leave one skipped cell per
    /// attempt, and the segments between the two sides' cursors would pile
    /// up with nobody to pass them. So when no later index has been taken on
    /// our side, the index goes back: we hold the cell (`CLAIMED`, which a
    /// partner arriving meanwhile waits out), move the counter back by CAS,
    /// and leave the cell `EMPTY`, as if we had never come. A partner that
    /// took the same index from the other side then finds it empty and
    /// proceeds normally; the next operation on our side takes the index.
    /// (Not on a rendezvous channel, whose select duplexes need counters
    /// that never move back: see `Channel::registration`.)
    pub(crate) fn cancel(self) {
        if !self.debt.is_null() {
            return self.cancel_debt();
        }
        if !self.taken_from.is_null() && claim(self.state(), self.word).is_ok() {
            // SAFETY: per `new`, the counter outlives the registration.
            let given_back = give_back(unsafe { &*self.taken_from }, self.index);
            // Release: pairs with the Acquire of whoever waits on CLAIMED.
            self.state().store(
                if given_back { EMPTY } else { self.skip },
                Ordering::Release,
            );
            if given_back {
                // SAFETY: per `new`; the entry has left the cell.
                unsafe { self.release_segment() };
                return;
            }
        } else {
            withdraw(self.state(), self.word, self.skip);
        }
        if !self.skipped.is_null() {
            // SAFETY: per `new`.
            unsafe { &*self.skipped }.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: per `new`; the entry has left the cell.
        unsafe { self.release_segment() };
        self.call_after_skip();
    }

    /// Takes the entry out of a cell whose other index the same select's
    /// other case took (a select met itself on a rendezvous channel): no
    /// one else will ever come to the cell, so it is left `DONE`, with no
    /// skip to count or pass, and above all no skip that a later waiter
    /// could take over and wait in for a partner that never comes (see
    /// `Channel::adopt_skip`). If a closer holds the cell, as `cancel`.
    pub(crate) fn cancel_met(self) {
        if self.debt.is_null()
            && self
                .state()
                .compare_exchange(self.word, DONE, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // SAFETY: per `new`; the entry has left the cell.
            return unsafe { self.release_segment() };
        }
        self.cancel()
    }

    /// [`InCell::cancel`] for a semaphore waiter (see [`owing`]).
    ///
    /// A skipped semaphore cell carries its waiter's debt: the releaser
    /// that lands there pays it with its permit (and releases again), so
    /// nobody else may pass it, and while nobody releases (a full channel
    /// whose receiver is stuck, senders timing out in a loop) such cells
    /// would pile up. So the waiter first takes its debt back: holding its
    /// cell (`CLAIMED`), it adds one to `permits` by CAS, only while they
    /// are negative. Negative means some debt is not yet counted on by a
    /// releaser (a releaser's fetch-and-add decides how many cells it
    /// serves before it takes any), so one fewer cell needs serving, and
    /// any debt will do: releasers serve cells in order and pass the
    /// withdrawn ones without counting them. Then, as on a channel, the
    /// index goes back if it is still the last one taken (the cell is left
    /// `EMPTY`); otherwise the cell is left `WITHDRAWN`, which anyone may
    /// pass. With no debt to take back (every waiter is already counted
    /// on), the cell is left a skip for the releaser on its way.
    ///
    /// [`owing`]: InCell::owing
    fn cancel_debt(self) {
        if claim(self.state(), self.word).is_err() {
            // A releaser or closer holds the cell; having lost the waiter,
            // it leaves a skip (and a releaser pays the debt with it).
            withdraw(self.state(), self.word, self.skip);
            // SAFETY: per `new`; the entry has left the cell.
            return unsafe { self.release_segment() };
        }
        // SAFETY: per `owing`.
        let (permits, enq) = unsafe { (&*self.debt, self.taken_from.as_ref()) };
        // Relaxed: nothing is published through the count; a read-modify-
        // write keeps the release sequences of the receivers' adds intact.
        let took_back = permits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                ((p as i64) < 0).then_some(p.wrapping_add(1))
            })
            .is_ok();
        let end = if !took_back {
            self.skip
        } else if enq.is_some_and(|enq| give_back(enq, self.index)) {
            EMPTY
        } else {
            WITHDRAWN
        };
        // Release: pairs with the Acquire of whoever waits on CLAIMED (a
        // releaser that took this index, or the acquirer that takes it
        // again after a give-back).
        self.state().store(end, Ordering::Release);
        if end == EMPTY {
            if let Some((owner, f)) = self.after_give_back {
                // SAFETY: per `after_give_back`; our segment reference is
                // still held.
                unsafe { f(owner, self.segment, self.index) };
            }
        }
        // SAFETY: per `new`; the entry has left the cell.
        unsafe { self.release_segment() };
        if end == WITHDRAWN {
            self.call_after_skip();
        }
    }

    fn call_after_skip(&self) {
        if let Some((owner, f)) = self.after_skip {
            // SAFETY: per `after_skip`.
            unsafe { f(owner) };
        }
    }
}
