//! `Lscq<T>`: an unbounded lock-free MPMC FIFO queue, a linked list of SCQ
//! rings (Nikolaev 2019, section 6; the ByteDance LSCQ article, seed 002).
//!
//! # Design
//!
//! Pushes go to the ring at `tail`, pops come from the ring at `head`. When
//! the tail ring is full, the push that finds it full sets the
//! `FINALIZED` bit in that ring's `aq` tail (every
//! later push into it fails) and appends a fresh ring holding its value.
//! Appending takes a mutex: only the first pusher that sees the full ring
//! allocates, the others wait for it and move on to the new ring, which
//! avoids the allocation storm the article describes. This is the only lock,
//! taken once per `RING_CAPACITY` pushes at most; push and pop are otherwise
//! lock-free.
//!
//! A pop that finds the head ring empty and sees a next ring looks once
//! more, claiming every position up to the ring's final tail (a push that claimed a position
//! before the ring was finalized may still complete there: either a pop
//! reaches its position and takes the value, or a pop marks the position
//! first and the push fails and moves to the next ring; nothing is left
//! behind, see seed 002 appendix 1). Then it swings `head` to the next
//! ring, makes sure `tail` is past the old one, and retires the old ring
//! through `crate::epoch`. Every access to a ring's values happens while
//! pinned, so a retired ring is recycled only after every thread that could
//! have loaded its pointer has unpinned; recycled rings go to a small pool
//! (at most `POOL_SIZE`) and are reused by the next append.
//!
//! # A pop on an empty queue does not pin
//!
//! Pinning costs a full barrier and a store that the next pin loads again:
//! an empty pop took 4.4 ns that way on the 2-core AMD (SegQueue's, with a
//! fence of its own, 2.5-2.8). So a pop first looks at the head ring's
//! counters unpinned, with loads alone (0.8 ns), and answers "empty" only
//! when the look is known to have seen one ring that was the head, and the
//! last ring, throughout. That needs two things:
//!
//! - A ring's node (its counters and its `next` pointer) stays allocated as
//!   long as the queue: a retired ring is never freed while the queue
//!   lives. Past the pool's `POOL_SIZE` whole rings it only gives back its
//!   arrays (`Scq::release_storage`), and the bare node (1080 bytes,
//!   against 32 KiB of entries for a ring of 1024 `u64`s) waits for reuse.
//!   Memory still follows the values held, plus one bare node per ring the
//!   queue ever held at once (a burst of a million `u64`s leaves 1 MiB).
//!   A ring still in its grace period when the queue drops is freed by
//!   its recycling, which learns that the queue is gone under the pool's
//!   mutex: the drop set that flag under the same lock, and the lock is
//!   what orders every look before the free (the grace period orders only
//!   pinned users; a failed `Weak::upgrade`, a Relaxed load, ordered
//!   nothing, which ThreadSanitizer caught).
//! - Each node counts its lives (`Node::life`), bumped as it is recycled,
//!   before anything of it is reset. The look reads the life, checks that
//!   the node is still the head, reads the counters and `next`, and reads
//!   the life again: unchanged, every read was of one life in which the
//!   node was the head, and `next` still null says nothing came after it,
//!   which is what the pinned pop concludes from the same reads.
//!
//! Nothing that a pinned thread uses changes: only the look is unpinned,
//! and it reads atomics only, never a ring's arrays or values.

use crate::epoch::{self, Deferred};
use crate::loom::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
use crate::loom::sync::Mutex;
use crate::loom::CachePadded;
use crate::scq::Scq;
use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::ptr;
use std::sync::Arc;

/// Values per ring.
#[cfg(not(loom))]
const RING_CAPACITY: usize = 1024;
#[cfg(loom)]
const RING_CAPACITY: usize = 2;

/// Drained rings kept whole for reuse (past them a ring keeps only its
/// node). One under loom, so the models reuse a whole ring and a bare one.
#[cfg(not(loom))]
const POOL_SIZE: usize = 2;
#[cfg(loom)]
const POOL_SIZE: usize = 1;

struct Node<T> {
    ring: Scq<T>,
    next: AtomicPtr<Node<T>>,
    /// How many times the node was recycled: see the module docs.
    life: AtomicU64,
    /// Where the ring goes once it is retired and its grace period is over.
    /// Strong, so a ring retired before the queue dropped can still ask the
    /// pool, under its mutex, whether the queue is gone (see `recycle`);
    /// the queue's drop empties the pool, which breaks the cycle.
    pool: Arc<Pool<T>>,
    /// loom only: written when the ring is recycled, read by every user of
    /// the ring, so loom reports a causality violation if a thread could
    /// still use a ring its grace period had released.
    #[cfg(loom)]
    canary: crate::loom::cell::UnsafeCell<u64>,
    /// loom only: written just before the node is freed, read by every
    /// emptiness look, so loom reports a look that the free is not ordered
    /// after (the looks are unpinned: the grace period does not order
    /// them).
    #[cfg(loom)]
    free_canary: crate::loom::cell::UnsafeCell<u64>,
}

impl<T> Node<T> {
    fn new(ring: Scq<T>, pool: Arc<Pool<T>>) -> Self {
        Node {
            ring,
            next: AtomicPtr::new(ptr::null_mut()),
            life: AtomicU64::new(0),
            pool,
            #[cfg(loom)]
            canary: crate::loom::cell::UnsafeCell::new(0),
            #[cfg(loom)]
            free_canary: crate::loom::cell::UnsafeCell::new(0),
        }
    }

    /// Records a use of the ring (loom's use-after-recycle check).
    #[inline(always)]
    fn touch(&self) {
        #[cfg(loom)]
        // SAFETY: a plain read of a `u64`; loom checks it against `recycle`.
        self.canary.with(|p| unsafe { std::ptr::read_volatile(p) });
    }

    /// Records an emptiness look at the node (loom's look-before-free
    /// check).
    #[inline(always)]
    fn touch_unpinned(&self) {
        #[cfg(loom)]
        // SAFETY: a plain read of a `u64`; loom checks it against the
        // write before the free in `recycle`.
        self.free_canary
            .with(|p| unsafe { std::ptr::read_volatile(p) });
    }
}

/// Recycled rings. The mutex is taken only on the rare append and recycle
/// paths.
struct Pool<T> {
    spares: Mutex<Spares<T>>,
}

/// Recycled nodes, owned by the pool and freed by the queue's drop. Raw
/// pointers, never boxes: an emptiness look may read a spare's counters at
/// any time, so nothing may claim a spare unique while the queue lives.
struct Spares<T> {
    /// Rings ready for reuse, at most `POOL_SIZE`.
    whole: Vec<*mut Node<T>>,
    /// Nodes whose arrays were given back.
    bare: Vec<*mut Node<T>>,
    /// Nodes this queue ever allocated: `bare` keeps room for all of them,
    /// so `recycle`, which runs under the collector's lock, never
    /// allocates.
    allocated: usize,
    /// Set by the queue's drop, which has freed the spares: a ring retired
    /// earlier is freed by its `recycle` instead of pooled.
    queue_dropped: bool,
}

// SAFETY: the pointers are leaked `Box<Node<T>>`s that only the pool owns
// (they move to one appending thread, under the mutex); a node holds `T`s
// only while it is on the list, not here.
unsafe impl<T: Send> Send for Spares<T> {}

/// An unbounded, lock-free (but for the rare ring append, see the module
/// docs), multi-producer multi-consumer FIFO queue.
///
/// Values live in SCQ rings of 1024 slots; a full ring is closed and a new
/// one linked after it, and drained rings are reclaimed and reused, so memory
/// follows the number of values held, not the number ever pushed. (Past two
/// spare rings, a drained ring gives its arrays back but keeps its 1080-byte
/// node, about 3% of a ring of `u64`s, for reuse until the queue drops: a
/// pop on an empty queue may read a node's counters without pinning.)
///
/// ```
/// use scalechan::Lscq;
///
/// let q = Lscq::new();
/// for i in 0..5000 {
///     q.push(i);
/// }
/// assert_eq!(q.len(), 5000);
/// assert_eq!(q.pop(), Some(0));
/// ```
pub struct Lscq<T> {
    head: CachePadded<AtomicPtr<Node<T>>>,
    tail: CachePadded<AtomicPtr<Node<T>>>,
    append: Mutex<()>,
    pool: Arc<Pool<T>>,
    ring_capacity: usize,
}

// SAFETY: the queue owns its values and moves each to exactly one popping
// thread; rings are shared through atomics and reclaimed through the epoch
// scheme, so sharing the queue only moves `T`s between threads.
unsafe impl<T: Send> Send for Lscq<T> {}
// SAFETY: as above; `&Lscq<T>` never gives out `&T`.
unsafe impl<T: Send> Sync for Lscq<T> {}

// As for `Scq`: no operation calls the caller's code midway, so a panic
// cannot leave the queue half-changed (crossbeam-queue's `SegQueue` says
// the same).
impl<T> UnwindSafe for Lscq<T> {}
impl<T> RefUnwindSafe for Lscq<T> {}

impl<T> Default for Lscq<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Recycles a retired ring: to the pool, whole or bare, or freed if the
/// queue is gone.
///
/// # Safety
/// `p` is a `Box<Node<T>>` leaked by `Lscq`, unreachable for every pinned
/// thread (the epoch grace period is over), whose ring holds no value.
unsafe fn recycle<T>(p: *mut ()) {
    let p = p as *mut Node<T>;
    // SAFETY: the caller's contract; shared, not unique: an emptiness look
    // may still read the counters (module docs).
    let node = unsafe { &*p };
    // Before anything of the node changes. Release: an emptiness look that
    // reads this life (Acquire) reads `head` past the node from then on.
    // The fence: one that reads a store made after it (the counters that
    // `release_storage` empties, with Acquire loads) sees this life at its
    // last read (see `Lscq::looks_empty`); `new_node` fences its resets
    // the same way.
    node.life.fetch_add(1, Ordering::Release);
    fence(Ordering::Release);
    #[cfg(loom)]
    // SAFETY: only a pinned user reads the canary; a racing one is what
    // loom should report.
    node.canary.with_mut(|c| unsafe { *c += 1 });
    let mut spares = node.pool.spares.lock().unwrap_or_else(|e| e.into_inner());
    if spares.queue_dropped {
        drop(spares);
        #[cfg(loom)]
        // SAFETY: loom checks that every look happened before this.
        node.free_canary.with_mut(|c| unsafe { *c += 1 });
        // SAFETY: ours alone now: the queue is gone, and with it every
        // thread that could look. The mutex, not the grace period, is what
        // orders the last look (before the queue's drop, which set the flag
        // under it) before this free: an emptiness look is not pinned.
        drop(unsafe { Box::from_raw(p) });
        return;
    }
    if spares.whole.len() < POOL_SIZE {
        spares.whole.push(p);
    } else {
        // SAFETY: drained and unreachable for pinned threads, and not in
        // the pool yet, so no `renew` can run on it.
        unsafe { node.ring.release_storage() };
        spares.bare.push(p);
    }
}

impl<T> Lscq<T> {
    /// Creates an empty queue (one ring).
    ///
    /// ```
    /// let q = scalechan::Lscq::<u32>::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_ring_capacity(RING_CAPACITY)
    }

    /// Creates an empty queue whose rings hold `n` values each (loom
    /// models and tests use tiny rings).
    ///
    /// ```
    /// let q = scalechan::Lscq::with_ring_capacity(2);
    /// for i in 0..10 { q.push(i); }
    /// assert!(q.ring_count() >= 5);
    /// ```
    #[doc(hidden)]
    pub fn with_ring_capacity(n: usize) -> Self {
        let pool = Arc::new(Pool {
            spares: Mutex::new(Spares {
                whole: Vec::with_capacity(POOL_SIZE),
                bare: Vec::with_capacity(1),
                allocated: 1,
                queue_dropped: false,
            }),
        });
        let first = Box::into_raw(Box::new(Node::new(
            Scq::with_capacity(n),
            Arc::clone(&pool),
        )));
        Lscq {
            head: CachePadded::new(AtomicPtr::new(first)),
            tail: CachePadded::new(AtomicPtr::new(first)),
            append: Mutex::new(()),
            pool,
            ring_capacity: n,
        }
    }

    fn new_node(&self) -> *mut Node<T> {
        let mut spares = self.pool.spares.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = spares.whole.pop().or_else(|| spares.bare.pop()) else {
            spares.allocated += 1;
            let room = spares.allocated - spares.bare.len();
            spares.bare.reserve(room);
            drop(spares);
            return Box::into_raw(Box::new(Node::new(
                Scq::with_capacity(self.ring_capacity),
                Arc::clone(&self.pool),
            )));
        };
        // Renewed outside the mutex: `recycle` takes it under the
        // collector's lock, and renewing rewrites every entry of the ring.
        drop(spares);
        // SAFETY: a spare is allocated as long as the pool; shared, as an
        // emptiness look may read it.
        let node = unsafe { &*p };
        // Release: an emptiness look that reads one of the resets below
        // sees the new life (bumped before the spare reached the pool,
        // which we acquired through its mutex).
        fence(Ordering::Release);
        // SAFETY: a spare is drained and unreachable for pinned threads,
        // and ours alone since we took it out of the pool (its
        // `release_storage`, if any, ran before it went in).
        unsafe { node.ring.renew() };
        // (The node is published with a Release after this.)
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        p
    }

    /// Appends `value` at the back. Never fails.
    ///
    /// ```
    /// let q = scalechan::Lscq::new();
    /// q.push("a");
    /// assert_eq!(q.pop(), Some("a"));
    /// ```
    pub fn push(&self, value: T) {
        let _guard = epoch::pin_collector();
        let mut value = value;
        loop {
            // Acquire: the ring behind the pointer was initialised before
            // it was published (Release below).
            let cq = self.tail.load(Ordering::Acquire);
            // SAFETY: `cq` was reachable from `tail` while we are pinned, so
            // it is retired (if ever) after our pin and not freed before we
            // unpin.
            let node = unsafe { &*cq };
            let next = node.next.load(Ordering::Acquire);
            if !next.is_null() {
                // Help a lagging tail along.
                let _ = self
                    .tail
                    .compare_exchange(cq, next, Ordering::Release, Ordering::Relaxed);
                continue;
            }
            let pushed = node.ring.push_inner(value, true);
            node.touch();
            match pushed {
                Ok(()) => return,
                Err(v) => value = v,
            }
            // `cq` is finalized (or its fq ran dry): append a new ring.
            let _lock = self.append.lock().unwrap_or_else(|e| e.into_inner());
            if !node.next.load(Ordering::Acquire).is_null() {
                continue; // someone appended while we waited
            }
            node.ring.finalize();
            let fresh = self.new_node();
            // SAFETY: `fresh` is ours alone until published below.
            let pushed = unsafe { &*fresh }.ring.push(value);
            debug_assert!(pushed.is_ok(), "a fresh ring has room");
            if let Err(v) = pushed {
                value = v;
                continue;
            }
            // Release: the new ring and the value in it are initialised
            // before any thread that loads the pointer reads them. A swap,
            // not a store: loom 0.7 can let a later RMW (the RMW loads of
            // `--cfg loom_rmw_loads`) read the value from before a plain
            // store; on the rare append path an RMW costs nothing.
            let _ = node.next.swap(fresh, Ordering::Release);
            let _ = self
                .tail
                .compare_exchange(cq, fresh, Ordering::Release, Ordering::Relaxed);
            return;
        }
    }

    /// Removes the value at the front, or returns `None` if the queue is
    /// empty.
    ///
    /// ```
    /// let q = scalechan::Lscq::new();
    /// assert_eq!(q.pop(), None::<i32>);
    /// q.push(1);
    /// assert_eq!(q.pop(), Some(1));
    /// ```
    #[inline]
    pub fn pop(&self) -> Option<T> {
        if self.looks_empty() {
            return None;
        }
        self.pop_pinned()
    }

    /// [`Lscq::pop`] past the emptiness look, out of line so that the look
    /// inlines alone (inside this frame's saved registers, 2.7 ns per empty
    /// pop instead of 1).
    #[inline(never)]
    fn pop_pinned(&self) -> Option<T> {
        let _guard = epoch::pin_collector();
        loop {
            let cq = self.head.load(Ordering::Acquire);
            // SAFETY: loaded from `head` while pinned: not freed before we
            // unpin (same argument as in `push`).
            let node = unsafe { &*cq };
            let popped = node.ring.pop();
            node.touch();
            if popped.is_some() {
                return popped;
            }
            let next = node.next.load(Ordering::Acquire);
            if next.is_null() {
                return None;
            }
            // `cq` is finalized (it was, before `next` was published). A
            // push that claimed a position before that may still land: look
            // again, this time claiming every position up to the final tail
            // whatever its `limit` says, so each such push either hands us
            // (or another popper) its value or fails and moves on.
            let popped = node.ring.pop_finalized();
            node.touch();
            if popped.is_some() {
                return popped;
            }
            if self
                .head
                .compare_exchange(cq, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // No thread may reach `cq` from `tail` after this: `tail`
                // only moves forward, and is at `cq` or past it.
                let _ = self
                    .tail
                    .compare_exchange(cq, next, Ordering::AcqRel, Ordering::Relaxed);
                // SAFETY: `cq` is unreachable from `head` and `tail` now; it
                // is a leaked `Box<Node<T>>`, drained (the second look above
                // found it empty after it was finalized), so `recycle` may
                // run on any thread after the grace period.
                epoch::retire(unsafe { Deferred::new(cq as *mut (), recycle::<T>) });
            }
        }
    }

    /// Whether the queue was empty at some instant of this call, decided
    /// without pinning (module docs); `false` also when the look was
    /// disturbed (the pinned pop then decides).
    #[inline]
    fn looks_empty(&self) -> bool {
        let cq = self.head.load(Ordering::Acquire);
        // SAFETY: a node stays allocated as long as the queue (module
        // docs); only its atomics are read here.
        let node = unsafe { &*cq };
        node.touch_unpinned();
        // Acquire: pairs with the Release of the recycling that made this
        // life, so the `head` read next cannot be older than the move that
        // retired the node's previous life.
        let life = node.life.load(Ordering::Acquire);
        if self.head.load(Ordering::Acquire) != cq {
            return false;
        }
        // If `life` is still current at the last read, the node was the
        // head in this life at the `head` read above, and still is at the
        // `next` read below (`head` moves only to a `next`, which a life
        // sets once): the counters read in between say "empty" of the
        // whole queue. `next` is Acquire, as the counter loads (SeqCst): if
        // one of these saw a store of a later life (a reset, or an
        // operation on the renewed ring), the Release before that store
        // makes the bump visible to the last read.
        if !node.ring.looks_empty() || !node.next.load(Ordering::Acquire).is_null() {
            return false;
        }
        node.life.load(Ordering::Relaxed) == life
    }

    /// Number of values in the queue (the sum over its rings; see
    /// [`Scq::len`] for exactness).
    ///
    /// ```
    /// let q = scalechan::Lscq::new();
    /// q.push(());
    /// q.push(());
    /// assert_eq!(q.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        let _guard = epoch::pin_collector();
        let mut n = 0;
        let mut p = self.head.load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: reached from `head` while pinned.
            let node = unsafe { &*p };
            n += node.ring.len();
            p = node.next.load(Ordering::Acquire);
        }
        n
    }

    /// True if the queue holds no value.
    ///
    /// ```
    /// let q = scalechan::Lscq::<u8>::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        // The pop's unpinned look first: loads alone when it is empty.
        self.looks_empty() || self.len() == 0
    }

    /// Number of rings in the list from head to tail (for tests: memory is
    /// bounded).
    ///
    /// ```
    /// let q = scalechan::Lscq::<u8>::new();
    /// assert_eq!(q.ring_count(), 1);
    /// ```
    #[doc(hidden)]
    pub fn ring_count(&self) -> usize {
        let _guard = epoch::pin_collector();
        let mut n = 0;
        let mut p = self.head.load(Ordering::Acquire);
        while !p.is_null() {
            n += 1;
            // SAFETY: reached from `head` while pinned.
            p = unsafe { &*p }.next.load(Ordering::Acquire);
        }
        n
    }

    /// Number of drained rings waiting whole in the reuse pool (not
    /// counting the nodes kept without their arrays).
    ///
    /// ```
    /// let q = scalechan::Lscq::<u8>::new();
    /// assert!(q.pooled_rings() <= 2);
    /// ```
    #[doc(hidden)]
    pub fn pooled_rings(&self) -> usize {
        self.pool
            .spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .whole
            .len()
    }
}

impl<T> Drop for Lscq<T> {
    fn drop(&mut self) {
        // The spares first: they hold no value, so no `T::drop` can unwind
        // past this and leave `recycle` pooling into a pool nobody frees.
        let spares = {
            let mut spares = self.pool.spares.lock().unwrap_or_else(|e| e.into_inner());
            spares.queue_dropped = true;
            let bare = std::mem::take(&mut spares.bare);
            std::mem::take(&mut spares.whole).into_iter().chain(bare)
        };
        for p in spares {
            // SAFETY: the pool owned its spares, and the queue that could
            // look at them is dropping.
            drop(unsafe { Box::from_raw(p) });
        }
        // `&mut self`: nobody else can reach the list; rings already retired
        // are not on it (and hold no value).
        free_list(self.head.load(Ordering::Relaxed));
    }
}

/// Frees the nodes from `p` on; if dropping one (a leftover value's Drop)
/// panics, the rest are still freed while unwinding.
fn free_list<T>(mut p: *mut Node<T>) {
    struct Rest<T>(*mut Node<T>);
    impl<T> Drop for Rest<T> {
        fn drop(&mut self) {
            free_list(self.0);
        }
    }
    while !p.is_null() {
        // SAFETY: every node on the list is a leaked box only the list
        // owns; dropping the ring drops its leftover values exactly once.
        let node = unsafe { Box::from_raw(p) };
        p = node.next.load(Ordering::Relaxed);
        let rest = Rest(p);
        drop(node);
        std::mem::forget(rest);
    }
}

impl<T> fmt::Debug for Lscq<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lscq")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn grows_and_shrinks() {
        let q = Lscq::with_ring_capacity(2);
        for i in 0..20 {
            q.push(i);
        }
        assert_eq!(q.len(), 20);
        assert!(q.ring_count() >= 10);
        for i in 0..20 {
            assert_eq!(q.pop(), Some(i));
        }
        assert_eq!(q.pop(), None);
        assert_eq!(q.ring_count(), 1);
    }

    /// A ring retired before the queue drops is freed by a later collect,
    /// on a thread that has no other order with the threads that used the
    /// queue: the pool's mutex must order their unpinned looks before the
    /// free (ThreadSanitizer reported the race when `recycle` relied on a
    /// failed `Weak::upgrade`, a Relaxed load). Here the test checks that
    /// the ring is freed at all; under TSan, that it is freed in order.
    #[test]
    fn a_ring_retired_before_the_queue_drops_is_freed_after_it() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Barrier;
        let q = Arc::new(Lscq::with_ring_capacity(2));
        let pool = Arc::downgrade(&q.pool);
        // Relaxed flags only, so that the holder's free has no order with
        // the drop but what the queue itself provides.
        let dropped = Arc::new(AtomicBool::new(false));
        let pinned = Arc::new(Barrier::new(2));
        let holder = std::thread::spawn({
            let (dropped, pinned) = (dropped.clone(), pinned.clone());
            move || {
                // Holds the grace period back, so the ring the worker
                // retires is still waiting when the queue drops.
                let guard = epoch::pin_collector();
                pinned.wait();
                while !dropped.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                drop(guard);
                // Other tests' threads may hold the grace period back too.
                for _ in 0..100_000 {
                    epoch::collect();
                    if pool.strong_count() == 0 {
                        return true;
                    }
                    std::thread::yield_now();
                }
                false
            }
        });
        pinned.wait();
        q.push(0);
        assert_eq!(q.pop(), Some(0));
        // The looker's last use of the queue is an unpinned look at the
        // first ring; the worker, which runs after it but in no order with
        // it (a Relaxed flag), fills that ring, links a second and retires
        // the first. Nothing orders the look before the holder's free but
        // the queue's drop.
        let looked = Arc::new(AtomicBool::new(false));
        let looker = std::thread::spawn({
            let (q, looked) = (q.clone(), looked.clone());
            move || {
                assert_eq!(q.pop(), None);
                looked.store(true, Ordering::Relaxed);
            }
        });
        let worker = std::thread::spawn({
            let q = q.clone();
            move || {
                while !looked.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                for i in 1..4 {
                    q.push(i);
                }
                for i in 1..4 {
                    assert_eq!(q.pop(), Some(i));
                }
                assert_eq!(q.ring_count(), 1);
            }
        });
        looker.join().unwrap();
        worker.join().unwrap();
        // No pin on this thread from here on: its unpin would order the
        // look (joined above) before the holder's scan.
        drop(q);
        dropped.store(true, Ordering::Relaxed);
        assert!(holder.join().unwrap(), "the retired ring was never freed");
    }

    /// Rings recycled past the pool give their arrays back and get them
    /// again when reused: values of every layout come out in order, round
    /// after round.
    #[test]
    fn bare_nodes_are_renewed() {
        fn rounds<V: PartialEq + fmt::Debug>(make: impl Fn(u64) -> V) {
            let q = Lscq::with_ring_capacity(2);
            let mut stripped = false;
            for round in 0..4u64 {
                for i in 0..40 {
                    q.push(make(round * 100 + i));
                }
                for i in 0..40 {
                    assert_eq!(q.pop(), Some(make(round * 100 + i)));
                }
                assert_eq!(q.pop(), None);
                // Other tests' threads may hold the grace period back for
                // a moment.
                for _ in 0..10_000 {
                    crate::epoch::collect();
                    if !q.pool.spares.lock().unwrap().bare.is_empty() {
                        stripped = true;
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            assert!(stripped, "no ring was given back its arrays");
            assert!(q.pooled_rings() <= POOL_SIZE);
        }
        rounds(|v| v); // inline
        rounds(|v| [v; 3]); // slots
        rounds(|v| v.to_string()); // slots, with a Drop
    }

    #[test]
    fn drop_drops_leftovers() {
        use std::rc::Rc;
        let rc = Rc::new(());
        {
            let q = Lscq::with_ring_capacity(3);
            for _ in 0..10 {
                q.push(rc.clone());
            }
            drop(q.pop());
            assert_eq!(Rc::strong_count(&rc), 10);
        }
        assert_eq!(Rc::strong_count(&rc), 1);
    }
}

/// Loom models that need the collector's pin (run with `--cfg loom ...
/// --lib`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    /// Preemption bound 2. A thread looks at the first ring unpinned
    /// (`pop`), while the main thread fills the ring, links a second,
    /// drains both (retiring the first), joins the looker and drops the
    /// queue; a third thread pinned meanwhile holds the grace period back,
    /// then unpins and collects, and so frees the retired ring after the
    /// drop. Every look must happen before that free (`free_canary`): with
    /// the free decided by a failed `Weak::upgrade`, a Relaxed load, loom
    /// finds the look and the free unordered.
    #[test]
    fn a_ring_freed_after_the_queue_drops_is_freed_after_every_look() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(|| {
            let q = loom::sync::Arc::new(Lscq::with_ring_capacity(1));
            let holder = loom::thread::spawn(|| {
                let guard = epoch::pin_collector();
                drop(guard);
                epoch::collect();
            });
            let looker = loom::thread::spawn({
                let q = q.clone();
                move || q.pop()
            });
            q.push(1u32);
            q.push(2);
            let mut got: Vec<u32> = std::iter::from_fn(|| q.pop()).collect();
            got.extend(looker.join().unwrap());
            got.sort_unstable();
            assert_eq!(got, [1, 2]);
            drop(q);
            holder.join().unwrap();
            epoch::collect();
        });
    }
}
