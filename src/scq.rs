//! `Scq<T>`: a bounded lock-free MPMC FIFO queue (Nikolaev, "A Scalable,
//! Portable, and Memory-Efficient Lock-Free FIFO Queue", DISC 2019,
//! arXiv:1908.04511).
//!
//! # Design
//!
//! Two *index rings* (the paper's `aq` and `fq`) move slot numbers in
//! `0..n` around; values live in a slot array of `n` cells, so a push never
//! allocates:
//!
//! - push: take a free slot number from `fq` (none: the queue is full), write
//!   the value into that slot, publish the number in `aq`;
//! - pop: take a number from `aq` (none: empty), read the slot, give the
//!   number back to `fq`.
//!
//! Each index ring has `R = 2m` entries where `m = n.next_power_of_two()`,
//! and each entry is one 128-bit word: a cycle, an `IsSafe` bit and an
//! `Empty` bit in the high half, the slot number in the low half (the paper's
//! CAS2 layout). `head` and `tail` are only ever moved by fetch-and-add;
//! position `p` lives in entry `remap(p mod R)` and belongs to cycle
//! `p / R`. A dequeuer that arrives before its enqueuer bumps the entry's
//! cycle so the late enqueuer moves on; one that finds an older value still
//! sitting there clears `IsSafe`, so only an enqueuer no dequeuer has passed
//! may reuse that entry. A `threshold` (reset to `3m - 1` by every enqueue,
//! decremented by every failed dequeue step) stops dequeuers from livelocking
//! against enqueuers, and `catchup` pulls `tail` up to `head` after dequeuers
//! overran it.
//!
//! # No limit on the number of threads
//!
//! The paper's CAS2 variant that stores values directly in a ring of size `n`
//! is only correct with at most `n` concurrent threads. This queue uses the
//! paper's other construction instead: each ring has `2m >= 2n` entries but
//! only ever holds the `n` distinct slot numbers (a number is in at most one
//! ring, or held by one thread between the two rings), so a ring can never
//! be full and an index enqueue always finds an entry within a bounded number
//! of steps however many threads race (the paper's Theorem for the
//! `2n`-ring, which has no assumption on the thread count). Fullness is
//! decided by `fq` running dry, never by a ring's capacity, so no number of
//! threads can break it.
//!
//! # Optimisations from the ByteDance LSCQ article
//!
//! - *cache remap*: neighbouring positions go to entries on different cache
//!   lines;
//! - *fixstate*: a dequeuer that overran `tail` only fixes it if no later
//!   dequeuer has moved `head` since (that one will), which avoids a storm of
//!   failing CASes when dequeuers outnumber enqueuers;
//! - *fast path*: a pop decides "empty" from loads alone when the threshold
//!   is exhausted or `tail <= head`, and the replacement entry is only built
//!   when it is needed.

use crate::atomic128::AtomicU128;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::loom::CachePadded;
use std::fmt;
use std::mem::MaybeUninit;

/// Set in an index ring's `tail` once the ring is finalized (LSCQ): every
/// later enqueue fails. Never set for a standalone `Scq`.
pub(crate) const FINALIZED: u64 = 1 << 63;

/// Largest capacity accepted: positions are 63-bit counters and the slot
/// number lives in 64 bits, but the two rings must also fit in memory.
const MAX_CAPACITY: usize = 1 << 40;

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

#[inline]
fn index_of(e: u128) -> u64 {
    e as u64
}

/// One of the paper's index rings: a FIFO of numbers below `n` that never
/// holds more than `m = R / 2` of them at once.
pub(crate) struct IndexRing {
    head: CachePadded<AtomicU64>,
    /// Bit 63 is [`FINALIZED`].
    tail: CachePadded<AtomicU64>,
    /// An `i64` stored as its bits (the shim has no signed atomics).
    threshold: CachePadded<AtomicU64>,
    /// `tail` when the ring was finalized (`u64::MAX` before): positions
    /// from there on were taken by pushes that failed, `len` ignores them.
    final_tail: AtomicU64,
    entries: Box<[AtomicU128]>,
    /// `log2(R)`.
    order: u32,
}

impl IndexRing {
    /// A ring of `2 * half` entries (`half` a power of two) holding `0..full`
    /// (`full <= half`) in order.
    fn new(half: usize, full: usize) -> Self {
        debug_assert!(half.is_power_of_two() && full <= half);
        let size = 2 * half;
        let order = size.trailing_zeros();
        let ring = IndexRing {
            head: CachePadded::new(AtomicU64::new(size as u64)),
            tail: CachePadded::new(AtomicU64::new((size + full) as u64)),
            threshold: CachePadded::new(AtomicU64::new(if full == 0 {
                -1i64 as u64
            } else {
                Self::threshold_for(size)
            })),
            final_tail: AtomicU64::new(u64::MAX),
            entries: (0..size)
                .map(|_| AtomicU128::new(pack(0, SAFE | EMPTY, 0)))
                .collect(),
            order,
        };
        // Positions start at `size` (cycle 1), so the cycle-0 entries above
        // read as "older than any position".
        for i in 0..full {
            let pos = (size + i) as u64;
            ring.entries[ring.remap(pos)].store(pack(1, SAFE, i as u64), Ordering::Relaxed);
        }
        ring
    }

    /// `3m - 1` for a ring of `R = 2m` entries: enough failed dequeue steps
    /// to reach any value enqueued before the last reset (paper, Lemma 5.4).
    #[inline]
    fn threshold_for(size: usize) -> u64 {
        (3 * (size / 2) - 1) as u64
    }

    #[inline]
    fn size(&self) -> usize {
        1 << self.order
    }

    /// Cache remap: consecutive positions land on different cache lines (8
    /// 16-byte entries per 128-byte pair of lines), so threads working on
    /// neighbouring positions do not share a line.
    #[inline]
    fn remap(&self, pos: u64) -> usize {
        const SHIFT: u32 = 3; // log2(entries per 128 bytes)
        let i = (pos as usize) & (self.size() - 1);
        if self.order <= SHIFT {
            return i;
        }
        let lines_order = self.order - SHIFT;
        let lines_mask = (1usize << lines_order) - 1;
        ((i & lines_mask) << SHIFT) | (i >> lines_order)
    }

    /// Appends `index`. Fails only when the ring is finalized.
    fn enqueue(&self, index: u64) -> bool {
        let threshold = Self::threshold_for(self.size());
        loop {
            // SeqCst on head, tail and threshold: the paper's proofs assume
            // one total order over them (e.g. an enqueuer's threshold reset
            // against a dequeuer's `tail <= head` test).
            let t = self.tail.fetch_add(1, Ordering::SeqCst);
            if t & FINALIZED != 0 {
                return false;
            }
            let tcycle = t >> self.order;
            let entry = &self.entries[self.remap(t)];
            // Acquire: pairs with the AcqRel CAS of the dequeuer that last
            // bumped this entry, so `head` below is at least its position.
            let mut e = entry.load(Ordering::Acquire);
            loop {
                let flags = flags_of(e);
                if cycle_of(e) < tcycle
                    && flags & EMPTY != 0
                    && (flags & SAFE != 0 || self.head.load(Ordering::SeqCst) <= t)
                {
                    let new = pack(tcycle, SAFE, index);
                    // Release: publishes the slot write that preceded this
                    // enqueue to the dequeuer that acquires the entry.
                    match entry.compare_exchange(e, new, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(_) => {
                            if self.threshold.load(Ordering::SeqCst) != threshold {
                                // swap, not store: see `reset_threshold`.
                                self.threshold.swap(threshold, Ordering::SeqCst);
                            }
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
    /// was empty at the moment `tail` was read: `head` was read first and
    /// only grows, so then `tail <= head` and every position ever handed to
    /// an enqueuer also has a dequeuer.
    #[inline]
    fn looks_empty(&self) -> bool {
        if (self.threshold.load(Ordering::SeqCst) as i64) < 0 {
            return true;
        }
        let h = self.head.load(Ordering::SeqCst);
        let t = self.tail.load(Ordering::SeqCst) & !FINALIZED;
        t <= h
    }

    /// Removes the oldest index, or `None` when the ring is empty.
    fn dequeue(&self) -> Option<u64> {
        if self.looks_empty() {
            return None;
        }
        self.dequeue_slow(false)
    }

    /// Dequeue from a finalized ring that ignores the threshold: it claims
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
            let h = self.head.fetch_add(1, Ordering::SeqCst);
            let hcycle = h >> self.order;
            let entry = &self.entries[self.remap(h)];
            // Acquire: pairs with the enqueuer's CAS (or an RMW in its
            // release sequence): the slot it names is initialised.
            let mut e = entry.load(Ordering::Acquire);
            loop {
                let ecycle = cycle_of(e);
                if ecycle == hcycle {
                    // Ours. Mark it consumed; nothing is published through
                    // this (the slot is handed on through `fq`), so Relaxed.
                    entry.fetch_or((EMPTY as u128) << 64, Ordering::Relaxed);
                    return Some(index_of(e));
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
                // AcqRel: an enqueuer acquiring this value must see our head
                // FAA (see `enqueue`).
                match entry.compare_exchange(e, new, Ordering::AcqRel, Ordering::Acquire) {
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
            let t = self.tail.load(Ordering::SeqCst);
            if t & !FINALIZED <= h + 1 {
                self.catchup(h + 1);
                self.threshold.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
            if (self.threshold.fetch_sub(1, Ordering::SeqCst) as i64) <= 0 {
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

    /// Lets every dequeuer look again.
    ///
    /// Shared atomics are only ever written by RMWs (`swap` here): loom 0.7
    /// can show a later RMW the value from before a plain store, which made
    /// the `loom_rmw_loads` runs report impossible executions.
    fn reset_threshold(&self) {
        self.threshold
            .swap(Self::threshold_for(self.size()), Ordering::SeqCst);
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

/// A bounded, lock-free, multi-producer multi-consumer FIFO queue.
///
/// Built on the SCQ ring of Nikolaev (DISC 2019): pushes and pops claim
/// positions with fetch-and-add, so producers and consumers do not contend
/// on one CAS word. Values are stored in a preallocated slot array; no
/// allocation happens after construction. Any number of threads may use one
/// queue.
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
    /// Slot numbers of filled slots, in FIFO order.
    aq: IndexRing,
    /// Slot numbers of free slots.
    fq: IndexRing,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: the queue owns its values and hands each to exactly one thread;
// a slot is accessed only by the thread holding its number (see `push` and
// `pop`), so sharing the queue only moves `T`s between threads: `T: Send`.
unsafe impl<T: Send> Send for Scq<T> {}
// SAFETY: as above; `&Scq<T>` never gives out `&T`.
unsafe impl<T: Send> Sync for Scq<T> {}

impl<T> Scq<T> {
    /// Creates a queue that holds at most `capacity` values.
    ///
    /// Any `capacity >= 1` is accepted (not only powers of two) and
    /// [`capacity`](Self::capacity) returns it exactly. Memory used is about
    /// `capacity * size_of::<T>() + 64 * capacity.next_power_of_two()` bytes.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or larger than 2^40.
    ///
    /// ```
    /// let q = scalechan::Scq::<String>::with_capacity(3);
    /// assert_eq!(q.capacity(), 3);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0, "Scq capacity must be at least 1");
        assert!(
            capacity <= MAX_CAPACITY,
            "Scq capacity {capacity} is too large (the maximum is 2^40)"
        );
        let half = capacity.next_power_of_two();
        Scq {
            aq: IndexRing::new(half, 0),
            fq: IndexRing::new(half, capacity),
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        }
    }

    /// Appends `value` at the back, or hands it back if the queue is full.
    ///
    /// ```
    /// let q = scalechan::Scq::with_capacity(1);
    /// assert_eq!(q.push('a'), Ok(()));
    /// assert_eq!(q.push('b'), Err('b'));
    /// ```
    pub fn push(&self, value: T) -> Result<(), T> {
        self.push_inner(value, false)
    }

    /// Push; with `finalize`, a full queue also finalizes `aq` so that every
    /// later push fails (LSCQ).
    pub(crate) fn push_inner(&self, value: T, finalize: bool) -> Result<(), T> {
        let Some(i) = self.fq.dequeue() else {
            if finalize {
                self.aq.finalize();
            }
            return Err(value);
        };
        let slot = &self.slots[i as usize];
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
    pub fn pop(&self) -> Option<T> {
        let i = self.aq.dequeue()?;
        Some(self.take_slot(i))
    }

    /// Moves the value out of slot `i`, just taken from `aq`, and frees the
    /// slot.
    fn take_slot(&self, i: u64) -> T {
        let slot = &self.slots[i as usize];
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
        self.slots.len()
    }

    pub(crate) fn finalize(&self) {
        self.aq.finalize();
    }

    /// Pop from a finalized ring (LSCQ's second look): see
    /// `IndexRing::dequeue_finalized`.
    pub(crate) fn pop_finalized(&self) -> Option<T> {
        let i = self.aq.dequeue_finalized()?;
        Some(self.take_slot(i))
    }
}

impl<T> Drop for Scq<T> {
    fn drop(&mut self) {
        // `&mut self`: no operation is in progress, so every value still in
        // the queue is in `aq` and comes out exactly once.
        self.aq.reset_threshold();
        while let Some(v) = self.pop() {
            drop(v);
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
    fn empty_pops_exhaust_threshold_then_recover() {
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

    #[test]
    #[should_panic(expected = "at least 1")]
    fn zero_capacity_panics() {
        let _ = Scq::<u8>::with_capacity(0);
    }
}
