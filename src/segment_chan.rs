//! The channel: fetch-and-add over an infinite array of cells (seed 004).
//!
//! Send number `i` and receive number `i` meet in cell `i`: each side takes
//! its index from its counter (`senders`, `receivers`;
//! [`take_index`](crate::loom::take_index): one CAS, or a fetch-and-add
//! after a short wait if that lost a race) and then settles the cell with
//! one CAS (see [`crate::cell`] for the state
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
//! **Closing** sets bit 63 of `senders` with a CAS, having first published
//! the count under it in `closed_at` (so whoever sees the bit can read the
//! count at once, never waiting on a closer that was preempted in
//! between): every later send sees the bit in the increment that took its
//! index and fails, receivers take indices below `closed_at` (every message
//! sent before the close) and report `Closed` from then on. Just before,
//! the closer sets bit 63 of `receivers` too,
//! which stops receivers that time out from handing their index back (see
//! `Channel::close`). The closer then wakes the parked threads that can
//! never be served: receivers at indices `>= closed_at`, parked rendezvous
//! senders, and senders waiting for a permit; they get `Closed` (senders
//! with their message).
//!
//! **Failing non-blocking operations** read and never write: `try_recv`
//! on an empty or closed-and-drained channel reads `receivers`, then
//! `senders` (`nothing_to_receive`); `try_send` on a full channel reads the
//! permits (bounded) or `senders`, then `receivers` (rendezvous)
//! (`nothing_to_send`). Both checks are inlined where the operation is
//! called, ahead of the operation proper.
//!
//! The paths live in submodules, each an `impl` block of [`Channel`]:
//! `send` and `recv` (short paths and general ones), `park` (a waiter in a
//! cell: publishing, the closed check, taking over a given-up cell,
//! waiting, passing skips), `duplex` (a select's pair of cases on one
//! rendezvous channel), `close`, and `counted` (zero-sized messages).
//!
//! **Indices** are 63-bit counts: at one operation per nanosecond they wrap
//! after 292 years, so wrap-around is not handled.

use crate::cell::{
    self, AtomicWord, Claim, Claimer, Duplex, InCell, Registration, Word, BUFFERED, CLAIMED, DONE,
    DUPLEX_TAG, EMPTY, SENDER_TAG, SKIP_RECV, SKIP_SEND,
};
use crate::counting::{self, Counting, Moved};
use crate::epoch::{self, Domain};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::loom::{claim_index, claim_index_once, Backoff, CachePadded};
use crate::segment::{may_give_back, Segment, SegmentCell, Segments, Side, SEGMENT_CELLS};
use crate::semaphore::Semaphore;
use crate::waiter::{linger, spin, yield_until, Entry, Outcome, Parked, Waiter};
use crate::{Fail, Wait};
use std::mem::{self, MaybeUninit};
use std::ptr;
use std::time::Instant;

mod close;
mod counted;
mod duplex;
mod park;
mod recv;
mod send;

use counted::conjure;
use park::ParkFail;

const CLOSED_BIT: u64 = 1 << 63;

/// The count in a `senders` or `receivers` word, without the closed bit.
#[inline]
fn count(counter: u64) -> u64 {
    counter & !CLOSED_BIT
}

/// One cell: a state word and room for one buffered value. Zero-sized `T`
/// makes the slot vanish, so a `bounded::<()>(n)` cell is one word.
pub(crate) struct Cell<T> {
    state: AtomicWord,
    slot: UnsafeCell<MaybeUninit<T>>,
}

impl<T> SegmentCell for Cell<T> {
    unsafe fn init(slot: *mut Self) {
        #[cfg(not(loom))]
        // SAFETY: per the trait contract. The slot may stay uninitialised
        // (it is a `MaybeUninit`), so a large `T` is never written here.
        unsafe {
            std::ptr::addr_of_mut!((*slot).state).write(AtomicWord::new(EMPTY));
        }
        #[cfg(loom)]
        // SAFETY: per the trait contract (loom must build its cell tracker).
        unsafe {
            slot.write(Cell {
                state: AtomicWord::new(EMPTY),
                slot: UnsafeCell::new(MaybeUninit::uninit()),
            })
        }
    }
}

impl<T> Cell<T> {
    /// Copies the value at `msg` into the slot.
    ///
    /// # Safety
    /// The caller owns the slot (it took this cell's send index), and `msg`
    /// is valid for a read of a `T`.
    #[inline]
    unsafe fn write_from(&self, msg: *const T) {
        // SAFETY: exclusive per the contract; a cell never overlaps `msg`.
        self.slot
            .with_mut(|p| unsafe { ptr::copy_nonoverlapping(msg, (*p).as_mut_ptr(), 1) });
    }

    /// Drops the value in the slot.
    ///
    /// # Safety
    /// The slot holds a value the caller owns (it saw BUFFERED).
    #[inline]
    unsafe fn drop_value(&self) {
        // SAFETY: initialised and owned per the contract.
        self.slot.with_mut(|p| unsafe { (*p).assume_init_drop() })
    }

    /// Moves the value out to `out` without a copy on the stack.
    ///
    /// # Safety
    /// The slot holds a value the caller owns (it saw BUFFERED); `out` is
    /// valid for a write of a `T`.
    #[inline]
    unsafe fn read_into(&self, out: *mut T) {
        // SAFETY: initialised and owned per the contract; `out` is valid
        // and cannot overlap a cell.
        self.slot
            .with(|p| unsafe { ptr::copy_nonoverlapping((*p).as_ptr(), out, 1) })
    }
}

/// The kinds of channel.
// One per channel, inside its single allocation: boxing the semaphore would
// only add a pointer chase to every bounded send. `repr(u8)` gives the enum
// a defined layout (the Reference's "primitive representation": a union of
// `repr(C)` structs, one per variant, each led by the tag), so that
// `Channel::init_at` can build the `Bounded` variant in place through
// `BoundedInPlace`: built on the stack and moved, its 320-byte semaphore
// cost a `memcpy` that stalled on the stores just made (an eighth of the
// time of creating, using and dropping a `bounded(1)`).
#[allow(clippy::large_enum_variant)]
#[repr(u8)]
enum Kind {
    Unbounded = 0,
    Rendezvous = 1,
    // Built only in place, by `Channel::init_at`.
    #[allow(dead_code)]
    Bounded {
        cap: usize,
        permits: Semaphore,
    } = BOUNDED_TAG,
    /// Zero-sized messages, bounded or not (`cap`), except rendezvous:
    /// a count instead of cells (see `counting.rs`).
    Counting {
        cap: Option<usize>,
        count: Counting,
    } = 3,
}

/// `Kind::Bounded`'s tag.
const BOUNDED_TAG: u8 = 2;

/// The layout of `Kind::Bounded` under `repr(u8)`: the tag, then the
/// variant's fields in order, as a `repr(C)` struct.
#[repr(C)]
struct BoundedInPlace {
    tag: u8,
    cap: usize,
    permits: Semaphore,
}

const _: () = assert!(
    mem::size_of::<BoundedInPlace>() <= mem::size_of::<Kind>()
        && mem::align_of::<BoundedInPlace>() <= mem::align_of::<Kind>()
);

pub(crate) struct Channel<T> {
    /// Sends started; bit 63: closed.
    senders: CachePadded<AtomicU64>,
    /// Receives started, and the receivers' backlog hint, on one line.
    receivers: CachePadded<Receivers>,
    /// The send count when the channel closed, plus one (0: no close has
    /// begun). Sends that fail after the close still bump the count in
    /// `senders`, so the count under the closed bit is not frozen; this is.
    /// A closer raises it to the count it is about to close at before its
    /// CAS sets the bit, so the value is final once the bit is set; read it
    /// only through [`Channel::closed_at`], after seeing the bit.
    closed_at: AtomicU64,
    /// Send indices given up (a receive landing on them skips them) less
    /// those already skipped; keeps `len()` exact. Touched only on the
    /// cancellation and skip paths.
    /// (Not padded: written only when operations give up.)
    skipped_sends: AtomicU64,
    /// The same for receive indices.
    skipped_recvs: AtomicU64,
    /// Selects with a duplex (a send and a receive case on this rendezvous
    /// channel) parked, or about to be, in the cell both counts point at,
    /// where no index leads: a `try_send` or `try_recv` that finds the
    /// counts equal reads this, and if it is not zero takes an index to
    /// meet the duplex. Written only by such selects.
    duplexes: AtomicU64,
    /// Per side (`Side as usize`): set when a waiter of that side withdraws
    /// and leaves a skip, cleared by a waiter that looked for such a cell
    /// to take over and found none. A hint that spares waiters the look
    /// while nobody gives up (see `adopt_skip`).
    maybe_skipped: [AtomicBool; 2],
    /// Declared before `cells`, so dropped first: a bounded channel's
    /// permit queue pins in the domain of `cells`, which must outlive it.
    kind: Kind,
    cells: Segments<Cell<T>>,
}

/// The receivers' side of a channel: what receives write, on a line of its
/// own. Aligned so that the two words never straddle two lines: a failing
/// `try_recv` reads both.
#[repr(C, align(16))]
struct Receivers {
    /// Receives started; bit 63: closed (set just before the bit in
    /// `senders`; see `close`).
    count: AtomicU64,
    /// Set when a `try_recv` (or a select's try that gives up when nothing
    /// is ready) found more than one message to receive, cleared when one
    /// that relied on it found none at the cursor: while it is set, such a
    /// try takes the message at the cursor before it reads `senders`. A
    /// hint, read and written Relaxed; written only when it changes.
    /// (See `Channel::recv_to`.)
    backlog: AtomicBool,
}

// SAFETY: values move between threads only through the cell protocol; the
// channel owns buffered values of type `T: Send`.
unsafe impl<T: Send> Send for Channel<T> {}
// SAFETY: as above; all shared state is atomics or cells whose ownership the
// protocol hands to exactly one thread at a time.
unsafe impl<T: Send> Sync for Channel<T> {}

/// How a receive ended.
pub(crate) type RecvResult<T> = Result<T, Fail>;

/// What an operation does when its partner has not arrived.
#[derive(Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// Give up (`try_*`).
    Try,
    /// Park until the deadline (`None`: forever).
    Park(Option<Instant>),
    /// Publish a registering select's `entry` and return at once. `own` is
    /// the select's entry word on the other side of this channel
    /// ([`NOT_OWN`] if none): finding it means the select met itself.
    Register { entry: &'a Entry, own: Word },
}

impl From<Wait> for Mode<'_> {
    #[inline]
    fn from(wait: Wait) -> Self {
        match wait {
            Wait::Try => Mode::Try,
            Wait::Until(deadline) => Mode::Park(deadline),
        }
    }
}

/// Messages up to this size wait beside a parked thread's waiter.
const NEAR_WAITER: usize = 64;

/// Runs `wait` with a fresh entry for a parked operation (case 0) and the
/// slot where its message waits (a sender's copy, or a receiver's landing
/// place): for a message of up to [`NEAR_WAITER`] bytes a slot beside the
/// waiter (see [`Parked`]); for a larger one `msg` itself. The branch is
/// decided at compile time and the large case has no slot at all: a slot
/// reserved for every `T` put a second copy of a large message on the
/// stack of every blocking operation (measured in review: 64 KiB messages
/// needed 329 KiB of stack against crossbeam-channel's 198).
#[inline(always)]
fn with_entry<T, R>(msg: *mut T, wait: impl FnOnce(&Entry, *mut T) -> R) -> R {
    if std::mem::size_of::<T>() <= NEAR_WAITER {
        let mut parked = Parked::<T>::new();
        let entry = parked.entry();
        wait(entry, entry.slot as *mut T)
    } else {
        let waiter = Waiter::new();
        let entry = Entry {
            waiter: &waiter,
            case: 0,
            slot: msg as *mut (),
        };
        wait(&entry, msg)
    }
}

/// Why a receive in any [`Mode`] did not return a message.
pub(crate) enum RecvStop {
    Fail(Fail),
    /// `Mode::Register`: the entry is in a cell.
    Registered(Registration),
    /// `Mode::Register`: the index landed on the select's own send entry.
    SelfMet,
}

impl RecvStop {
    /// Why a receive that could not register (`Mode::Try` or
    /// `Mode::Park`) failed.
    #[inline]
    pub(crate) fn unregistered(self) -> Fail {
        match self {
            RecvStop::Fail(fail) => fail,
            _ => unreachable!("only Mode::Register registers"),
        }
    }
}

/// Why a send in any [`Mode`] did not complete ([`Channel::send_from`]).
/// Unless said otherwise, the message is still the caller's, where it was.
pub(crate) enum SendStop {
    Fail(Fail),
    /// `Mode::Register`: the entry is in a cell, the value in its slot
    /// (which is where the caller put it), now the select's to hand over.
    Registered(Registration),
    /// `Mode::Register`: the index landed on the select's own receive entry.
    SelfMet,
}

/// How [`Channel::register_pair`] left a select's two cases on one
/// rendezvous channel.
pub(crate) enum PairStop<T> {
    /// Both are registered (as a duplex, or each in its own cell).
    Registered,
    /// The receive case completed while registering.
    Received(RecvResult<T>),
    /// The send case completed while registering (`Err`: closed; the value
    /// is still in the send case's slot).
    Sent(Result<(), Fail>),
}

/// The registrations of one [`Channel::register_pair`] call.
#[derive(Default)]
pub(crate) struct PairRegs {
    pub(crate) duplex: Option<Registration>,
    pub(crate) recv: Option<Registration>,
    pub(crate) send: Option<Registration>,
}

impl<T> Channel<T> {
    /// Writes a new channel to `p`, field by field, so that nothing of its
    /// size is built on the stack first.
    ///
    /// # Safety
    /// `p` is valid for writes of a `Channel<T>` and unshared.
    #[inline]
    pub(crate) unsafe fn init_at(p: *mut Self, cap: Option<usize>) {
        // First: see `Segments::in_domain`.
        let domain = Domain::new();
        let counting = std::mem::size_of::<T>() == 0 && cap != Some(0);
        // SAFETY: per the contract; each field is written once.
        unsafe {
            let kind = ptr::addr_of_mut!((*p).kind);
            match cap {
                _ if counting => kind.write(Kind::Counting {
                    cap,
                    count: Counting::new(cap.map_or(counting::UNBOUNDED, |c| c as u64)),
                }),
                None => kind.write(Kind::Unbounded),
                Some(0) => kind.write(Kind::Rendezvous),
                Some(cap) => {
                    // `BoundedInPlace` is the variant's layout (see `Kind`),
                    // and fits in `Kind`'s place (checked at compile time).
                    let bounded = kind.cast::<BoundedInPlace>();
                    ptr::addr_of_mut!((*bounded).tag).write(BOUNDED_TAG);
                    ptr::addr_of_mut!((*bounded).cap).write(cap);
                    Semaphore::init_at(ptr::addr_of_mut!((*bounded).permits), cap);
                    debug_assert!(matches!(&*kind, Kind::Bounded { cap: c, .. } if *c == cap));
                }
            }
            CachePadded::write_at(ptr::addr_of_mut!((*p).senders), AtomicU64::new(0));
            CachePadded::write_at(
                ptr::addr_of_mut!((*p).receivers),
                Receivers {
                    count: AtomicU64::new(0),
                    backlog: AtomicBool::new(false),
                },
            );
            ptr::addr_of_mut!((*p).closed_at).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).skipped_sends).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).skipped_recvs).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).duplexes).write(AtomicU64::new(0));
            ptr::addr_of_mut!((*p).maybe_skipped)
                .write([AtomicBool::new(false), AtomicBool::new(false)]);
            ptr::addr_of_mut!((*p).cells).write(if counting {
                Segments::unused()
            } else {
                Segments::in_domain(domain)
            });
        }
    }

    /// Makes a bounded channel's permit queue pin in the domain of
    /// `cells`: a receive that serves a queued sender, which works on both
    /// lists, then pins once, not in a second domain inside the first.
    ///
    /// # Safety
    /// `p` holds a channel `init_at` wrote, not yet shared and never to be
    /// moved, and is the pointer the channel's handles use (their
    /// references derive from it). A pointer taken from the allocation
    /// while it was being written is not valid for the queue's reads once
    /// those references have written the domain (Miri, Tree Borrows).
    pub(crate) unsafe fn share_domains(p: *mut Self) {
        // SAFETY: per the contract; an address computed, nothing read.
        let domain = Segments::<Cell<T>>::domain_of(unsafe { ptr::addr_of!((*p).cells) });
        // SAFETY: unshared per the contract, so `kind` is ours to write.
        if let Kind::Bounded { permits, .. } = unsafe { &mut (*p).kind } {
            // SAFETY: `cells` lives as long as the channel, and `kind` is
            // declared first, so dropped first; `domain` derives from the
            // handles' pointer.
            unsafe { permits.share_domain(domain) };
        }
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        match &self.kind {
            Kind::Unbounded => None,
            Kind::Rendezvous => Some(0),
            Kind::Bounded { cap, .. } => Some(*cap),
            Kind::Counting { cap, .. } => *cap,
        }
    }

    /// Whether a select's send case that a partner decided is complete (the
    /// partner took the value out of its slot), rather than holding a
    /// permit to deposit it with.
    pub(crate) fn takes_from_slot(&self) -> bool {
        matches!(self.kind, Kind::Rendezvous | Kind::Counting { .. })
    }

    /// For a `senders` word with the closed bit: the send count at the close.
    /// `senders` must have been read with Acquire (or stronger): the
    /// closer's CAS that set the bit comes after its write of `closed_at`,
    /// so the value read here is the final one.
    #[inline]
    fn closed_at(&self, senders: u64) -> Option<u64> {
        if senders & CLOSED_BIT == 0 {
            return None;
        }
        // Relaxed: ordered by the Acquire read of the bit (above).
        Some(self.closed_at.load(Ordering::Relaxed) - 1)
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        if let Kind::Counting { count, .. } = &self.kind {
            return count.is_closed();
        }
        self.senders.load(Ordering::Acquire) & CLOSED_BIT != 0
    }

    /// Buffered messages: sends started less receives started, corrected by
    /// the indices each side gave up. Exact when nothing is in flight.
    pub(crate) fn len(&self) -> usize {
        let cap = match &self.kind {
            Kind::Counting { count, .. } => return count.len(),
            Kind::Rendezvous => return 0,
            Kind::Unbounded => usize::MAX,
            Kind::Bounded { cap, .. } => *cap,
        };
        loop {
            let r_word = self.receivers.count.load(Ordering::SeqCst);
            let r = count(r_word);
            let s = self.senders.load(Ordering::SeqCst);
            let s = self.closed_at(s).unwrap_or(count(s));
            let cs = self.skipped_sends.load(Ordering::SeqCst);
            let cr = self.skipped_recvs.load(Ordering::SeqCst);
            // A consistent snapshot: nothing moved while we read.
            if self.receivers.count.load(Ordering::SeqCst) == r_word {
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
            Kind::Counting { count, .. } => count.is_full(),
        }
    }

    /// Whether a send (`send`) or a receive would likely complete without
    /// waiting now: its partner or its room is there, or the channel is
    /// closed. A hint from reads alone, for a select waiting before it
    /// registers; only a real operation decides.
    pub(crate) fn looks_ready(&self, send: bool) -> bool {
        // Relaxed: a hint; the operation it leads to orders itself.
        let (s, r) = match &self.kind {
            Kind::Counting { count, .. } => {
                let ready = if send {
                    !count.is_full()
                } else {
                    count.len() > 0
                };
                return ready || count.is_closed();
            }
            Kind::Unbounded if send => return true,
            Kind::Bounded { permits, .. } if send => {
                return !permits.is_exhausted() || self.is_closed()
            }
            _ => (
                self.senders.load(Ordering::Relaxed),
                count(self.receivers.count.load(Ordering::Relaxed)),
            ),
        };
        // A receive: a value or a parked sender is waiting. A rendezvous
        // send: a parked receiver is. Either: a select's duplex is.
        let waiting = if send { r > count(s) } else { count(s) > r };
        waiting || s & CLOSED_BIT != 0 || self.duplex_waiting(s, r, Ordering::Relaxed)
    }
}

/// The `own` word of a [`Mode::Register`] that has no entry of its own to
/// avoid: never an entry's word (entries are aligned to 8).
pub(crate) const NOT_OWN: Word = std::ptr::without_provenance_mut(usize::MAX);

/// The select entry word a [`Mode::Register`] operation must not pair with.
#[inline]
fn own_word(mode: Mode<'_>) -> Word {
    match mode {
        Mode::Register { own, .. } => own,
        _ => NOT_OWN,
    }
}

impl<T> Drop for Channel<T> {
    fn drop(&mut self) {
        if let Kind::Counting { count, .. } = &self.kind {
            // (The last receiver drained them; a count left over is
            // dropped here all the same.)
            for _ in 0..count.len() {
                // SAFETY: each counted message was sent and forgotten.
                drop(unsafe { conjure::<T>() });
            }
        }
        // A message that needs no drop leaves nothing to do in its cell
        // (the walk was a tenth of creating and dropping a `bounded(1)`
        // of `u64`; the segments themselves go with `cells`).
        if !mem::needs_drop::<T>() {
            return;
        }
        // SAFETY: `&mut self`: no handle, so no operation, exists.
        unsafe {
            self.cells.for_each_cell_exclusive(|cell| {
                if cell.state.load(Ordering::Relaxed) == BUFFERED {
                    cell.state.store(DONE, Ordering::Relaxed);
                    cell.drop_value();
                }
            });
        }
    }
}
