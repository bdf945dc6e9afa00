//! `Scq<T>`: a bounded lock-free MPMC FIFO queue (Nikolaev, "A Scalable,
//! Portable, and Memory-Efficient Lock-Free FIFO Queue", DISC 2019,
//! arXiv:1908.04511).
//!
//! # Design
//!
//! One *ring* of 128-bit entries, the paper's CAS2 layout: a cycle, an
//! `IsSafe` bit and an `Empty` bit in the high half, a 64-bit payload in the
//! low half. What the payload is depends on `T`, chosen at compile time:
//!
//! - *inline* (`size_of::<T>() <= 8`, `align_of::<T>() <= 8`): the value's
//!   own bytes. A counter `free` (initially `n`) bounds how many values the
//!   ring holds: push takes a unit (none left: full), enqueues the value;
//!   pop dequeues a value, marks its entry consumed, gives the unit back.
//!   Two ring-side RMWs and one counter RMW per operation.
//! - *out of line* (larger `T`): values live in a slot array of `n` cells,
//!   and two index rings (the paper's `aq` and `fq`) move slot numbers
//!   around, so a push never allocates: push takes a free slot number from
//!   `fq` (none: full), writes the value into that slot, publishes the
//!   number in `aq`; pop takes a number from `aq`, reads the slot, gives
//!   the number back to `fq`.
//!
//! Either way the ring (`aq`) never has more than `n` entries occupied or
//! being consumed: `fq` holds only `n` numbers, `free` only `n` units, and a
//! unit or number comes back only after its entry was marked consumed.
//!
//! Each ring has `R = 2m` entries where `m = n.next_power_of_two()`.
//! `head` and `tail` are moved by increments (`loom::take_index`: a CAS,
//! or a fetch-and-add after a short wait when the CAS lost a race);
//! position `p` lives in entry `remap(p mod R)` and belongs to cycle
//! `p / R`. A dequeuer that arrives before its enqueuer bumps the entry's
//! cycle so the late enqueuer moves on; one that finds an older value still
//! sitting there clears `IsSafe`, so only an enqueuer no dequeuer has passed
//! may reuse that entry. A `limit` (see "Threads") stops dequeuers from
//! livelocking against enqueuers, and `catchup` pulls `tail` up to `head`
//! after dequeuers overran it.
//!
//! The paper assumes one total order of all accesses. Here `head`, `tail`,
//! `limit` *and every access to an entry* are SeqCst: the "unsafe"
//! check pairs a dequeuer's head increment-then-entry-load with an
//! enqueuer's entry-load-then-head-load, a Dekker pattern. With Acquire
//! entry loads a dequeuer could read an old, unsafe value after a stalled
//! dequeuer had already consumed it, pass the position without a CAS,
//! while an enqueuer that saw the entry consumed read an old `head` and
//! wrote its value behind the dequeuers for good (found in review; loom
//! `stalled_dequeuer_loses_no_value`). On x86-64 this costs nothing: a
//! 128-bit CAS is a locked `cmpxchg16b` whatever its ordering, and a SeqCst
//! load is a plain load.
//!
//! # Threads
//!
//! The paper's CAS2 variant that stores values directly in a ring of size `n`
//! decides fullness from `tail - head`, which each of `k` racing enqueuers
//! can overshoot by one: it is only correct with at most `n` concurrent
//! threads. This queue uses the paper's other construction instead: each
//! ring has `2m >= 2n` entries but only ever holds `n` things at once (`n`
//! slot numbers, or `n` units of `free` for inline values; a number or unit
//! is in the ring, or held by one thread), so a ring can never be full and
//! an enqueue always finds an entry within a bounded number of steps however
//! many threads race. Fullness is decided by `fq` running dry or `free`
//! reaching 0, never by a ring's capacity.
//!
//! Dequeuers must not chase enqueuers forever: a dequeuer that claims a
//! position before its enqueuer arrives makes that enqueuer retry further
//! on, and without a bound the two could run ahead of each other with no
//! operation ever finishing. The paper bounds them with a *threshold*,
//! reset to `3m - 1` by every enqueue and decremented by every failed
//! dequeue step, and its Lemma 5.4 assumes at most `m` threads: a
//! dequeuer decrements *after* its failed step, so one paused between the
//! two decrements late, after an enqueue that came meanwhile reset the
//! threshold, and `3m` paused at once drive it negative while that
//! enqueue's value sits in the ring: every pop then answers "empty" and,
//! with the ring full, every push "full", for good (found in review, with
//! pauses forced at the two points; three did it to a capacity-1 queue).
//!
//! This queue bounds dequeuers by a *position* instead: `limit`. Dequeuers
//! claim a position only below it (a read-only test before the
//! fetch-and-add), and an enqueue that wrote its value at position `p`
//! raises it above `p` (`fetch_max`, only when it is not already there, so
//! about once per `m` pushes). Two facts make this sound for any number of
//! threads, paused or not:
//!
//! - *no value stranded*: `limit` never decreases while the ring is in
//!   use, so once an enqueue at `p` has returned, dequeuers keep claiming
//!   positions until one claims `p` and takes the value (the entry's cycle
//!   lets no other position take it). A late reader of `limit` only sees a
//!   smaller one: at worst it answers "empty" for a pop that overlapped the
//!   enqueue, as the paper's threshold does.
//! - *no livelock*: only a finished enqueue raises `limit`, so while no
//!   operation finishes, dequeuers claim at most `limit - head` positions
//!   (plus one each for those past the test) and then answer "empty";
//!   enqueuers then find entries no dequeuer passed.
//!
//! A failed step costs no shared write (the threshold's `fetch_sub` is
//! gone), and the empty fast path stays loads only.
//!
//! # Optimisations from the ByteDance LSCQ article
//!
//! - *cache remap*: neighbouring positions go to entries on different cache
//!   lines;
//! - *fixstate*: a dequeuer that overran `tail` only fixes it if no later
//!   dequeuer has moved `head` since (that one will), which avoids a storm of
//!   failing CASes when dequeuers outnumber enqueuers;
//! - *fast path*: a pop decides "empty" from loads alone when `head` has
//!   reached `limit` or `tail <= head`, and the replacement entry is only built
//!   when it is needed.

use crate::atomic128::AtomicU128;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::loom::{take_index, CachePadded, RaceBackoff};
use std::fmt;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::ptr;

/// Set in an index ring's `tail` once the ring is finalized (LSCQ): every
/// later enqueue fails. Never set for a standalone `Scq`.
pub(crate) const FINALIZED: u64 = 1 << 63;

/// Largest capacity accepted: positions are 63-bit counters and the slot
/// number lives in 64 bits, but the two rings must also fit in memory.
/// (A `u64`: as a `usize` it would not compile for 32-bit targets.)
const MAX_CAPACITY: u64 = 1 << 40;

/// log2(entries per 128 bytes), for `IndexRing::remap`.
const REMAP_SHIFT: u32 = 3;

// High 64 bits of an entry: cycle << 2 | SAFE | EMPTY.
const EMPTY: u64 = 1;
const SAFE: u64 = 2;

#[inline]
fn pack(cycle: u64, flags: u64, index: u64) -> u128 {
    (((cycle << 2) | flags) as u128) << 64 | index as u128
}

#[inline]
fn cycle_of(e: u128) -> u64 {
    ((e >> 64) as u64) >> 2
}

#[inline]
fn flags_of(e: u128) -> u64 {
    ((e >> 64) as u64) & (SAFE | EMPTY)
}

/// Marks `entry`, last read as `e` and of the dequeuer's own cycle,
/// consumed, and returns the index it holds: a CAS from the value we hold
/// (a `fetch_or` would load the entry again first). It fails only if a
/// later dequeuer cleared `SAFE` meanwhile; the payload cannot change.
///
/// SeqCst: an enqueuer of a later cycle that reads this consumed entry
/// (SeqCst load) and then `head` must be ordered after any dequeuer that
/// read the entry before this CAS (see `IndexRing::enqueue`; loom
/// `stalled_dequeuer_loses_no_value`). Free on x86-64, where the CAS is a
/// locked `cmpxchg16b` whatever the ordering.
fn consume(entry: &AtomicU128, mut e: u128) -> u64 {
    loop {
        match entry.compare_exchange(
            e,
            e | (EMPTY as u128) << 64,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => return index_of(e),
            Err(now) => e = now,
        }
    }
}

#[inline]
fn index_of(e: u128) -> u64 {
    e as u64
}

/// An array of a ring that LSCQ gives back while the ring waits for reuse
/// and gets again before the ring's next life (`Scq::release_storage`,
/// `Scq::renew`). In a cell because the ring's counters stay readable by
/// unpinned threads throughout (`Lscq`'s emptiness look), so the ring is
/// never borrowed mutably; only the array's pointer changes, and no such
/// reader looks at the array. A standalone `Scq` never replaces it.
struct Storage<E>(std::cell::UnsafeCell<Box<[E]>>);

// SAFETY: the array moves between threads with its ring; it is replaced
// only under `replace`'s contract (no other thread uses it), otherwise
// shared as `&[E]`, which needs `E: Sync`.
unsafe impl<E: Send + Sync> Sync for Storage<E> {}

impl<E> Storage<E> {
    fn new(array: Box<[E]>) -> Self {
        Storage(std::cell::UnsafeCell::new(array))
    }

    #[inline(always)]
    fn get(&self) -> &[E] {
        // SAFETY: the box is replaced only by `replace`, whose caller
        // guarantees that no other thread uses the array (and this thread
        // holds no `&[E]` from before: see its contract).
        unsafe { &*self.0.get() }
    }

    /// Puts `array` in place of the current one, which is returned.
    ///
    /// # Safety
    /// No other thread accesses this array (its ring is out of every
    /// queue's reach and its grace period is over: only `Lscq`'s
    /// emptiness look, which reads no array, may still reach the ring), and
    /// no reference from `get` is alive.
    unsafe fn replace(&self, array: Box<[E]>) -> Box<[E]> {
        // SAFETY: per the contract, this is the only access.
        unsafe { mem::replace(&mut *self.0.get(), array) }
    }
}

/// One of the paper's index rings: a FIFO of numbers below `n` that never
/// holds more than `m = R / 2` of them at once.
pub(crate) struct IndexRing {
    head: CachePadded<AtomicU64>,
    /// Bit 63 is [`FINALIZED`].
    tail: CachePadded<AtomicU64>,
    /// Dequeuers claim positions only below this (module docs, "Threads").
    /// Only grows while the ring is in use.
    limit: CachePadded<AtomicU64>,
    /// `tail` when the ring was finalized (`u64::MAX` before): positions
    /// from there on were taken by pushes that failed, `len` ignores them.
    final_tail: AtomicU64,
    entries: Storage<AtomicU128>,
    /// `log2(R)`.
    order: u32,
    /// `remap` parameters, precomputed: `(order - 3, 3)`, or `(order, 0)`
    /// for rings of at most 8 entries (identity).
    lines_order: u32,
    remap_shift: u32,
}

impl IndexRing {
    /// A ring of `2 * half` entries (`half` a power of two) holding `0..full`
    /// (`full <= half`) in order.
    fn new(half: usize, full: usize) -> Self {
        debug_assert!(half.is_power_of_two() && full <= half);
        let size = 2 * half;
        let order = size.trailing_zeros();
        let ring = IndexRing {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            limit: CachePadded::new(AtomicU64::new(0)),
            final_tail: AtomicU64::new(u64::MAX),
            entries: Storage::new(Self::fresh_entries(size)),
            order,
            lines_order: if order > REMAP_SHIFT {
                order - REMAP_SHIFT
            } else {
                order
            },
            remap_shift: if order > REMAP_SHIFT { REMAP_SHIFT } else { 0 },
        };
        ring.reset(full, true);
        ring
    }

    fn fresh_entries(size: usize) -> Box<[AtomicU128]> {
        (0..size)
            .map(|_| AtomicU128::new(pack(0, SAFE | EMPTY, 0)))
            .collect()
    }

    /// Makes the ring what `new(half, full)` built: `0..full` in order
    /// (`fresh`: the entries were just made by `fresh_entries`, and hold
    /// cycle 0 already). Relaxed stores: the ring is published (or its
    /// queue shared) after this with a Release. A ring renewed for LSCQ
    /// may be read meanwhile by an emptiness look, which
    /// `Lscq::looks_empty` validates.
    fn reset(&self, full: usize, fresh: bool) {
        let size = self.size();
        let entries = self.entries.get();
        debug_assert_eq!(entries.len(), size);
        // Positions start at `size` (cycle 1), so cycle-0 entries read as
        // "older than any position".
        if !fresh {
            for e in entries {
                e.store(pack(0, SAFE | EMPTY, 0), Ordering::Relaxed);
            }
        }
        for i in 0..full {
            let pos = (size + i) as u64;
            entries[self.remap(pos)].store(pack(1, SAFE, i as u64), Ordering::Relaxed);
        }
        self.head.store(size as u64, Ordering::Relaxed);
        self.tail.store((size + full) as u64, Ordering::Relaxed);
        // Past the last position placed by the slack, as an enqueue there
        // would have left it.
        self.limit
            .store((size + full) as u64 + self.limit_slack(), Ordering::Relaxed);
        self.final_tail.store(u64::MAX, Ordering::Relaxed);
    }

    /// Gives the entries back, leaving an empty ring of no entries that
    /// reads as empty (and that drops nothing).
    ///
    /// # Safety
    /// As [`Storage::replace`].
    unsafe fn release_entries(&self) {
        // SAFETY: per the contract.
        drop(unsafe { self.entries.replace(Box::new([])) });
        let size = self.size() as u64;
        self.head.store(size, Ordering::Relaxed);
        self.tail.store(size, Ordering::Relaxed);
        self.limit.store(0, Ordering::Relaxed);
    }

    /// Allocates the entries again if they were given back; `true` if it
    /// did (they are fresh).
    ///
    /// # Safety
    /// As [`Storage::replace`].
    unsafe fn restore_entries(&self) -> bool {
        if !self.entries.get().is_empty() {
            return false;
        }
        // SAFETY: per the contract.
        unsafe { self.entries.replace(Self::fresh_entries(self.size())) };
        true
    }

    /// A ring that is never used (the `fq` of an inline queue): no entries.
    fn unused() -> Self {
        IndexRing {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            limit: CachePadded::new(AtomicU64::new(0)),
            final_tail: AtomicU64::new(u64::MAX),
            entries: Storage::new(Box::new([])),
            order: 1,
            lines_order: 1,
            remap_shift: 0,
        }
    }

    /// How far past a value's position an enqueue raises `limit`: `m`, so
    /// that only about one push in `m` raises it (a read-modify-write on a
    /// line every pop reads), while dequeuers may overrun the last value by
    /// at most `m` positions, fewer than the paper's threshold allowed.
    #[inline]
    fn limit_slack(&self) -> u64 {
        (self.size() / 2) as u64
    }

    /// Lets dequeuers claim position `pos` (module docs, "Threads"): called
    /// by the enqueue that wrote a value there, after it did, so that only
    /// finished enqueues move `limit` (raised before the write, an enqueue
    /// that kept failing would keep dequeuers chasing it).
    #[inline]
    fn open_up_to(&self, pos: u64) {
        // SeqCst, as head and tail: a dequeuer that reads `limit` after
        // this (in the total order) and then `head` must see `pos` below.
        if self.limit.load(Ordering::SeqCst) <= pos {
            // `fetch_max`: racing enqueuers raise it in any order, and a
            // smaller value must never replace a larger one.
            self.limit
                .fetch_max(pos + 1 + self.limit_slack(), Ordering::SeqCst);
        }
    }

    #[inline]
    fn size(&self) -> usize {
        1 << self.order
    }

    /// Cache remap: consecutive positions land on different cache lines (8
    /// 16-byte entries per 128-byte pair of lines), so threads working on
    /// neighbouring positions do not share a line. Branch-free: for rings
    /// of at most 8 entries `remap_shift` is 0 and `lines_order` the whole
    /// order, which makes it the identity.
    #[inline]
    fn remap(&self, pos: u64) -> usize {
        let i = (pos as usize) & (self.size() - 1);
        let lines_mask = (1usize << self.lines_order) - 1;
        ((i & lines_mask) << self.remap_shift) | (i >> self.lines_order)
    }

    /// Appends `index`. Fails only when the ring is finalized.
    fn enqueue(&self, index: u64) -> bool {
        loop {
            // SeqCst on head, tail and limit: the paper's proofs assume one
            // total order over them (e.g. an enqueuer's limit raise against
            // a dequeuer's `tail <= head` test).
            let t = take_index(&self.tail, Ordering::SeqCst);
            if t & FINALIZED != 0 {
                return false;
            }
            let tcycle = t >> self.order;
            let entry = &self.entries.get()[self.remap(t)];
            // SeqCst: with the dequeuer's SeqCst entry load, this load is in
            // the total order with `head` (C++20 [atomics.order]/4): a
            // dequeuer that passed this position reading the entry before
            // the value we see here was consumed has its head FAA ordered
            // before our `head` load below (Acquire alone allows a stale
            // read there and loses our value). Also pairs with the CAS of
            // the dequeuer that last bumped this entry.
            let mut e = entry.load(Ordering::SeqCst);
            loop {
                let flags = flags_of(e);
                if cycle_of(e) < tcycle
                    && flags & EMPTY != 0
                    && (flags & SAFE != 0 || self.head.load(Ordering::SeqCst) <= t)
                {
                    let new = pack(tcycle, SAFE, index);
                    // SeqCst, as every entry access (module docs); its
                    // Release part publishes the slot write that preceded
                    // this enqueue to the dequeuer that acquires the entry.
                    match entry.compare_exchange(e, new, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(_) => {
                            self.open_up_to(t);
                            return true;
                        }
                        // The entry changed under us: re-examine it for the
                        // same position.
                        Err(now) => e = now,
                    }
                } else {
                    break;
                }
            }
        }
    }

    /// Read-only emptiness test, the pop fast path. `true` means the ring
    /// was empty at the moment `tail` (or `limit`) was read: `head` was read
    /// first and only grows, so then `tail <= head` and every position ever
    /// handed to an enqueuer also has a dequeuer (or every position a
    /// finished enqueue wrote has one). (Its loads must stay Acquire or
    /// stronger: `Lscq`'s unpinned look at a recycled ring relies on it.)
    #[inline]
    fn looks_empty(&self) -> bool {
        // `head` first: when `tail` or `limit` is read later, every
        // position below `h` has a dequeuer.
        let h = self.head.load(Ordering::SeqCst);
        let t = self.tail.load(Ordering::SeqCst) & !FINALIZED;
        // Or `limit`: every finished enqueue wrote below it.
        t <= h || h >= self.limit.load(Ordering::SeqCst)
    }

    /// Removes the oldest index, or `None` when the ring is empty. Inline:
    /// the empty answer is a few loads in the caller (the rest is out of
    /// line).
    #[inline]
    fn dequeue(&self) -> Option<u64> {
        if self.looks_empty() {
            return None;
        }
        #[cfg(all(test, not(loom)))]
        pause_points::at(0);
        self.dequeue_slow(false)
    }

    /// Dequeue from a finalized ring that ignores `limit`: it claims
    /// positions until it owns the last one ever handed to a successful
    /// enqueuer, so when it returns `None` every position below the final
    /// tail has a dequeuer, and no enqueue into this ring can succeed
    /// unnoticed later (LSCQ: nothing is left behind). Terminates because
    /// a finalized ring's tail only grows by the pushes that fail on it.
    fn dequeue_finalized(&self) -> Option<u64> {
        debug_assert!(self.tail.load(Ordering::SeqCst) & FINALIZED != 0);
        let h = self.head.load(Ordering::SeqCst);
        if self.real_tail() <= h {
            return None;
        }
        self.dequeue_slow(true)
    }

    /// `tail` without [`FINALIZED`], and without the positions of pushes
    /// that failed after finalization where that is already known.
    #[inline]
    fn real_tail(&self) -> u64 {
        let raw = self.tail.load(Ordering::SeqCst);
        let t = raw & !FINALIZED;
        if raw & FINALIZED != 0 {
            // The finalizer stores `final_tail` right after setting the bit;
            // until then `t` is an upper bound.
            t.min(self.final_tail.load(Ordering::SeqCst))
        } else {
            t
        }
    }

    fn dequeue_slow(&self, sweep: bool) -> Option<u64> {
        loop {
            let h = take_index(&self.head, Ordering::SeqCst);
            let hcycle = h >> self.order;
            let entry = &self.entries.get()[self.remap(h)];
            // SeqCst (see `enqueue`): ordered after our head FAA in the
            // total order, so an enqueuer that decides from `head <= T`
            // cannot write a value here that this load misses. Acquire part:
            // pairs with the enqueuer's CAS (or an RMW in its release
            // sequence): the slot it names is initialised.
            let mut e = entry.load(Ordering::SeqCst);
            loop {
                let ecycle = cycle_of(e);
                if ecycle == hcycle {
                    return Some(consume(entry, e));
                }
                if ecycle > hcycle {
                    // A later dequeuer already passed: we are late.
                    break;
                }
                let flags = flags_of(e);
                // Built only when needed (the article's fast path).
                let new = if flags & EMPTY != 0 {
                    // Not yet enqueued: claim the cycle so the late enqueuer
                    // of this position moves on.
                    pack(hcycle, flags, index_of(e))
                } else {
                    // An older value nobody took yet: leave it but make the
                    // entry unsafe for enqueuers that a dequeuer passed.
                    pack(ecycle, flags & !SAFE, index_of(e))
                };
                if new == e {
                    break;
                }
                // SeqCst, as every entry access: an enqueuer that reads
                // this value must see our head FAA (see `enqueue`).
                match entry.compare_exchange(e, new, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => break,
                    Err(now) => e = now,
                }
            }
            if sweep {
                if self.real_tail() <= h + 1 {
                    return None;
                }
                continue;
            }
            let overran = self.tail.load(Ordering::SeqCst) & !FINALIZED <= h + 1;
            if overran {
                self.catchup(h + 1);
            }
            // Or `limit`: our claim moved `head` to at least `h + 1`, so
            // this is the fast path's test without loading `head` again.
            if overran || h + 1 >= self.limit.load(Ordering::SeqCst) {
                #[cfg(all(test, not(loom)))]
                pause_points::at(1);
                return None;
            }
        }
    }

    /// Moves `tail` up to `head` after dequeuers overran it (seed 002's
    /// fixstate): gives up as soon as a later dequeuer has moved `head`,
    /// leaving the fix to that one.
    fn catchup(&self, our_head: u64) {
        loop {
            let h = self.head.load(Ordering::SeqCst);
            if our_head < h {
                return;
            }
            let t = self.tail.load(Ordering::SeqCst);
            // Also covers a finalized ring: bit 63 makes `t` huge.
            if t >= h {
                return;
            }
            if self
                .tail
                .compare_exchange(t, h, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    fn finalize(&self) {
        let t = self.tail.fetch_or(FINALIZED, Ordering::SeqCst);
        if t & FINALIZED == 0 {
            // Only the first finalizer sees the bit clear.
            self.final_tail.swap(t, Ordering::SeqCst);
        }
    }

    /// Number of positions between `head` and `tail`: exact when no
    /// operation is in progress, except that a position an enqueuer skipped
    /// because a delayed dequeuer still held its entry counts until a pop
    /// passes it.
    fn approx_len(&self) -> usize {
        loop {
            let raw = self.tail.load(Ordering::SeqCst);
            let h = self.head.load(Ordering::SeqCst);
            // Re-read tail so the pair is a snapshot.
            if self.tail.load(Ordering::SeqCst) == raw {
                return self.real_tail().saturating_sub(h) as usize;
            }
        }
    }
}

/// Places in `IndexRing::dequeue` where a test can hold a thread, to force
/// the interleavings a preemption could cause there (loom cannot reach
/// them: they need more paused threads than its models can have).
#[cfg(all(test, not(loom)))]
mod pause_points {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// 0: a pop past its emptiness look; 1: a pop about to answer "empty"
    /// after a failed step (where the paper's dequeuer decrements its
    /// threshold), having caught `tail` up or met `limit`.
    pub(super) const POINTS: usize = 2;

    thread_local!(static HELD: Cell<bool> = const { Cell::new(false) });

    /// The points of one test; tests that use them must not run at once
    /// (they take `SERIAL`).
    pub(super) static ARRIVED: [AtomicUsize; POINTS] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    pub(super) static RELEASED: [AtomicBool; POINTS] =
        [AtomicBool::new(false), AtomicBool::new(false)];
    pub(super) static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Makes this thread stop at every point until the test releases it.
    pub(super) fn hold_this_thread() {
        HELD.with(|h| h.set(true));
    }

    /// Waits until `threads` held threads have arrived at `point`; panics
    /// after a minute (a thread that went another way would never come).
    pub(super) fn wait_for(point: usize, threads: usize) {
        let start = std::time::Instant::now();
        while ARRIVED[point].load(Ordering::SeqCst) < threads {
            assert!(
                start.elapsed().as_secs() < 60,
                "{} of {threads} held threads reached point {point}",
                ARRIVED[point].load(Ordering::SeqCst)
            );
            std::thread::yield_now();
        }
    }

    pub(super) fn reset() {
        for k in 0..POINTS {
            ARRIVED[k].store(0, Ordering::SeqCst);
            RELEASED[k].store(false, Ordering::SeqCst);
        }
    }

    pub(super) fn at(point: usize) {
        if HELD.with(|h| h.get()) {
            ARRIVED[point].fetch_add(1, Ordering::SeqCst);
            while !RELEASED[point].load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
    }
}

/// Whether values of type `T` travel inside the ring entries themselves
/// (the paper's CAS2 layout: the value bits in the low half of the 128-bit
/// entry) instead of in a slot array reached through a second ring. Decided
/// at compile time: `T` must fit in the 64-bit payload (64-bit targets),
/// and its bytes must become an integer without reading uninitialised
/// padding as one and without losing a pointer's provenance:
/// [`freeze_bits`] does that with one `mov` on x86-64, and with a plain
/// pointer read plus `expose_provenance` under Miri and loom (which only
/// check padding-free types); [`from_bits`] restores the provenance with
/// `with_exposed_provenance`.
const fn stores_inline<T>() -> bool {
    mem::size_of::<T>() <= 8
        && mem::align_of::<T>() <= 8
        && cfg!(target_pointer_width = "64")
        && cfg!(any(target_arch = "x86_64", miri, loom))
}

/// The 8 bytes at `buf` as an integer, whatever their initialisation state
/// (padding bytes of a `T` are uninitialised; reading them as a `u64` in
/// Rust would be undefined behaviour), exposing the provenance of a pointer
/// stored there (`T` may be a `Box`, an `Arc`, a reference: `from_bits`
/// gets the provenance back with `with_exposed_provenance`).
#[inline(always)]
fn freeze_bits(buf: &Buf) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    {
        let bits: u64;
        // SAFETY: reads the 8 bytes of `buf` (valid and aligned) and writes
        // only the output register. Inline assembly reads memory as the
        // machine does: an uninitialised byte comes back as some fixed
        // value, never as undefined behaviour (the asm block acts as a
        // `freeze`), and like any code outside Rust's view it may expose
        // the provenance of a pointer it reads (as `expose_provenance`).
        unsafe {
            core::arch::asm!(
                "mov {bits}, qword ptr [{p}]",
                p = in(reg) buf.0.as_ptr(),
                bits = lateout(reg) bits,
                options(readonly, nostack, preserves_flags)
            );
        }
        bits
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    {
        // SAFETY: `buf` is 8 bytes, aligned for a pointer. Under Miri and
        // loom (the only builds that take this path with `stores_inline`)
        // the values pushed by the test suites have no padding, so every
        // byte is initialised; Miri would report a type with padding here
        // rather than miss it. Read as a pointer, not an integer, so the
        // provenance of a pointer in `T` is kept and then exposed.
        let p = unsafe { ptr::read(buf.0.as_ptr() as *const *const u8) };
        p.expose_provenance() as u64
    }
}

/// 8 bytes, aligned for a pointer (and for any inline `T`).
#[repr(C, align(8))]
struct Buf([MaybeUninit<u8>; 8]);

/// Moves `value` into a payload (`stores_inline::<T>()` only).
#[inline(always)]
fn to_bits<T>(value: T) -> u64 {
    debug_assert!(stores_inline::<T>());
    let value = ManuallyDrop::new(value);
    let mut buf = Buf([MaybeUninit::new(0u8); 8]);
    // SAFETY: `size_of::<T>() <= 8` (`stores_inline`), so the copy stays in
    // `buf`; a bytewise copy keeps uninitialised bytes uninitialised (which
    // `freeze_bits` accepts) and pointer bytes with their provenance. The
    // value now lives in the payload (`value` is never dropped).
    unsafe {
        ptr::copy_nonoverlapping(
            &*value as *const T as *const MaybeUninit<u8>,
            buf.0.as_mut_ptr(),
            mem::size_of::<T>(),
        );
    }
    freeze_bits(&buf)
}

/// Moves the value back out of a payload made by [`to_bits`].
///
/// # Safety
/// `bits` came from `to_bits::<T>` and is turned back into a `T` once.
#[inline(always)]
unsafe fn from_bits<T>(bits: u64) -> T {
    // Back to a pointer with the provenance `freeze_bits` exposed (a no-op
    // at run time): if `T` holds a pointer, it is these 8 bytes (pointers
    // are 8 bytes and 8-aligned here, and `T` has at most 8), and it may be
    // dereferenced again. An integer `T` reads the same bits back.
    let p: *const u8 = ptr::with_exposed_provenance(bits as usize);
    let mut buf = Buf([MaybeUninit::new(0u8); 8]);
    // SAFETY: `buf` is 8 bytes, aligned for a pointer.
    unsafe { ptr::write(buf.0.as_mut_ptr() as *mut *const u8, p) };
    // SAFETY: the first `size_of::<T>()` bytes are those `to_bits` copied
    // out of a valid `T` (padding bytes may differ, which a `T` allows; a
    // pointer has its provenance back); the caller gives us the only copy.
    unsafe { ptr::read(buf.0.as_ptr() as *const T) }
}

/// A bounded, lock-free, multi-producer multi-consumer FIFO queue.
///
/// Built on the SCQ ring of Nikolaev (DISC 2019): pushes and pops claim
/// positions by incrementing a counter (wait-free: a CAS, or a
/// fetch-and-add when that lost a race), so producers and consumers do not
/// contend on one CAS word. No allocation happens after construction. Any
/// number of threads may use one queue.
///
/// Values of at most 8 bytes (and alignment at most 8) are stored directly
/// in the ring's 128-bit entries; larger values live in a slot array whose
/// free slot numbers circulate through a second ring.
///
/// Lock-free where the target has a 128-bit compare-and-swap (x86-64 with
/// `cmpxchg16b`, detected at run time; AArch64). Elsewhere, 32-bit targets
/// among them, `portable-atomic`'s fallback updates the entries under
/// short internal locks: still correct (the test suite passes on i686),
/// no longer lock-free.
///
/// ```
/// use scalechan::Scq;
///
/// let q = Scq::with_capacity(2);
/// q.push(1).unwrap();
/// q.push(2).unwrap();
/// assert_eq!(q.push(3), Err(3)); // full: the value comes back
/// assert_eq!(q.pop(), Some(1));
/// assert_eq!(q.pop(), Some(2));
/// assert_eq!(q.pop(), None);
/// ```
pub struct Scq<T> {
    /// Values (inline) or slot numbers of filled slots, in FIFO order.
    aq: IndexRing,
    /// Out-of-line values only: slot numbers of free slots. Inline: unused
    /// (no entries).
    fq: IndexRing,
    /// Inline values only: how many more values `aq` may take. A push takes
    /// one unit before it claims a position, a pop gives it back after it
    /// marked its entry consumed, so at most `capacity` entries are ever
    /// occupied or being consumed: the same bound the `fq` ring gives the
    /// out-of-line layout, which is what the ring's correctness (and the
    /// unlimited thread count) rests on.
    free: CachePadded<AtomicU64>,
    /// Out-of-line values only (empty when inline).
    slots: Storage<UnsafeCell<MaybeUninit<T>>>,
    capacity: usize,
}

// SAFETY: the queue owns its values and hands each to exactly one thread;
// a slot is accessed only by the thread holding its number (see `push` and
// `pop`), and an inline value only by the thread that claimed its entry, so
// sharing the queue only moves `T`s between threads: `T: Send`.
unsafe impl<T: Send> Send for Scq<T> {}
// SAFETY: as above; `&Scq<T>` never gives out `&T`.
unsafe impl<T: Send> Sync for Scq<T> {}

// A push or pop moves a value in or out whole and calls no code of the
// caller's, so a panic elsewhere cannot leave a queue half-changed (as for
// crossbeam-queue's `ArrayQueue`): usable from `catch_unwind` closures.
impl<T> UnwindSafe for Scq<T> {}
impl<T> RefUnwindSafe for Scq<T> {}

impl<T> Scq<T> {
    /// See [`stores_inline`].
    const INLINE: bool = stores_inline::<T>();

    /// Creates a queue that holds at most `capacity` values.
    ///
    /// Any `capacity >= 1` is accepted (not only powers of two) and
    /// [`capacity`](Self::capacity) returns it exactly. Memory used is about
    /// `32 * m` bytes for values of at most 8 bytes, else `capacity *
    /// size_of::<T>() + 64 * m` bytes, where `m` is
    /// `capacity.next_power_of_two()`.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or larger than 2^40, or (on a 32-bit target) if
    /// the rings for it would not fit in the address space.
    ///
    /// ```
    /// let q = scalechan::Scq::<String>::with_capacity(3);
    /// assert_eq!(q.capacity(), 3);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0, "Scq capacity must be at least 1");
        assert!(
            capacity as u64 <= MAX_CAPACITY,
            "Scq capacity {capacity} is too large (the maximum is 2^40)"
        );
        // On a 32-bit target the rounding up can overflow below 2^40, and
        // a ring's `2 * half` 16-byte entries outgrow the address space
        // sooner still: both are "too large" here, not an empty ring
        // found deeper (which panicked with an index out of bounds).
        let half = capacity
            .checked_next_power_of_two()
            .filter(|&half| {
                half.checked_mul(2 * mem::size_of::<AtomicU128>())
                    .is_some_and(|bytes| bytes <= isize::MAX as usize)
            })
            .unwrap_or_else(|| {
                panic!("Scq capacity {capacity} is too large for this target's address space")
            });
        if Self::INLINE {
            Scq {
                aq: IndexRing::new(half, 0),
                fq: IndexRing::unused(),
                free: CachePadded::new(AtomicU64::new(capacity as u64)),
                slots: Storage::new(Box::new([])),
                capacity,
            }
        } else {
            Scq {
                aq: IndexRing::new(half, 0),
                fq: IndexRing::new(half, capacity),
                free: CachePadded::new(AtomicU64::new(0)),
                slots: Storage::new(Self::fresh_slots(capacity)),
                capacity,
            }
        }
    }

    /// Appends `value` at the back, or hands it back if the queue is full.
    ///
    /// ```
    /// let q = scalechan::Scq::with_capacity(1);
    /// assert_eq!(q.push('a'), Ok(()));
    /// assert_eq!(q.push('b'), Err('b'));
    /// ```
    #[inline]
    pub fn push(&self, value: T) -> Result<(), T> {
        self.push_inner(value, false)
    }

    /// Push; with `finalize`, a full queue also finalizes `aq` so that every
    /// later push fails (LSCQ).
    #[inline]
    pub(crate) fn push_inner(&self, value: T, finalize: bool) -> Result<(), T> {
        if Self::INLINE {
            self.push_inline(value, finalize)
        } else {
            self.push_slot(value, finalize)
        }
    }

    /// Takes one unit of `free`, or fails if the queue is full. Read-only
    /// when it fails.
    #[inline]
    fn take_free(&self) -> bool {
        let mut n = self.free.load(Ordering::Relaxed);
        let mut backoff = RaceBackoff::new();
        loop {
            if n == 0 {
                return false;
            }
            // Acquire: pairs with the Release in `give_free`, so the pop
            // that freed this unit marked its entry consumed before our
            // enqueue looks at any entry (the `fq` hand-off of the
            // out-of-line layout, with a counter instead of a ring).
            match self
                .free
                .compare_exchange(n, n - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                // Every push takes this word; retrying a lost race at once
                // kept its line crossing cores on every push (queue_50e50d,
                // 2-16 threads: 55-117 ns per op that way, 19-20 with the
                // backoff; ArrayQueue 55-70 in the same run).
                Err(now) => {
                    backoff.lost();
                    n = now;
                }
            }
        }
    }

    #[inline]
    fn give_free(&self) {
        // Release: see `take_free`.
        self.free.fetch_add(1, Ordering::Release);
    }

    #[inline]
    fn push_inline(&self, value: T, finalize: bool) -> Result<(), T> {
        if !self.take_free() {
            if finalize {
                self.aq.finalize();
            }
            return Err(value);
        }
        let bits = to_bits(value);
        if self.aq.enqueue(bits) {
            return Ok(());
        }
        // `aq` was finalized (LSCQ only): the value never reached the ring.
        self.give_free();
        // SAFETY: `bits` came from `to_bits` above and went nowhere else.
        Err(unsafe { from_bits(bits) })
    }

    fn push_slot(&self, value: T, finalize: bool) -> Result<(), T> {
        let Some(i) = self.fq.dequeue() else {
            if finalize {
                self.aq.finalize();
            }
            return Err(value);
        };
        let slot = &self.slots.get()[i as usize];
        // SAFETY: slot `i` came out of `fq`, so no other thread holds its
        // number: we have exclusive access until we enqueue `i` again. The
        // previous reader's accesses happen before this (its `fq` enqueue
        // CAS released them, our `fq` dequeue load acquired them).
        slot.with_mut(|p| unsafe { (*p).write(value) });
        if self.aq.enqueue(i) {
            return Ok(());
        }
        // `aq` was finalized (LSCQ only): take the value back and return
        // the slot.
        // SAFETY: `i` never reached `aq`, so we still own slot `i`, which we
        // initialised above.
        let value = slot.with_mut(|p| unsafe { (*p).assume_init_read() });
        let ok = self.fq.enqueue(i);
        debug_assert!(ok, "fq is never finalized");
        Err(value)
    }

    /// Removes the value at the front, or returns `None` if the queue is
    /// empty. An empty queue is usually detected from loads alone.
    ///
    /// ```
    /// let q = scalechan::Scq::with_capacity(4);
    /// assert_eq!(q.pop(), None::<u8>);
    /// q.push(7u8).unwrap();
    /// assert_eq!(q.pop(), Some(7));
    /// ```
    #[inline]
    pub fn pop(&self) -> Option<T> {
        let payload = self.aq.dequeue()?;
        Some(self.take(payload))
    }

    /// Turns a payload just taken from `aq` into its value and gives its
    /// room back.
    #[inline]
    fn take(&self, payload: u64) -> T {
        if Self::INLINE {
            // SAFETY: the payload came out of `aq` exactly once (the entry
            // is marked consumed by the dequeue that returned it), and every
            // inline payload in `aq` was made by `to_bits::<T>` in
            // `push_inline`; the dequeue's Acquire load of the entry pairs
            // with the enqueuer's Release CAS, so what the value points to
            // is visible.
            let value = unsafe { from_bits(payload) };
            self.give_free();
            value
        } else {
            self.take_slot(payload)
        }
    }

    /// Moves the value out of slot `i`, just taken from `aq`, and frees the
    /// slot.
    fn take_slot(&self, i: u64) -> T {
        let slot = &self.slots.get()[i as usize];
        // SAFETY: `i` came out of `aq`, so the slot was initialised by the
        // pusher that enqueued `i` (its write happens before: its `aq` CAS
        // released it, our `aq` load acquired it) and no other thread holds
        // `i` until we give it back to `fq`.
        let value = slot.with(|p| unsafe { (*p).assume_init_read() });
        let ok = self.fq.enqueue(i);
        debug_assert!(ok, "fq is never finalized");
        value
    }

    /// Number of values in the queue.
    ///
    /// Always within `0..=capacity()`. Exact when no push or pop is in
    /// progress, with one rare exception: a push that had to skip an entry
    /// still held by a descheduled pop is counted once more until a later
    /// pop passes that entry.
    ///
    /// ```
    /// let q = scalechan::Scq::with_capacity(4);
    /// q.push(1).unwrap();
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.aq.approx_len().min(self.capacity())
    }

    /// True if the queue holds no value.
    ///
    /// ```
    /// let q = scalechan::Scq::<i32>::with_capacity(4);
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.aq.looks_empty() || self.len() == 0
    }

    /// True if the queue holds `capacity()` values.
    ///
    /// ```
    /// let q = scalechan::Scq::with_capacity(1);
    /// q.push(()).unwrap();
    /// assert!(q.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.len() == self.capacity()
    }

    /// The maximum number of values the queue holds, exactly as given to
    /// [`with_capacity`](Self::with_capacity).
    ///
    /// ```
    /// assert_eq!(scalechan::Scq::<u8>::with_capacity(7).capacity(), 7);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn fresh_slots(capacity: usize) -> Box<[UnsafeCell<MaybeUninit<T>>]> {
        (0..capacity)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect()
    }

    /// LSCQ: gives back the arrays of a drained ring waiting for reuse
    /// (most of its memory), keeping the counters, which read as empty.
    ///
    /// # Safety
    /// As [`Storage::replace`]: the ring holds no value, no other thread
    /// uses it but to read its counters, and no call here overlaps another
    /// `release_storage` or `renew`.
    pub(crate) unsafe fn release_storage(&self) {
        // SAFETY (all): per the contract.
        unsafe {
            self.aq.release_entries();
            if !Self::INLINE {
                self.fq.release_entries();
                drop(self.slots.replace(Box::new([])));
            }
        }
    }

    /// LSCQ: makes a drained ring a new empty one, as `with_capacity` builds
    /// it, allocating its arrays again if they were given back.
    ///
    /// # Safety
    /// As [`Scq::release_storage`].
    pub(crate) unsafe fn renew(&self) {
        // SAFETY (all): per the contract.
        let fresh = unsafe { self.aq.restore_entries() };
        self.aq.reset(0, fresh);
        if Self::INLINE {
            self.free.store(self.capacity as u64, Ordering::Relaxed);
        } else {
            // SAFETY: per the contract.
            let fresh = unsafe { self.fq.restore_entries() };
            if self.slots.get().is_empty() {
                // SAFETY: per the contract.
                unsafe { self.slots.replace(Self::fresh_slots(self.capacity)) };
            }
            self.fq.reset(self.capacity, fresh);
        }
    }

    /// "Empty" decided from loads alone, as `pop` decides it first
    /// (`false` does not mean a value is there).
    #[inline]
    pub(crate) fn looks_empty(&self) -> bool {
        self.aq.looks_empty()
    }

    pub(crate) fn finalize(&self) {
        self.aq.finalize();
    }

    /// Pop from a finalized ring (LSCQ's second look): see
    /// `IndexRing::dequeue_finalized`.
    pub(crate) fn pop_finalized(&self) -> Option<T> {
        let payload = self.aq.dequeue_finalized()?;
        Some(self.take(payload))
    }
}

impl<T> Drop for Scq<T> {
    fn drop(&mut self) {
        // `&mut self`: no operation is in progress, so every value still in
        // the queue is in `aq` and comes out exactly once.
        self.drop_leftovers();
    }
}

impl<T> Scq<T> {
    /// Drops the values left in the queue. If one's `Drop` panics, the
    /// others are still dropped while unwinding (as `Vec` does), not leaked.
    fn drop_leftovers(&self) {
        struct Again<'a, T>(&'a Scq<T>);
        impl<T> Drop for Again<'_, T> {
            fn drop(&mut self) {
                self.0.drop_leftovers();
            }
        }
        while let Some(v) = self.pop() {
            let again = Again(self);
            drop(v);
            mem::forget(again);
        }
    }
}

impl<T> fmt::Debug for Scq<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scq")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn remap_is_a_permutation() {
        for half in [1usize, 2, 4, 8, 16, 64] {
            let r = IndexRing::new(half, 0);
            let mut seen = vec![false; 2 * half];
            for p in 0..2 * half as u64 {
                let j = r.remap(p);
                assert!(!seen[j]);
                seen[j] = true;
            }
        }
    }

    #[test]
    fn fifo_and_wraparound() {
        let q = Scq::with_capacity(3);
        for round in 0..20 {
            for k in 0..3 {
                q.push(round * 10 + k).unwrap();
            }
            assert_eq!(q.push(99), Err(99));
            assert_eq!(q.len(), 3);
            for k in 0..3 {
                assert_eq!(q.pop(), Some(round * 10 + k));
            }
            assert_eq!(q.pop(), None);
            assert!(q.is_empty());
        }
    }

    #[test]
    fn empty_pops_leave_the_next_push_reachable() {
        let q = Scq::with_capacity(2);
        q.push(1).unwrap();
        assert_eq!(q.pop(), Some(1));
        for _ in 0..50 {
            assert_eq!(q.pop(), None);
        }
        q.push(2).unwrap();
        assert_eq!(q.pop(), Some(2));
    }

    #[test]
    fn drop_drops_leftovers() {
        use std::rc::Rc;
        let rc = Rc::new(());
        {
            let q = Scq::with_capacity(5);
            for _ in 0..4 {
                q.push(rc.clone()).unwrap();
            }
            drop(q.pop());
            assert_eq!(Rc::strong_count(&rc), 4);
        }
        assert_eq!(Rc::strong_count(&rc), 1);
    }

    /// The review's interleaving against the paper's threshold: pops that
    /// passed their emptiness look while a value was there, then failed
    /// once it was taken, are held after their failed step while another
    /// value is pushed; then they finish. With a threshold each of them
    /// decremented it late, and `3m` of them (3 here: capacity 1, `m = 1`)
    /// left the new value stranded: every pop "empty", every push "full".
    /// `limit` is a position, which late readers cannot lower. Four held
    /// pops, one more than the threshold needed, and both layouts.
    #[test]
    fn pops_held_after_failed_steps_strand_no_value() {
        fn check<V: Send + Sync + 'static + PartialEq + fmt::Debug>(make: fn(u64) -> V) {
            use std::sync::atomic::Ordering::SeqCst;
            use std::sync::Arc;
            const HELD: usize = 4;
            let _serial = pause_points::SERIAL
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            pause_points::reset();
            let q = Arc::new(Scq::with_capacity(1));
            q.push(make(1)).unwrap();
            let held: Vec<_> = (0..HELD)
                .map(|_| {
                    let q = q.clone();
                    std::thread::spawn(move || {
                        pause_points::hold_this_thread();
                        q.pop()
                    })
                })
                .collect();
            pause_points::wait_for(0, HELD);
            assert_eq!(q.pop(), Some(make(1)));
            pause_points::RELEASED[0].store(true, SeqCst);
            pause_points::wait_for(1, HELD);
            q.push(make(2)).unwrap();
            pause_points::RELEASED[1].store(true, SeqCst);
            for h in held {
                assert_eq!(h.join().unwrap(), None);
            }
            let ring = &q.aq;
            let state = format!(
                "head {} tail {} limit {}",
                ring.head.load(SeqCst),
                ring.tail.load(SeqCst),
                ring.limit.load(SeqCst)
            );
            assert_eq!(q.len(), 1, "{state}");
            assert_eq!(q.pop(), Some(make(2)), "value stranded: {state}");
            assert_eq!(q.push(make(3)), Ok(()), "a one-slot queue, drained");
            assert_eq!(q.pop(), Some(make(3)));
        }
        check(|v| v); // inline
        check(|v| [v; 3]); // slots
    }

    #[test]
    #[should_panic(expected = "at least 1")]
    fn zero_capacity_panics() {
        let _ = Scq::<u8>::with_capacity(0);
    }
}

/// Loom models of the ring's internals (run with `--cfg loom ... --lib`;
/// the queue-level models are in `tests/loom/`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;

    /// Bound 3. A dequeuer stalled between its head fetch-and-add and the
    /// CAS that consumes its entry, while the queue cycles on, loses no
    /// value: with the entry loads and CASes only Acquire/AcqRel, a
    /// dequeuer's stale read of the entry (an old value, not yet consumed,
    /// already marked unsafe) let it pass the position while an enqueuer
    /// that saw the entry consumed read an old `head` and wrote its value
    /// there, behind `head` for good (found in review; not possible on
    /// x86-64, allowed by the language and by AArch64).
    #[test]
    fn stalled_dequeuer_loses_no_value() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(|| {
            // m = 2 entries, positions start at 4.
            let ring = Arc::new(IndexRing::new(2, 0));
            // Position 4, entry 0; then the stalled dequeuer takes
            // position 4 and reads the entry.
            assert!(ring.enqueue(100));
            let stalled = take_index(&ring.head, Ordering::SeqCst);
            assert_eq!(stalled, 4);
            let seen = ring.entries.get()[ring.remap(stalled)].load(Ordering::SeqCst);
            for v in 101..=103 {
                assert!(ring.enqueue(v)); // 5, 6, 7
                assert_eq!(ring.dequeue(), Some(v));
            }
            // Skips 8 (entry 0 still holds 100) and lands at 9; the
            // dequeuer at 8 finds 100 of an older cycle and marks it unsafe.
            assert!(ring.enqueue(104));
            assert_eq!(ring.dequeue(), Some(104));
            for v in 105..=106 {
                assert!(ring.enqueue(v)); // 10, 11
                assert_eq!(ring.dequeue(), Some(v));
            }
            // head = tail = 12; entry 0: cycle 1, not empty, unsafe, 100.
            let r0 = ring.clone();
            let late = loom::thread::spawn(move || {
                let entry = &r0.entries.get()[r0.remap(stalled)];
                assert_eq!(consume(entry, seen), 100);
            });
            let r1 = ring.clone();
            let pusher = loom::thread::spawn(move || assert!(r1.enqueue(200)));
            let r2 = ring.clone();
            let popper = loom::thread::spawn(move || r2.dequeue());
            late.join().unwrap();
            pusher.join().unwrap();
            if let Some(got) = popper.join().unwrap() {
                assert_eq!(got, 200);
            } else {
                // Every enqueue has returned: no reset needed to reach it.
                assert_eq!(
                    ring.dequeue(),
                    Some(200),
                    "value lost: head {} tail {}",
                    ring.head.load(Ordering::SeqCst),
                    ring.tail.load(Ordering::SeqCst)
                );
            }
        });
    }
}
