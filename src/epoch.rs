//! Epoch-based reclamation in domains: each channel keeps an epoch of its
//! own (its segment list's, which a bounded channel's permit queue shares)
//! and its lists reclaim their own segments (`segment.rs`, with
//! [`retirement_tag`] and [`scan`]); Lscq's rings go to the
//! collector ([`retire`]), which has a domain of its own.
//!
//! The shape of crossbeam-epoch, cut down to what the crate needs so that
//! loom can check it in a few hundred iterations (crossbeam-epoch's own loom
//! runs take over a million for a two-thread model; see NOTES.md):
//!
//! - one participant per thread (a thread-local), registered once in a
//!   global list and reused after its thread exits;
//! - `pin(domain)` stores the domain's epoch, with a tag naming the domain,
//!   into the participant and issues a SeqCst fence (on x86, one swap does
//!   both), `unpin` clears it: no read-modify-write on shared state; pins
//!   nest (only the outermost announces, unless a nested one is in another
//!   domain: see below), and the pin path reads one const-initialised
//!   thread-local pointer and the domain;
//! - retired memory is tagged with its domain's epoch at retirement (after
//!   a SeqCst fence) and freed once that epoch is two ahead of the tag;
//! - a domain's epoch advances only when every participant pinned *in that
//!   domain* has seen it.
//!
//! Why domains: with one epoch for the whole process, a thread preempted
//! while pinned on one channel held back the reclamation of every other:
//! 8 threads on 2 cores, each on a channel of its own, held 50 000-90 000
//! segments mid-run. A pin names its domain, so the threads pinned on other
//! channels do not count (docs/DESIGN.md, "Memory").
//!
//! A pin inside a pin of another domain turns the announcement into a
//! wildcard that holds back every domain until the outermost pin ends:
//! safe, and not taken by the channels' operations (a bounded channel's
//! permit queue pins in its channel's domain).
//!
//! Ranged pins ([`pin_ranged`]): a segment list's sends and receives
//! announce the ids of the segments they can reach (the one at their
//! cursor, or every one from it on, narrowed to those up to their index
//! once it is known: [`Guard::narrow_to`]) instead of an epoch. They hold
//! back no epoch; a list's reclaim ([`scan`]) keeps what they cover and
//! frees the rest. So a thread preempted mid-operation keeps its few
//! segments, where an epoch pin keeps everything its list retires until
//! the thread runs again. Any pin nested in a ranged one turns it into the
//! wildcard.
//!
//! [`retire`] takes a lock; only Lscq's rings use it, once per ring. A
//! segment list keeps its retired segments itself and needs no lock here
//! (`Segments::reclaim`).
//!
//! Why two epochs: a thread pinned at epoch `e` may hold a pointer it loaded
//! before an object was unlinked and retired at `e`. The epoch reaches `e + 1`
//! only after that thread has unpinned or re-pinned at `e`... and reaches
//! `e + 2` only after every thread pinned at `e` has moved on, so no pointer
//! loaded before the unlink survives.

use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::loom::sync::{Arc, Mutex};
use crate::loom::CachePadded;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

/// A deferred free: `call(ptr)` runs once no pinned thread can reach `ptr`.
pub(crate) struct Deferred {
    ptr: *mut (),
    call: unsafe fn(*mut ()),
}

// SAFETY: the creator of a `Deferred` promises (see `Deferred::new`) that
// `call(ptr)` may run on any thread.
unsafe impl Send for Deferred {}

impl Deferred {
    /// # Safety
    /// `call(ptr)` must be sound to run exactly once, on any thread, once no
    /// thread pinned now or later can reach `ptr`. It runs under the
    /// collector's lock, so it must not call `retire` or `collect`.
    pub(crate) unsafe fn new(ptr: *mut (), call: unsafe fn(*mut ())) -> Self {
        Deferred { ptr, call }
    }

    fn run(self) {
        // SAFETY: the grace period has passed (the caller checked the epoch),
        // which is the contract `new` was given.
        unsafe { (self.call)(self.ptr) }
    }
}

/// Whether `pin` announces with a SeqCst swap instead of a store and a
/// SeqCst fence. Both are full barriers on x86 hardware, where `xchg`
/// costs less than `mfence` (on the Intel Xeon of the 16-core machine: see
/// docs/DESIGN.md, "Memory"); elsewhere, and under loom and Miri (which
/// check the language's memory model, where only the fence is a fence),
/// the fence stays.
const ANNOUNCE_BY_SWAP: bool = cfg!(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    not(loom),
    not(miri)
));

// An announcement (a participant's slot) is 0 when unused, else: bit 0
// (`PINNED`) set; bit 1 (`WILDCARD`): holds back every domain and covers
// every range; the next `TAG_BITS`, the domain's tag (`Domain::tag`); then
// bit `RANGED`. Without it (an epoch pin), the rest, from `EPOCH_SHIFT` up,
// holds the low 45 bits of the domain's epoch (on top, so a shift alone
// drops the bits above them). With it (a ranged pin, `Local::pin_ranged`),
// `SPAN_BITS` of span and, on top, the low `LO_BITS` of the first segment
// id the pin covers: it covers ids `lo..=lo + span`, or every id from `lo`
// on when the span is `UNBOUNDED`, and holds back no epoch.
//
// A 64-bit word on every target, so that every domain has an epoch of its
// own there too (the crate needs 64-bit atomics anyway, for its indices).
// A 32-bit target once kept one epoch for all domains in a `usize`
// announcement, and then a thread preempted while pinned on one channel
// held back the reclamation of every other: 8 threads on 2 cores, each on
// a channel of its own, peaked at 9 597 live segments in `tests/memory.rs`
// (i686, musl), where the limit is 256.
const PINNED: u64 = 1;
const WILDCARD: u64 = 2;
/// Enough that two domains in use at once rarely share a tag (sharing one
/// is safe: see `holds_back`), and few enough to leave 45 bits of epoch.
const TAG_BITS: u32 = 16;
const TAG_MASK: u64 = ((1 << (2 + TAG_BITS)) - 1) & !(PINNED | WILDCARD);
const RANGED: u64 = 1 << (2 + TAG_BITS);
const EPOCH_SHIFT: u32 = 3 + TAG_BITS;
const SPAN_SHIFT: u32 = EPOCH_SHIFT;
const SPAN_BITS: u32 = 4;
/// The span of a ranged pin that covers every id from its first on.
const UNBOUNDED: u64 = (1 << SPAN_BITS) - 1;
const LO_SHIFT: u32 = SPAN_SHIFT + SPAN_BITS;
const LO_BITS: u32 = u64::BITS - LO_SHIFT;
const LO_MASK: u64 = (1 << LO_BITS) - 1;

/// How far `id` lies past `lo`, on the low `LO_BITS` that an announcement
/// keeps of each. Exact while the ids a domain still holds lie within
/// 2^40 of every ranged pin's first id: a pin announces the id of a
/// segment its list holds, and 2^40 segments are 2^45 messages, years of
/// traffic at full speed for a thread stopped between two instructions.
#[inline]
fn past(id: u64, lo: u64) -> u64 {
    id.wrapping_sub(lo) & LO_MASK
}

/// Whether the ranged announcement `state` covers segment `id`.
#[inline]
fn range_covers(state: u64, id: u64) -> bool {
    let lo = state >> LO_SHIFT;
    let span = (state >> SPAN_SHIFT) & UNBOUNDED;
    let d = past(id, lo);
    if span == UNBOUNDED {
        d < 1 << (LO_BITS - 1)
    } else {
        d <= span
    }
}

/// Whether the announcement `state` holds back the domain tagged `tag`
/// from advancing past `epoch`: a wildcard always does, a pin in the domain
/// does until it has seen `epoch`, a pin elsewhere never does.
///
/// A ranged pin holds back no epoch: the segments it covers are kept by
/// `Ranges` instead. A pin elsewhere whose domain shares the tag is taken
/// for a pin in this one: at worst it holds this domain back for a while.
/// The epochs are compared on their low 45 bits only (on a 32-bit target
/// the epoch has 32), so an epoch past that width, or a wrap, changes
/// nothing: an announcement matches at most one of any two consecutive
/// epochs, so a pinned thread still holds back the second advance. It
/// could match a second time only had it loaded the epoch 2^45 advances of its domain
/// before storing it (a thread stopped between two instructions for weeks
/// of reclamation at full speed; on a 32-bit target, 2^32 advances of its
/// own domain, hours of it on one channel).
#[inline]
fn holds_back(state: u64, tag: u64, epoch: usize) -> bool {
    state & PINNED != 0
        && (state & WILDCARD != 0
            || (state & (TAG_MASK | RANGED) == tag
                && state >> EPOCH_SHIFT != ((epoch as u64) << EPOCH_SHIFT) >> EPOCH_SHIFT))
}

/// A grace-period domain: an epoch, and what its pins announce. Each
/// segment list has one (a pin on one list then leaves the others free to
/// reclaim); Lscq's rings share the collector's.
pub(crate) struct Domain {
    /// The epoch the domain advances and tags retirements with. Every pin
    /// in the domain reads it, and only an advance writes it.
    /// Not padded: a segment list sits inside its channel, and padding
    /// here took the channel past the 1 KiB of glibc's small requests
    /// (see `crate::loom::CachePadded`).
    epoch: AtomicUsize,
    /// What a pin announces besides the epoch: the domain's tag, and
    /// `PINNED`. Fixed at creation, so a pin spends no instruction on it.
    announcing: u64,
}

/// Spreads `n` over the tag bits: the top bits of a multiplicative hash,
/// which depend on every bit of `n`.
fn spread(n: usize) -> u64 {
    let hash = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hash >> (u64::BITS - TAG_BITS)) << 2
}

/// A tag for a new domain: a count of the domains this thread has made,
/// offset by where its count lives (so that threads count apart), spread.
/// Tags need not be unique (`holds_back`), only rarely equal for domains
/// in use at once; a thread-local count, not a global one, so that threads
/// making channels at once share no line.
#[inline]
fn fresh_tag() -> u64 {
    std::thread_local! {
        static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    spread(
        MADE.try_with(|made| {
            let n = made.get();
            made.set(n.wrapping_add(1));
            n.wrapping_add(made as *const _ as usize)
        })
        .unwrap_or(0),
    )
}

impl Domain {
    pub(crate) fn new() -> Self {
        Domain {
            epoch: AtomicUsize::new(0),
            announcing: fresh_tag() | PINNED,
        }
    }

    /// A domain of tag 0: the collector's, and that of a list that never
    /// pins (no tag needed, and none made).
    #[cfg(not(loom))]
    pub(crate) const fn untagged() -> Self {
        Domain {
            epoch: AtomicUsize::new(0),
            announcing: PINNED,
        }
    }

    #[cfg(loom)]
    pub(crate) fn untagged() -> Self {
        Domain {
            epoch: AtomicUsize::new(0),
            announcing: PINNED,
        }
    }

    /// The domain's tag in announcements.
    #[inline]
    fn tag(&self) -> u64 {
        self.announcing & TAG_MASK
    }

    /// What a pin in this domain announces.
    #[inline]
    fn announcement(&self) -> u64 {
        let epoch = self.epoch.load(Ordering::Relaxed);
        self.announcing | ((epoch as u64) << EPOCH_SHIFT)
    }
}

/// A participant: its announcement, and what its thread has pinned.
struct Local {
    /// The outermost pin's announcement (0 when not pinned), or the
    /// wildcard once a pin in another domain nests inside it.
    state: CachePadded<AtomicU64>,
    in_use: AtomicBool,
    /// How deeply the owning thread is pinned. Only the thread that claimed
    /// `in_use` touches it and `outer` (plain `Cell`s: no atomics, and no
    /// extra loom interleavings).
    depth: Cell<usize>,
    /// The domain `state` announces while `depth > 0`; null once it
    /// announces the wildcard. Only compared, never dereferenced.
    outer: Cell<*const Domain>,
}

// SAFETY: `state` and `in_use` are atomics; the `Cell`s are only accessed
// by the one thread that owns the participant (it claimed `in_use` with an
// Acquire CAS, and the previous owner released it with a Release store
// after its last access), so they are never accessed concurrently.
unsafe impl Sync for Local {}
// SAFETY: the domain pointer in `outer` is only compared, never
// dereferenced; the rest is `Send` (a participant moves to the next
// thread that claims it, as `Sync` above describes).
unsafe impl Send for Local {}

impl Local {
    fn new() -> Self {
        Local {
            state: CachePadded::new(AtomicU64::new(0)),
            in_use: AtomicBool::new(true),
            depth: Cell::new(0),
            outer: Cell::new(ptr::null()),
        }
    }

    #[inline]
    fn pin(&self, domain: &Domain) {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        if depth == 0 {
            self.outer.set(domain);
            self.announce(domain.announcement());
        } else if self.is_ranged()
            || (!ptr::eq(self.outer.get(), domain) && !self.outer.get().is_null())
        {
            // A ranged pin covers only its own segments, whatever the
            // nested pin is for.
            self.pin_elsewhere();
        }
    }

    /// Pins in `domain` covering segment `lo` alone (`only`), or every
    /// segment whose id is `lo` or more: a ranged announcement, which holds
    /// back no epoch (see [`pin_ranged`]). Nested in any pin, it takes that
    /// pin's cover, or the wildcard where that pin is ranged or in another
    /// domain.
    #[inline]
    fn pin_ranged(&self, domain: &Domain, lo: u64, only: bool) {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        if depth == 0 {
            self.outer.set(domain);
            let span = if only { 0 } else { UNBOUNDED };
            let word = domain.announcing | RANGED | span << SPAN_SHIFT | lo << LO_SHIFT;
            self.announce(word);
        } else if self.is_ranged()
            || (!ptr::eq(self.outer.get(), domain) && !self.outer.get().is_null())
        {
            self.pin_elsewhere();
        }
    }

    /// A pin in another domain inside a pin: the announcement becomes the
    /// wildcard, which holds back every domain (the first one too) until
    /// the outermost pin ends. Nothing in the crate nests pins of two
    /// domains (a bounded channel's permit queue pins in its channel's);
    /// this keeps such a nesting safe, not fast.
    #[cold]
    fn pin_elsewhere(&self) {
        self.outer.set(ptr::null());
        self.announce(WILDCARD | PINNED);
    }

    /// Stores `word` as the announcement, ordered before every load that
    /// follows.
    #[inline]
    fn announce(&self, word: u64) {
        // The announcement must be ordered before every pointer load of
        // the critical section (a store-load barrier), pairing with the
        // fence in `try_advance`. And it must be a Release: a collector
        // that reads it (Relaxed, then its Acquire fence) and so advances
        // past our previous pin must see our previous critical sections as
        // done; the Release of `unpin` alone does not carry over, since a
        // plain store ends the release sequence it headed (C++20).
        if ANNOUNCE_BY_SWAP {
            // x86: `xchg` is a full barrier, and cheaper than the `mfence`
            // of a SeqCst fence on Intel. This leans on the hardware: in
            // the language's model a SeqCst RMW followed by Relaxed loads
            // is no store-load barrier against the fence in `try_advance`
            // (crossbeam-epoch's pin takes the same liberty with a SeqCst
            // compare-exchange). The compiler fence keeps the section's
            // loads below the swap in the compiled code (the swap's Acquire
            // half already should).
            self.state.swap(word, Ordering::SeqCst);
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            self.state.store(word, Ordering::Release);
            fence(Ordering::SeqCst);
        }
    }

    #[inline]
    fn unpin(&self) {
        let depth = self.depth.get() - 1;
        self.depth.set(depth);
        if depth == 0 {
            // Release: every access of the critical section happens before
            // a collector that reads "not pinned" frees anything.
            self.state.store(0, Ordering::Release);
        }
    }

    /// Narrows an outermost wide ranged pin in `domain` to the ids up to
    /// `last` (see [`Guard::narrow_to`]).
    #[inline]
    fn narrow_to(&self, domain: &Domain, last: u64) {
        if self.depth.get() != 1 || !ptr::eq(self.outer.get(), domain) {
            return;
        }
        let word = self.announced();
        if word & RANGED == 0 || (word >> SPAN_SHIFT) & UNBOUNDED != UNBOUNDED {
            return;
        }
        let lo = word >> LO_SHIFT;
        let span = past(last, lo);
        if span < UNBOUNDED {
            let narrowed = (word & !(UNBOUNDED << SPAN_SHIFT)) | span << SPAN_SHIFT;
            // Relaxed: the pin stops covering only segments this thread
            // has not reached, so nothing of ours need be ordered before
            // a collector that reads the narrower cover.
            self.state.store(narrowed, Ordering::Relaxed);
        }
    }

    /// Whether the thread's pins cover all of `domain` now (an epoch pin
    /// in it, or the wildcard; not a ranged pin).
    fn covers(&self, domain: &Domain) -> bool {
        self.depth.get() > 0
            && !self.is_ranged()
            && (ptr::eq(self.outer.get(), domain) || self.outer.get().is_null())
    }

    /// Whether the thread's pins cover segment `id` of a list in `domain`.
    fn protects(&self, domain: &Domain, id: u64) -> bool {
        self.covers(domain)
            || (self.depth.get() > 0
                && ptr::eq(self.outer.get(), domain)
                && self.is_ranged()
                && range_covers(self.announced(), id))
    }

    /// The thread's own announcement (only it writes `state`, so a plain
    /// load reads its last store). Read off the fast paths only: for a
    /// nested pin, and for debug checks.
    fn announced(&self) -> u64 {
        self.state.load(Ordering::Relaxed)
    }

    /// Whether the outermost pin is ranged (and not yet the wildcard).
    fn is_ranged(&self) -> bool {
        self.depth.get() > 0 && self.announced() & RANGED != 0
    }
}

struct Global {
    /// The domain of the collector ([`retire`]).
    collector: Domain,
    /// Every participant ever registered (reused, never removed). Under a
    /// lock: as a lock-free stack it measured nothing on the 2 cores and
    /// multiplied loom's executions of the channel models by 6 to 8 (scans
    /// and registrations racing freely); a gain on many cores is not
    /// measured.
    locals: Mutex<Vec<Arc<Local>>>,
    /// Retired objects in three bags by tag modulo 3. A collector at epoch
    /// `now` empties bag `(now + 1) % 3`: its tags are `now - 2`, `now - 5`,
    /// ... (no tag is newer than `now`), all past their grace period. So a
    /// collection costs what it frees, not what is waiting: a thread pinned
    /// through a time slice holds the epoch back while thousands of objects
    /// retire, and scanning all of them on every retirement took a sixth of
    /// an oversubscribed benchmark's time (measured: unbounded_mpmc, 4 pairs,
    /// when segments still went to the collector).
    /// Each entry keeps its tag, and is freed only if the tag is two behind:
    /// the congruence breaks where the epoch wraps (2^32 is not a multiple
    /// of 3: on a 32-bit target, the bag emptied at epoch `2^32 - 1` held
    /// that very epoch's retirements).
    garbage: Mutex<[Vec<(usize, Deferred)>; 3]>,
}

impl Global {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Global {
            collector: Domain::untagged(),
            locals: Mutex::new(Vec::new()),
            garbage: Mutex::new([Vec::new(), Vec::new(), Vec::new()]),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Global {
            collector: Domain::untagged(),
            locals: Mutex::new(Vec::new()),
            garbage: Mutex::new([Vec::new(), Vec::new(), Vec::new()]),
        }
    }
}

/// A plain static: no lazy-initialisation check on the pin path.
#[cfg(not(loom))]
static GLOBAL: Global = Global::new();

#[cfg(not(loom))]
#[inline(always)]
fn global() -> &'static Global {
    &GLOBAL
}

#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: Global = Global::new();
}

#[cfg(loom)]
fn global() -> &'static Global {
    &GLOBAL
}

/// This thread's participant, registered in the global list.
struct Handle {
    local: Arc<Local>,
}

impl Handle {
    fn register() -> Handle {
        let mut locals = global().locals.lock().unwrap();
        let reusable = locals.iter().find(|l| {
            l.in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        let local = match reusable {
            Some(l) => l.clone(),
            None => {
                let l = Arc::new(Local::new());
                locals.push(l.clone());
                l
            }
        };
        Handle { local }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // The thread's fast-path pointer goes first (a pin from a later TLS
        // destructor then registers a temporary participant), then the
        // participant is handed back. `try_with`: under loom the pointer's
        // thread-local may already be gone.
        let me: *const Local = &*self.local;
        let _ = LOCAL.try_with(|l| {
            if l.get() == me {
                l.set(ptr::null());
            }
        });
        self.local.in_use.store(false, Ordering::Release);
    }
}

// The fast path: a pointer to this thread's participant, null until the
// first pin (and again once `HANDLE` is destroyed). A const-initialised
// thread-local without a destructor, so reading it is one TLS load with no
// lazy-initialisation or destroyed-state check. The participant outlives the
// pointer: the global list holds an `Arc` to it for the life of the process,
// and `HANDLE`'s destructor clears the pointer before giving the participant
// away.
#[cfg(not(loom))]
thread_local! {
    static LOCAL: Cell<*const Local> = const { Cell::new(ptr::null()) };
    static HANDLE: Handle = Handle::register();
}

#[cfg(loom)]
loom::thread_local! {
    static LOCAL: Cell<*const Local> = Cell::new(ptr::null());
}

#[cfg(loom)]
loom::thread_local! {
    static HANDLE: Handle = Handle::register();
}

/// Keeps every object reachable when it was created from being freed.
pub(crate) struct Guard {
    /// The participant pinned (this thread's, or `owned`'s).
    local: *const Local,
    /// Non-null when the thread-local was gone (a pin from a TLS
    /// destructor): a leaked `Box<Handle>` that this guard frees. A raw
    /// pointer, not an `Option<Box<_>>`, so the common drop inlines to a
    /// null test.
    owned: *mut Handle,
    /// Guards must be dropped on the thread that pinned.
    _not_send: PhantomData<*mut ()>,
}

/// Pins the current thread in `domain`: what the domain's objects held
/// reachable stays allocated until the guard drops.
#[inline]
pub(crate) fn pin(domain: &Domain) -> Guard {
    pin_as(domain, None)
}

/// Pins the current thread in `domain` for a walk that reaches only
/// segments (of one list in the domain) whose ids are `lo` or more, or,
/// with `only`, segment `lo` alone.
///
/// What such a pin keeps is named by ids, not by an epoch, so a thread
/// preempted inside it holds back only the segments it covers, never the
/// epoch: while it covers one segment, the list frees every other one it
/// retires. Its user must reach nothing outside its cover: no `head`, no
/// other list (a pin nested in a ranged one turns the announcement into
/// the wildcard, which covers everything).
///
/// `lo` must be read before the pin, and no more than the id of any
/// segment the walk reaches: the walk then starts from a cursor loaded
/// after the pin, so a segment it reaches was not retired before the
/// pin's fence, and a collector whose scan missed the pin (came before
/// that fence) frees only segments retired before its scan, which that
/// cursor is past.
#[inline]
pub(crate) fn pin_ranged(domain: &Domain, lo: u64, only: bool) -> Guard {
    pin_as(domain, Some((lo, only)))
}

#[inline(always)]
fn pin_as(domain: &Domain, lo: Option<(u64, bool)>) -> Guard {
    let local = LOCAL.try_with(Cell::get).unwrap_or(ptr::null());
    if local.is_null() {
        return pin_slow(domain, lo);
    }
    // SAFETY: a non-null `LOCAL` points to this thread's participant, kept
    // alive by the global list (see `LOCAL`); only this thread uses its
    // `Cell`s.
    pin_local(unsafe { &*local }, domain, lo);
    Guard {
        local,
        owned: ptr::null_mut(),
        _not_send: PhantomData,
    }
}

#[inline(always)]
fn pin_local(local: &Local, domain: &Domain, lo: Option<(u64, bool)>) {
    match lo {
        None => local.pin(domain),
        Some((lo, only)) => local.pin_ranged(domain, lo, only),
    }
}

/// First pin of a thread (registers it), or a pin after its thread-locals
/// were destroyed (uses a temporary participant).
#[cold]
fn pin_slow(domain: &Domain, lo: Option<(u64, bool)>) -> Guard {
    let local = HANDLE
        .try_with(|h| {
            let p: *const Local = &*h.local;
            let _ = LOCAL.try_with(|l| l.set(p));
            p
        })
        .ok();
    match local {
        Some(local) => {
            // SAFETY: as in `pin`: `HANDLE` owns this thread's participant.
            pin_local(unsafe { &*local }, domain, lo);
            Guard {
                local,
                owned: ptr::null_mut(),
                _not_send: PhantomData,
            }
        }
        None => {
            let handle = Box::into_raw(Box::new(Handle::register()));
            // SAFETY: just leaked; freed by the guard's drop.
            let local: *const Local = unsafe { &*(*handle).local };
            // SAFETY: `handle` keeps the participant alive.
            pin_local(unsafe { &*local }, domain, lo);
            Guard {
                local,
                owned: handle,
                _not_send: PhantomData,
            }
        }
    }
}

/// Pins the current thread in the collector's domain (Lscq's rings).
#[inline]
pub(crate) fn pin_collector() -> Guard {
    pin(&global().collector)
}

impl Guard {
    /// Whether this thread's pins cover `domain` (for debug checks that a
    /// list is walked under a pin in its own domain).
    pub(crate) fn covers(&self, domain: &Domain) -> bool {
        // SAFETY: as in `drop`: the participant outlives the guard.
        unsafe { &*self.local }.covers(domain)
    }

    /// Whether this thread is pinned in `domain` at all (by epoch, by
    /// range, or by the wildcard).
    pub(crate) fn pins(&self, domain: &Domain) -> bool {
        // SAFETY: as in `drop`.
        let local = unsafe { &*self.local };
        local.depth.get() > 0 && (ptr::eq(local.outer.get(), domain) || local.outer.get().is_null())
    }

    /// Narrows a wide ranged pin (every id from its first on) to the ids
    /// from its first to `last`, once its user knows it reaches no
    /// further: a walk to the segment of an index it has taken. A thread
    /// preempted after this keeps those segments alone, where the wide pin
    /// kept everything its list retired meanwhile. Nothing changes unless
    /// the guard is the thread's only pin, a wide ranged one in `domain`,
    /// and `last` lies within the span an announcement can name.
    #[inline]
    pub(crate) fn narrow_to(&self, domain: &Domain, last: u64) {
        // SAFETY: as in `drop`.
        unsafe { &*self.local }.narrow_to(domain, last)
    }

    /// Whether this thread's pins keep segment `id` of a list in `domain`
    /// (for debug checks that a ranged walk stays inside its cover).
    pub(crate) fn protects(&self, domain: &Domain, id: u64) -> bool {
        // SAFETY: as in `drop`.
        unsafe { &*self.local }.protects(domain, id)
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `local` is this thread's participant or `owned`'s, both
        // alive at least as long as this guard (`owned` is freed below).
        unsafe { &*self.local }.unpin();
        if !self.owned.is_null() {
            // SAFETY: `owned` was leaked by `pin_slow` for this guard alone.
            drop_owned(unsafe { Box::from_raw(self.owned) });
        }
    }
}

#[cold]
fn drop_owned(handle: Box<Handle>) {
    drop(handle);
}

/// Hands `d` to the collector, and collects. The object must already be
/// unreachable for threads that pin from now on.
pub(crate) fn retire(d: Deferred) {
    let global = global();
    let epoch = retirement_tag(&global.collector);
    global.garbage.lock().unwrap()[epoch % 3].push((epoch, d));
    collect();
}

/// The epoch of `domain` to tag an object unlinked just before this call
/// with: it may be freed once the epoch is two past the tag ([`try_advance`]
/// returns the epoch). For reclaimers of their own (segment lists) and
/// [`retire`].
pub(crate) fn retirement_tag(domain: &Domain) -> usize {
    // The unlink that preceded this call is ordered before the epoch read, so
    // the tag is never older than the last epoch in which a thread could have
    // loaded the pointer.
    fence(Ordering::SeqCst);
    domain.epoch.load(Ordering::Relaxed)
}

/// Tries to advance the collector's epoch, then frees what has outlived its
/// grace period.
pub(crate) fn collect() {
    let global = global();
    try_advance(&global.collector, None);
    let mut garbage = global.garbage.lock().unwrap();
    // Read under the lock: every entry pushed so far was tagged with an epoch
    // read before its push, so no tag is newer than `now`. (Read before the
    // lock, a concurrent retire could push a tag of `now + 1` into the very
    // bag this collection empties.) A bag skipped because two advances came
    // between collections is emptied three advances later: late, never early.
    let now = global.collector.epoch.load(Ordering::Acquire);
    // Run under the lock, so collecting allocates nothing; deferred frees
    // only return memory (they never retire or collect). An entry the wrap
    // put in this bag too young stays for the bag's next turn.
    let bag = &mut garbage[now.wrapping_add(1) % 3];
    let mut i = 0;
    while i < bag.len() {
        // Signed: a tag newer than `now` (impossible under the lock) would
        // count as too young, not as ancient.
        if now.wrapping_sub(bag[i].0) as isize >= 2 {
            bag.swap_remove(i).1.run();
        } else {
            i += 1;
        }
    }
}

/// The ranged pins ([`pin_ranged`]) a scan of one domain found: what
/// the domain's lists must keep besides what its epoch keeps.
pub(crate) struct Ranges {
    /// The first `RANGES_KEPT` ranged announcements found.
    words: [u64; RANGES_KEPT],
    len: usize,
    /// A wildcard, or more ranged pins than kept: every id is covered.
    all: bool,
}

/// Ranged pins a scan keeps apart; past them it keeps everything, until
/// a later scan finds fewer. One per thread that can be inside a ranged
/// pin on one list at once: a list shared by more threads than that, all
/// caught mid-operation, frees nothing at that reclaim.
const RANGES_KEPT: usize = 16;

impl Ranges {
    const fn none() -> Self {
        Ranges {
            words: [0; RANGES_KEPT],
            len: 0,
            all: false,
        }
    }

    fn add(&mut self, state: u64) {
        if self.len == RANGES_KEPT {
            self.all = true;
        } else {
            self.words[self.len] = state;
            self.len += 1;
        }
    }

    /// Whether some ranged pin may still reach segment `id`.
    pub(crate) fn cover(&self, id: u64) -> bool {
        self.all || self.words[..self.len].iter().any(|&w| range_covers(w, id))
    }
}

/// Tries to advance the epoch of `domain`, and reads which segments the
/// ranged pins in it keep. Returns the epoch after the attempt: a segment
/// retired before this call (its tag read before it), tagged two or more
/// below that epoch and not covered by the `Ranges`, may be freed.
pub(crate) fn scan(domain: &Domain) -> (usize, Ranges) {
    let mut ranges = Ranges::none();
    try_advance(domain, Some(&mut ranges));
    // Acquire: as in `advance`.
    (domain.epoch.load(Ordering::Acquire), ranges)
}

fn try_advance(domain: &Domain, mut ranges: Option<&mut Ranges>) {
    let counter = &domain.epoch;
    let epoch = counter.load(Ordering::Relaxed);
    // Pairs with the fence in `pin`: either we see a participant's
    // announcement, or it sees this epoch (or a later one) and so cannot
    // have loaded anything retired before it. For a ranged pin, the same
    // fence: either we see its cover, or its walk starts from a cursor
    // loaded after our caller's retirements, past what they retired.
    fence(Ordering::SeqCst);
    let tag = domain.tag();
    let mut advance = true;
    {
        let locals = global().locals.lock().unwrap();
        for local in locals.iter() {
            // (Acquire under `--cfg scalechan_tsan`: ThreadSanitizer does
            // not model fences, and without the Acquire fence below it
            // sees no order between a critical section and the frees after
            // it. Same semantics, spelt the way TSan tracks.)
            let state = local.state.load(if cfg!(scalechan_tsan) {
                Ordering::Acquire
            } else {
                Ordering::Relaxed
            });
            if holds_back(state, tag, epoch) {
                advance = false;
            }
            match ranges.as_deref_mut() {
                None if !advance => return,
                None => {}
                Some(ranges) => {
                    if state & WILDCARD != 0 {
                        ranges.all = true;
                    } else if state & (PINNED | RANGED | TAG_MASK) == PINNED | RANGED | tag {
                        ranges.add(state);
                    }
                }
            }
        }
    }
    // Acquire: the critical sections of participants seen unpinned, pinned
    // elsewhere, pinned again at this epoch, or narrowed (all Release
    // stores), happen before anything freed after this scan.
    fence(Ordering::Acquire);
    if advance {
        let _ = counter.compare_exchange(
            epoch,
            epoch.wrapping_add(1),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;

    static FREED: StdAtomicUsize = StdAtomicUsize::new(0);

    /// Held by the tests that pin for a while or count frees, so that one
    /// does not stall the other. (The crate's other unit tests pin too, but
    /// only for an operation at a time.)
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    unsafe fn count_free(p: *mut ()) {
        // SAFETY: `p` came from `Box::into_raw` in the test and is freed once.
        drop(unsafe { Box::from_raw(p as *mut u64) });
        FREED.fetch_add(1, Ordering::Relaxed);
    }

    /// Collects until the object retired with (at least) `tag`, counted
    /// in `FREED` from `before`, is freed, and checks that the epoch was
    /// then two or more past the tag (a signed difference, so across a
    /// wrap too). Other tests in this binary may hold a pin for a moment
    /// and delay an advance, so it collects within a bound that only a
    /// collector which never frees can reach.
    fn collect_until_freed(before: usize, tag: usize) {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            // Freed read before the epoch: a free seen here happened at an
            // epoch no later than the one read next.
            let freed = FREED.load(Ordering::SeqCst) > before;
            let now = global().collector.epoch.load(Ordering::SeqCst);
            if freed {
                assert!(
                    now.wrapping_sub(tag) as isize >= 2,
                    "freed at epoch {now}, before the epoch was two ahead of its tag {tag}"
                );
                return;
            }
            assert!(
                std::time::Instant::now() < give_up,
                "never freed (epoch went from {tag} to {now})"
            );
            collect();
            std::thread::yield_now();
        }
    }

    #[test]
    fn retired_objects_are_freed_after_two_advances() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = || global().collector.epoch.load(Ordering::SeqCst);
        let before = FREED.load(Ordering::Relaxed);
        // The retirement's tag is at least this epoch.
        let oldest_tag = epoch();
        let p = Box::into_raw(Box::new(7u64)) as *mut ();
        // SAFETY: `p` is unreachable (never shared) and `count_free` frees it once.
        retire(unsafe { Deferred::new(p, count_free) });
        collect_until_freed(before, oldest_tag);
    }

    /// The epoch wraps (a 32-bit target's does after 2^32 advances, and
    /// 2^32 is not a multiple of the 3 bags): an object retired just
    /// before is freed only once the epoch is two past its tag, counted
    /// across the wrap. (Other tests' pins and lists see the jump too; a
    /// jump forward of this size only makes their tags look newer, so it
    /// delays their frees.)
    #[test]
    fn retirement_across_the_wrap_waits_two_advances() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = || global().collector.epoch.load(Ordering::SeqCst);
        // Pinned one epoch behind, this thread holds the epoch at
        // `usize::MAX` while the object retires there, so the collection
        // in `retire` empties bag `(MAX + 1) % 3 = 0`, the object's own
        // (`MAX % 3 = 0`), at age 0.
        global()
            .collector
            .epoch
            .store(usize::MAX - 1, Ordering::SeqCst);
        let guard = pin_collector();
        global().collector.epoch.store(usize::MAX, Ordering::SeqCst);
        let before = FREED.load(Ordering::Relaxed);
        let tag = epoch();
        let p = Box::into_raw(Box::new(9u64)) as *mut ();
        // SAFETY: never shared; `count_free` frees it once.
        retire(unsafe { Deferred::new(p, count_free) });
        assert_eq!(FREED.load(Ordering::SeqCst), before, "freed at age 0");
        drop(guard);
        collect_until_freed(before, tag);
    }

    #[test]
    fn pinned_thread_blocks_freeing() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let guard = pin_collector();
        let start = global().collector.epoch.load(Ordering::Relaxed);
        for _ in 0..8 {
            collect();
        }
        // Pinned at `start` (or one before): the epoch cannot run two ahead.
        let now = global().collector.epoch.load(Ordering::Relaxed);
        assert!(
            now.wrapping_sub(start) <= 1,
            "epoch ran ahead of a pinned thread"
        );
        drop(guard);
    }
}

/// Loom models of the collector (run with `--cfg loom ... --lib`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicBool;

    /// The object: `freed` flips when its deferred free runs.
    unsafe fn mark_freed(p: *mut ()) {
        // SAFETY: `p` is the leaked `Arc<AtomicBool>` made in the model.
        let flag = unsafe { std::sync::Arc::from_raw(p as *const AtomicBool) };
        flag.store(true, Ordering::Release);
    }

    /// The object of [`reads_before_a_repin_happen_before_the_free`]: a
    /// value the reader reads and the free overwrites, in a loom cell, so
    /// that loom reports the two unordered.
    struct Watched {
        value: loom::cell::UnsafeCell<u64>,
    }

    unsafe fn overwrite_and_free(p: *mut ()) {
        // SAFETY: `p` is the leaked `Box<Watched>` made in the model, freed
        // once, here.
        let watched = unsafe { Box::from_raw(p as *mut Watched) };
        // SAFETY: the grace period is over: no reader may still read it
        // (which loom checks: a read not ordered before this write fails).
        watched.value.with_mut(|v| unsafe { *v = 0 });
    }

    /// Bound 3. A reader reads the object in one pin, unpins and pins
    /// again, and stays pinned while the other thread unlinks the object,
    /// retires it and collects until it is freed. Each advance may read
    /// the reader's second pin, not its unpin, so that pin's announcement
    /// must carry the first pin's read to the free: announced with a
    /// Relaxed store (which ends the unpin's release sequence), loom finds
    /// the read and the free unordered.
    #[test]
    fn reads_before_a_repin_happen_before_the_free() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            let watched = Box::into_raw(Box::new(Watched {
                value: loom::cell::UnsafeCell::new(7),
            }));
            let shared = std::sync::Arc::new(loom::sync::atomic::AtomicPtr::new(watched));
            let reader_view = shared.clone();
            let reader = loom::thread::spawn(move || {
                {
                    let _guard = pin_collector();
                    let p = reader_view.load(Ordering::Acquire);
                    if !p.is_null() {
                        // SAFETY: loaded while pinned, so not yet freed.
                        let v = unsafe { &*p }.value.with(|v| unsafe { *v });
                        assert_eq!(v, 7);
                    }
                }
                let _guard = pin_collector();
                loom::thread::yield_now();
            });
            shared.store(ptr::null_mut(), Ordering::Release);
            // SAFETY: unlinked above; `overwrite_and_free` frees it once.
            retire(unsafe { Deferred::new(watched as *mut (), overwrite_and_free) });
            for _ in 0..3 {
                collect();
            }
            reader.join().unwrap();
            collect();
        });
    }

    /// Bound 3. A reader pinned before the unlink never sees the object
    /// freed, while another thread retires a second object and collects
    /// (the retire-versus-collect race: a tag newer than the collector's
    /// epoch must not count as expired).
    #[test]
    fn pinned_reader_never_sees_a_free() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            let freed = std::sync::Arc::new(AtomicBool::new(false));
            let linked = std::sync::Arc::new(AtomicBool::new(true));
            let (f2, l2) = (freed.clone(), linked.clone());
            let reader = loom::thread::spawn(move || {
                let _guard = pin_collector();
                if l2.load(Ordering::Acquire) {
                    assert!(
                        !f2.load(Ordering::Acquire),
                        "freed while a pinned reader can reach it"
                    );
                    loom::thread::yield_now();
                    assert!(
                        !f2.load(Ordering::Acquire),
                        "freed while a pinned reader can reach it"
                    );
                }
            });
            let p = std::sync::Arc::into_raw(freed.clone()) as *mut ();
            let retirer = loom::thread::spawn(move || {
                linked.store(false, Ordering::Release);
                // SAFETY: unlinked above; `mark_freed` consumes the Arc once.
                retire(unsafe { Deferred::new(p, mark_freed) });
            });
            let other = loom::thread::spawn(|| {
                let q = std::sync::Arc::into_raw(std::sync::Arc::new(AtomicBool::new(false)))
                    as *mut ();
                // SAFETY: never shared; `mark_freed` consumes the Arc once.
                retire(unsafe { Deferred::new(q, mark_freed) });
                collect();
            });
            reader.join().unwrap();
            retirer.join().unwrap();
            other.join().unwrap();
            for _ in 0..3 {
                collect();
            }
            assert!(freed.load(Ordering::Acquire), "never freed");
        });
    }
}
