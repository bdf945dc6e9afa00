//! The channel: fetch-and-add over an infinite array of cells (seed 004).
//!
//! Send number `i` and receive number `i` meet in cell `i`: each side takes
//! its index from its counter (`senders`, `receivers`; [`take_index`]: one
//! CAS, or a fetch-and-add after a short wait if that lost a race) and
//! then settles the cell with one CAS (see [`crate::cell`] for the state
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
//! **Indices** are 63-bit counts: at one operation per nanosecond they wrap
//! after 292 years, so wrap-around is not handled.

use crate::cell::{
    self, Claim, Claimer, Duplex, InCell, Registration, BUFFERED, CLAIMED, DONE, DUPLEX_TAG, EMPTY,
    SENDER_TAG, SKIP_RECV, SKIP_SEND,
};
use crate::counting::{self, Counting, Moved};
use crate::epoch::{self, Domain};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::loom::{claim_index, claim_index_once, take_index, Backoff, CachePadded};
use crate::segment::{may_give_back, Segment, SegmentCell, Segments, Side};
use crate::semaphore::Semaphore;
use crate::waiter::{linger, spin, yield_until, Entry, Outcome, Parked, Waiter};
use crate::{Fail, Wait};
use std::mem::{self, MaybeUninit};
use std::ptr;
use std::time::Instant;

const CLOSED_BIT: u64 = 1 << 63;

/// The count in a `senders` or `receivers` word, without the closed bit.
#[inline]
fn count(counter: u64) -> u64 {
    counter & !CLOSED_BIT
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
    /// (`usize::MAX` if none): finding it means the select met itself.
    Register { entry: &'a Entry, own: usize },
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

    // ---------------------------------------------------------------- send

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

    /// A timed operation (`sender`, or a receive) gave up: `Closed` if the
    /// channel is closed (and, for a receive, drained), else `Timeout`.
    /// Its waiter withdrew when the deadline passed, but a close that came
    /// before may not have reached the waiter yet (a closer sets its bit,
    /// then fails the waiters it finds), and a timed operation must not
    /// report a timeout on a channel closed before its deadline (found in
    /// review, by reading). Reads only: a select makes a whole try pass
    /// after its timed park, but a try here multiplied the interleavings
    /// of the timed loom models (`duplex_stays_reachable_after_timeouts`:
    /// 23 s, over 10 minutes with a try, 24 s with these reads).
    ///
    /// Called by the public timed operations only: settled deeper, on the
    /// paths `try_send` and `try_recv` share, it made an empty `try_recv`
    /// a call again (1.1 -> 1.9-2.0 ns).
    #[cold]
    #[inline(never)]
    pub(crate) fn timeout_or_closed(&self, sender: bool) -> Fail {
        let closed = match &self.kind {
            // A count after the close only goes down.
            Kind::Counting { count, .. } => count.is_closed() && (sender || count.len() == 0),
            _ if sender => self.is_closed(),
            _ => self.nothing_to_receive() == Some(Fail::Closed),
        };
        if closed {
            Fail::Closed
        } else {
            Fail::Timeout
        }
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
    #[inline]
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
    /// # Safety
    /// As [`Channel::send_permitted`].
    #[inline(always)]
    unsafe fn deposit_at_cursor(&self, msg: *mut T) -> Option<Result<(), Fail>> {
        let guard = self.cells.pin();
        let start = self.cells.cursor(Side::Push, &guard);
        let s = self.senders.load(Ordering::Relaxed);
        // SAFETY: the cursor was loaded under `guard`.
        let seg = unsafe { &*start };
        if s & CLOSED_BIT != 0 || !seg.holds(s) {
            return None;
        }
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
    unsafe fn settle_taken(&self, cell: &Cell<T>, state: usize, msg: *mut T) -> Result<(), Fail> {
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
            let guard = self.cells.pin();
            let start = self.cells.cursor(Side::Push, &guard);
            // Relaxed: the cell CAS carries the data; the closed bit is read
            // from this RMW, which is ordered with the closer's `fetch_or`.
            let s = take_index(&self.senders, Ordering::Relaxed);
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
    unsafe fn settle_deposit(&self, cell: &Cell<T>, mut state: usize, msg: *mut T) -> bool {
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
                other => unreachable!("send found cell in state {other}"),
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
            let mut guard = self.cells.pin();
            let start = self.cells.cursor(Side::Push, &guard);
            let s = take_index(&self.senders, Ordering::Relaxed);
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
                            match self.publish(
                                seg,
                                &cell.state,
                                entry,
                                true,
                                s,
                                guard,
                                Placed::Referenced,
                            ) {
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
                    other => unreachable!("rendezvous send found cell in state {other}"),
                }
            }
        }
    }

    // ---------------------------------------------------------------- recv

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
            && self.take_buffered(&self.cells.pin(), out, false)
        {
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
            && self.take_buffered(&self.cells.pin(), out, false)
        {
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
        if self.take_buffered(&self.cells.pin(), out.as_mut_ptr(), true) {
            // SAFETY: `take_buffered` moved a message into `out`.
            return Ok(unsafe { out.assume_init() });
        }
        self.recv(Wait::Until(deadline))
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
    fn take_buffered(&self, guard: &epoch::Guard, out: *mut T, wait_on_loss: bool) -> bool {
        if !matches!(self.kind, Kind::Unbounded | Kind::Bounded { .. }) {
            return false;
        }
        let start = self.cells.cursor(Side::Pop, guard);
        let r = self.receivers.count.load(Ordering::Relaxed);
        // SAFETY: the cursor was loaded under `guard`.
        let seg = unsafe { &*start };
        // (A closing mark in R: `recv_into` looks at the close.)
        if r & CLOSED_BIT != 0 || !seg.holds(r) {
            return false;
        }
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
        unsafe { self.take_message(cell, out) };
        true
    }

    /// Moves the message out of `cell` into `out`, marks the cell done and
    /// returns a bounded channel's permit.
    ///
    /// # Safety
    /// The caller holds the cell's receive index and read `BUFFERED` there
    /// with Acquire (so the sender's value is in the slot and visible);
    /// `out` is valid for a write.
    #[inline(always)]
    unsafe fn take_message(&self, cell: &Cell<T>, out: *mut T) {
        // SAFETY: per the contract.
        unsafe { cell.read_into(out) };
        // Relaxed: nobody reads a DONE cell's slot.
        cell.state.store(DONE, Ordering::Relaxed);
        self.release_permit();
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
    fn nothing_to_receive(&self) -> Option<Fail> {
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
    fn duplex_waiting(&self, s: u64, r: u64, order: Ordering) -> bool {
        count(s) == r && self.duplexes.load(order) != 0
    }

    /// A select's duplex on this channel has left its cell (decided,
    /// withdrawn, or closed): see `duplexes`.
    pub(crate) fn duplex_left(&self) {
        // SeqCst: after the duplex left, in the order `duplex_waiting`
        // argues in.
        self.duplexes.fetch_sub(1, Ordering::SeqCst);
    }

    /// Receives in any mode into `out`, which holds the message after
    /// `Ok(())`. Values move by pointer (into `out` from the cell or from a
    /// parked sender's slot, or a partner writes `out` itself while we are
    /// parked), so the frame holds no `T`: a 1 MiB message does not cost
    /// megabytes of stack, here or in the drain of the last receiver's drop.
    fn recv_into(&self, mode: Mode<'_>, out: *mut T) -> Result<(), RecvStop> {
        if std::mem::size_of::<T>() == 0 {
            if let Kind::Counting { count, .. } = &self.kind {
                // SAFETY: `out` is valid for a write (the caller's contract).
                return recv_counted(count, mode).map(|msg| unsafe { out.write(msg) });
            }
        }
        let mut pinned = match mode {
            // Not on a rendezvous channel: its sender waits for a receiver
            // anyway, and sees only one that took an index, so a receiver
            // waiting without one makes both wait (Go's producer/consumer
            // shape on `bounded(0)`: 25-38% faster without the wait).
            Mode::Park(deadline) if !matches!(self.kind, Kind::Rendezvous) => {
                self.await_sender(deadline)
            }
            // (Here, not inlined in `recv_to`: there it made the failing
            // `try_recv` in front of it a call again, 0.6 -> 1.2 ns.)
            Mode::Try => Some(self.cells.pin()),
            _ => None,
        };
        if let Some(guard) = &pinned {
            if self.take_buffered(guard, out, true) {
                return Ok(());
            }
        }
        if pinned.is_none() && !matches!(mode, Mode::Try) && self.may_adopt(Side::Pop) {
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
            let mut guard = pinned.take().unwrap_or_else(|| self.cells.pin());
            let start = self.cells.cursor(Side::Pop, &guard);
            let taken = take_index(&self.receivers.count, Ordering::Relaxed);
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
                        unsafe { self.take_message(cell, out) };
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
                        if cell::close_entry(&cell.state, word, SKIP_SEND) {
                            self.skipped_sends.fetch_add(1, Ordering::Relaxed);
                        }
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
                                match self.publish(
                                    seg,
                                    &cell.state,
                                    entry,
                                    false,
                                    r,
                                    guard,
                                    Placed::Referenced,
                                ) {
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
                    other => unreachable!("recv found cell in state {other}"),
                }
            }
        }
    }

    /// Whether a waiter of `side` may find a skip to take over (see
    /// `adopt_skip`): one load, before a blocking operation takes its index.
    #[inline]
    fn may_adopt(&self, side: Side) -> bool {
        self.maybe_skipped[side as usize].load(Ordering::Relaxed)
    }

    /// A blocking receive (`mode` parks or registers) that takes over a
    /// cell a receiver gave up (see `adopt_skip`) instead of a new index.
    /// `None`: none found.
    #[cold]
    fn recv_adopting(&self, mode: Mode<'_>, out: *mut T) -> Option<Result<(), RecvStop>> {
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
    unsafe fn send_adopting(&self, msg: *mut T, mode: Mode<'_>) -> Option<Result<(), SendStop>> {
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
    fn await_sender(&self, deadline: Option<Instant>) -> Option<epoch::Guard> {
        if cfg!(loom) {
            return None;
        }
        // Relaxed (all loads here): a hint; the fetch-and-add that follows
        // decides. Cursor first: it must not be past the index read next.
        let guard = self.cells.pin();
        let start = self.cells.cursor(Side::Pop, &guard);
        let r = count(self.receivers.count.load(Ordering::Relaxed));
        // Watch the cell, not `senders`: its sender writes it once anyway,
        // while a read of `senders` per receive pulls that line away from
        // the next send's fetch-and-add (measured, one producer and one
        // consumer on an unbounded channel: 150 ns per message reading
        // `senders` first, 60 ns without). `closed_at` is written only by a close.
        let Some(seg) = self.cells.peek(start, r, &guard) else {
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
            return Some(guard);
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
    fn release_permit(&self) {
        if let Kind::Bounded { permits, .. } = &self.kind {
            permits.release();
        }
    }

    /// Publishes `entry` in `state` (a cell of `seg`, index `index`), which
    /// the caller found `EMPTY`, then checks for a close that came first
    /// (the other half of close's Dekker fence): a waiter the close cannot
    /// serve withdraws at once. Consumes the pin: a parked thread must not
    /// stall reclamation. So a registration that may touch its cell later
    /// (a select's case, a timed wait that may withdraw) holds a segment
    /// reference (`Placed::Referenced`).
    ///
    /// An operation that waits in the cell without a deadline takes none
    /// (`Placed::Unreferenced`): once past the closed check it is decided
    /// only by a partner or a closer, each writing the cell under a pin of
    /// its own, and completing its registration reads nothing there; only
    /// our pin keeps the segment while `registered` may still cancel it.
    /// That saves two read-modify-writes on the segment's line per wait:
    /// Go's producer/consumer shape on `bounded(0)` took 0.90-0.94 of the
    /// time at 1, 4 and 8 pairs on 2 cores.
    #[allow(clippy::too_many_arguments)]
    fn publish(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicUsize,
        entry: &Entry,
        sender: bool,
        index: u64,
        guard: epoch::Guard,
        placed: Placed,
    ) -> Result<Registration, ParkFail> {
        debug_assert!(
            placed != Placed::Adopted,
            "an adopted cell is not published"
        );
        let referenced = placed == Placed::Referenced;
        if referenced {
            seg.acquire_ref();
        }
        let word = cell::entry_word(entry, sender);
        // Release publishes the entry (and, for a sender, its value).
        if let Err(s) = state.compare_exchange(EMPTY, word, Ordering::Release, Ordering::Acquire) {
            if referenced {
                // SAFETY: our own reference, taken above; `guard` still
                // pins `seg`.
                unsafe { Segment::release_ref(seg) };
            }
            return Err(ParkFail::Lost(s, guard));
        }
        // SAFETY: just published, with the reference taken above, or
        // (unreferenced) with `guard` pinning `seg` until `registered`,
        // which may cancel, is done; our caller only completes it after.
        let reg = unsafe { self.registered(seg, state, entry, sender, index, placed) };
        drop(guard);
        reg
    }

    /// Completes the registration of `entry`, published in `state` (a cell
    /// of `seg`, index `index`, on which the caller took a reference that
    /// the registration now owns, or which the caller keeps pinned: as
    /// `placed` says).
    ///
    /// # Safety
    /// As described: the entry word of `entry` is in `state`, and the
    /// caller's reference on `seg` passes to the registration, or (for
    /// `Placed::Unreferenced`) the caller pins `seg` until this returns and
    /// then only completes the registration.
    unsafe fn registered(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicUsize,
        entry: &Entry,
        sender: bool,
        index: u64,
        placed: Placed,
    ) -> Result<Registration, ParkFail> {
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
        // SAFETY: `word` is now in `state`, a cell of `seg`, on which we hold
        // the reference taken above; the counter lives as long as `self`,
        // which the caller's handle keeps alive while the entry exists.
        let reg = unsafe {
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
        };
        let reg = if placed == Placed::Unreferenced {
            // SAFETY: per our contract, the caller took no reference, pins
            // `seg` until we return, and then only completes the entry.
            unsafe { reg.unreferenced() }
        } else {
            reg
        };
        // Dekker with `close`: our entry store, then the closed check; the
        // closer sets the bit, then scans for entries. One sees the other.
        fence(Ordering::SeqCst);
        // Acquire: for `closed_at`.
        let s = self.senders.load(Ordering::Acquire);
        let hopeless = self.closed_at(s).is_some_and(|at| sender || index >= at);
        // A registering select cannot be decided by anyone else, so it can
        // always withdraw; a plain waiter may already have been decided.
        if hopeless && (entry.waiter().is_registering() || entry.waiter().try_abort()) {
            // A receive index past the close is never reached by a send, so
            // its skip is not counted (`len` clamps what is left); but a
            // cell taken over gives back the skip it took, as it found it.
            if sender || placed == Placed::Adopted {
                reg
            } else {
                reg.uncounted()
            }
            .cancel();
            return Err(ParkFail::Fail(Fail::Closed));
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
    fn park_in(
        &self,
        seg: &Segment<Cell<T>>,
        state: &AtomicUsize,
        entry: &Entry,
        sender: bool,
        index: u64,
        deadline: Option<Instant>,
        guard: epoch::Guard,
    ) -> Result<(), ParkFail> {
        // A timed wait may cancel its entry when the deadline passes, long
        // after its pin: it holds a reference instead. (So the untimed
        // registration, which must not touch its cell once published, is
        // never cancelled below: nothing times it out.)
        let placed = if deadline.is_some() {
            Placed::Referenced
        } else {
            Placed::Unreferenced
        };
        let reg = self.publish(seg, state, entry, sender, index, guard, placed)?;
        self.wait_registered(reg, entry, deadline)
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
    fn side(&self, side: Side) -> (&AtomicU64, usize, &AtomicU64) {
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
    fn land_on_skip(
        &self,
        state: &AtomicUsize,
        skip: usize,
        skipped: &AtomicU64,
    ) -> Result<(), usize> {
        // Relaxed: DONE publishes nothing; Acquire on failure, as every
        // state we go on to act on is read.
        state.compare_exchange(skip, DONE, Ordering::Relaxed, Ordering::Acquire)?;
        skipped.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    // -------------------------------------------------------------- select

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
            return if cell::is_entry(now) && now & DUPLEX_TAG != 0 && now & SENDER_TAG == 0 {
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

    // --------------------------------------------------------------- close

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
                    if cell::is_entry(word)
                        && word & (SENDER_TAG | DUPLEX_TAG) != 0
                        && cell::close_entry(&cell.state, word, SKIP_SEND)
                        && word & DUPLEX_TAG == 0
                    {
                        self.skipped_sends.fetch_add(1, Ordering::Relaxed);
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
            if cell::is_entry(word) && word & (SENDER_TAG | DUPLEX_TAG) == 0 {
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

/// The segment reference a [`Registration`] drops.
///
/// # Safety
/// `seg` is a `Segment<Cell<T>>` on which the caller holds a reference.
unsafe fn release_segment<T>(seg: *const ()) {
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

/// The select entry word a [`Mode::Register`] operation must not pair with.
#[inline]
fn own_word(mode: Mode<'_>) -> usize {
    match mode {
        // 0 is EMPTY, never an entry.
        Mode::Register { own, .. } => own,
        _ => usize::MAX,
    }
}

/// How an entry came into its cell, and what keeps the cell's segment
/// alive while it is there (see [`Channel::registered`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// Published in an empty cell, with a reference on the segment.
    Referenced,
    /// Published in an empty cell, without a reference: its owner waits
    /// with no deadline (see [`Channel::publish`]).
    Unreferenced,
    /// Taken over from a waiter of the same side that gave up, with a
    /// reference (see [`Channel::adopt_skip`]).
    Adopted,
}

/// Why `park_in` did not complete the operation.
enum ParkFail {
    /// The cell changed before the entry was published: re-examine it
    /// (still pinned by the returned guard).
    Lost(usize, epoch::Guard),
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

// ------------------------------------------------------ zero-sized messages

/// A zero-sized message out of nothing.
///
/// # Safety
/// `T` is zero-sized, and a value of it was sent and forgotten (so `T` is
/// inhabited, and this one takes that one's place: each is made once).
#[inline]
unsafe fn conjure<T>() -> T {
    debug_assert_eq!(std::mem::size_of::<T>(), 0);
    // SAFETY: a zero-sized read through a dangling, aligned pointer is
    // valid, and per the contract the value it makes is one that was sent.
    unsafe { std::ptr::NonNull::<T>::dangling().as_ptr().read() }
}

/// Completes a send of zero-sized `msg` that `moved` says how to finish.
#[inline]
fn finish_counted_send<T>(moved: Moved<'_>, msg: T) {
    match moved {
        Moved::Counted => std::mem::forget(msg),
        Moved::Handed { waiter, slot } => {
            // SAFETY: the decided receiver's slot is ours to fill.
            unsafe { (slot as *mut T).write(msg) };
            waiter.wake();
        }
    }
}

/// Completes a receive that `moved` says how to finish.
#[inline]
fn finish_counted_recv<T>(moved: Moved<'_>) -> T {
    match moved {
        // SAFETY: a `Counting` channel carries zero-sized `T`, and the
        // count we took stands for a message sent and forgotten.
        Moved::Counted => unsafe { conjure() },
        Moved::Handed { waiter, slot } => {
            // SAFETY: the decided sender's value is ours.
            let msg = unsafe { (slot as *mut T).read() };
            waiter.wake();
            msg
        }
    }
}

/// `Channel::send_from` for zero-sized messages.
///
/// # Safety
/// As [`Channel::send_from`].
unsafe fn send_counted<T>(count: &Counting, msg: *mut T, mode: Mode<'_>) -> Result<(), SendStop> {
    // SAFETY (every `msg.read()`): the value at `msg` is the caller's, and
    // it is read once, on a path that returns `Ok` (it moved).
    match mode {
        Mode::Try => match count.send(Mode::Try) {
            Ok(moved) => {
                finish_counted_send(moved, unsafe { msg.read() });
                Ok(())
            }
            Err(RecvStop::Fail(fail)) => Err(SendStop::Fail(fail)),
            Err(_) => unreachable!("only Mode::Register registers"),
        },
        Mode::Park(deadline) => {
            match count.send(Mode::Try) {
                Ok(moved) => {
                    finish_counted_send(moved, unsafe { msg.read() });
                    return Ok(());
                }
                Err(RecvStop::Fail(Fail::WouldBlock)) => {}
                Err(RecvStop::Fail(fail)) => return Err(SendStop::Fail(fail)),
                Err(_) => unreachable!("only Mode::Register registers"),
            }
            match count.wait(true, msg as *mut (), deadline) {
                // A receiver took the value out of `msg`.
                Ok(None) => Ok(()),
                // Not handed to anyone: still ours, to finish with.
                Ok(Some(moved)) => {
                    finish_counted_send(moved, unsafe { msg.read() });
                    Ok(())
                }
                Err(fail) => Err(SendStop::Fail(fail)),
            }
        }
        // The value is already in the select's slot (`msg`); a receiver may
        // take it from there as soon as the entry is listed.
        Mode::Register { .. } => match count.send(mode) {
            // Not listed, so still ours.
            Ok(moved) => {
                finish_counted_send(moved, unsafe { msg.read() });
                Ok(())
            }
            Err(RecvStop::Fail(fail)) => Err(SendStop::Fail(fail)),
            Err(RecvStop::Registered(reg)) => Err(SendStop::Registered(reg)),
            Err(RecvStop::SelfMet) => unreachable!("no duplexes here"),
        },
    }
}

/// `Channel::recv_in` for zero-sized messages.
fn recv_counted<T>(count: &Counting, mode: Mode<'_>) -> Result<T, RecvStop> {
    let Mode::Park(deadline) = mode else {
        return count.recv(mode).map(finish_counted_recv);
    };
    match count.recv(Mode::Try) {
        Ok(moved) => return Ok(finish_counted_recv(moved)),
        Err(RecvStop::Fail(Fail::WouldBlock)) => {}
        Err(stop) => return Err(stop),
    }
    let mut slot = MaybeUninit::<T>::uninit();
    match count.wait(false, slot.as_mut_ptr() as *mut (), deadline) {
        // SAFETY: the sender wrote our slot before waking us.
        Ok(None) => Ok(unsafe { slot.assume_init() }),
        Ok(Some(moved)) => Ok(finish_counted_recv(moved)),
        Err(fail) => Err(RecvStop::Fail(fail)),
    }
}

/// A non-blocking operation found its cell EMPTY: the partner is between
/// its fetch-and-add and its CAS. Spins briefly for it, then gives the index
/// up (the cell becomes `skip`, counted in `skipped`). `Err(state)`: the
/// partner arrived; settle the cell in that state instead.
#[inline]
fn give_up(state: &AtomicUsize, skip: usize, skipped: &AtomicU64) -> Result<(), usize> {
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
