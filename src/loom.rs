//! The one door to every concurrency primitive the crate uses.
//!
//! Normal builds re-export `std`, `crossbeam-utils` and `parking_lot_core`;
//! `--cfg loom` swaps in loom's model-checked versions, so the loom models in
//! `tests/loom/` exercise the very code users run (the shape of tokio's shim).
//!
//! `--cfg loom_rmw_loads` (with `--cfg loom`) turns every atomic load into a
//! read-modify-write of the same value. loom 0.7 never shows an older plain
//! load a newer value once another thread has loaded-then-CASed it
//! (tokio-rs/loom#392), which under-explores load-then-CAS algorithms; running
//! each model a second time with RMW loads covers the interleavings it misses.

pub(crate) mod sync {
    pub(crate) mod atomic {
        #[cfg(not(loom))]
        pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

        #[cfg(loom)]
        pub(crate) use super::super::loom_atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
        #[cfg(loom)]
        pub(crate) use loom::sync::atomic::fence;

        pub(crate) use std::sync::atomic::Ordering;
    }

    #[cfg(not(loom))]
    pub(crate) use std::sync::{Arc, Mutex};

    #[cfg(loom)]
    pub(crate) use loom::sync::{Arc, Mutex};
}

pub(crate) mod cell {
    /// `UnsafeCell` with loom's closure API, so loom can track every access.
    #[cfg(not(loom))]
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        #[inline]
        pub(crate) const fn new(data: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(data))
        }

        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    #[cfg(loom)]
    pub(crate) use loom::cell::UnsafeCell;
}

/// Spin-then-yield backoff. Under loom every step yields, so spin loops
/// terminate in the model (crossbeam's `Backoff::snooze` stops yielding past
/// its limit, which loom reads as a livelock).
pub(crate) struct Backoff {
    #[cfg(not(loom))]
    inner: crossbeam_utils::Backoff,
}

impl Backoff {
    #[inline]
    pub(crate) fn new() -> Self {
        Backoff {
            #[cfg(not(loom))]
            inner: crossbeam_utils::Backoff::new(),
        }
    }

    /// A short busy-wait step (a few `pause` instructions).
    #[inline]
    pub(crate) fn spin(&self) {
        #[cfg(not(loom))]
        self.inner.spin();
        #[cfg(loom)]
        loom::thread::yield_now();
    }

    /// A longer step that may yield the CPU.
    #[inline]
    pub(crate) fn snooze(&self) {
        #[cfg(not(loom))]
        self.inner.snooze();
        #[cfg(loom)]
        loom::thread::yield_now();
    }

    /// True once spinning longer is a waste and the caller should park.
    #[inline]
    pub(crate) fn is_completed(&self) -> bool {
        #[cfg(not(loom))]
        return self.inner.is_completed();
        #[cfg(loom)]
        return true;
    }
}

/// Backoff for a thread that lost a CAS race on a word every thread updates
/// (the count of a channel of zero-sized messages, the free count of an
/// `Scq`, a channel's index counters): the loser waits long
/// enough for the winner to finish several operations on a line it keeps,
/// then tries again, waiting twice as long after each loss. Retrying at
/// once, as `Backoff::spin` does (1 to 64 pauses), keeps the line moving
/// between cores on every operation: two threads each sending and
/// receiving on one `bounded::<()>(2)` took 70-87 ns per message that way
/// and 18-20 ns with this backoff (4 and 16 threads alike; kanal 16-23 in
/// the same runs, whose spin lock waits out a loss with a sleep system
/// call). The first wait, 128 pauses, is about 1 us on the machine it was
/// measured on (8.6 ns per pause; 32 and 64 pauses measured 20-30 ns per
/// message); the cap, 2048, bounds one wait at about 18 us. A pause costs
/// more elsewhere, and on that machine on other days (16 and 25 ns: see
/// `pause.rs`), so the waits are counts, as tuned, not times: waits made
/// times (1.1 us) measured no better on the 16-core Intel Xeon and
/// could not be told apart on 2 cores. Under loom each
/// wait is a yield. Only for strong CAS loops: a weak CAS that fails
/// spuriously (on LL/SC machines) lost no race and must not wait.
pub(crate) struct RaceBackoff {
    losses: u32,
}

impl RaceBackoff {
    const FIRST: u32 = 128;
    const LAST: u32 = 2048;

    #[inline]
    pub(crate) fn new() -> Self {
        RaceBackoff { losses: 0 }
    }

    /// Waits after a lost race.
    #[cold]
    pub(crate) fn lost(&mut self) {
        #[cfg(not(loom))]
        {
            let pauses = (Self::FIRST << self.losses.min(16)).min(Self::LAST);
            for _ in 0..pauses {
                std::hint::spin_loop();
            }
        }
        #[cfg(loom)]
        loom::thread::yield_now();
        self.losses += 1;
    }
}

/// Takes the next index of `counter` (returns it; the counter moves past
/// it), as a fetch-and-add does, in a bounded number of steps: one CAS
/// from the value just read, and if another thread's increment got in
/// first, a fetch-and-add after a short wait.
///
/// The wait is the point. A fetch-and-add never fails, so when threads on
/// several cores take indices at once, the counter's line moves to another
/// core on every operation; the thread that loses the CAS instead waits
/// about a microsecond ([`RaceBackoff`]), and the winner goes on through
/// several operations on a line it keeps. Measured on 2 cores, against
/// fetch-and-add alone: two threads each sending 100 then receiving 100 on
/// one `bounded(200)` 196 -> 83 ns per message (crossbeam-channel 56),
/// unbounded_mpmc at 2-16 pairs 84-119 -> 57-62 ns; one thread alone
/// unchanged (the CAS costs what the fetch-and-add did). `order` is the
/// increment's, whichever of the two makes it; the first load only guesses
/// the value, so it is Relaxed.
#[inline]
pub(crate) fn take_index(counter: &sync::atomic::AtomicU64, order: sync::atomic::Ordering) -> u64 {
    let seen = counter.load(sync::atomic::Ordering::Relaxed);
    if claim_index(counter, seen, order) {
        seen
    } else {
        counter.fetch_add(1, order)
    }
}

/// Takes index `seen`, a value of `counter` just read, by one CAS (with
/// `order`, as [`take_index`]); `false` if another thread's increment
/// got in first, after waiting as `take_index` waits, so the winner keeps
/// the counter's line for its next operations.
#[inline]
pub(crate) fn claim_index(
    counter: &sync::atomic::AtomicU64,
    seen: u64,
    order: sync::atomic::Ordering,
) -> bool {
    let taken = claim_index_once(counter, seen, order);
    if !taken {
        RaceBackoff::new().lost();
    }
    taken
}

/// [`claim_index`] without the wait after a lost race: for an attempt
/// that a full one (which waits) follows when it fails.
#[inline]
pub(crate) fn claim_index_once(
    counter: &sync::atomic::AtomicU64,
    seen: u64,
    order: sync::atomic::Ordering,
) -> bool {
    counter
        .compare_exchange(
            seen,
            seen.wrapping_add(1),
            order,
            sync::atomic::Ordering::Relaxed,
        )
        .is_ok()
}

#[cfg(loom)]
mod loom_atomic;

pub(crate) mod park;

/// A load for spin-waits on a one-way flag (a word another thread sets once
/// and we wait to see). Always a plain load, also under `loom_rmw_loads`:
/// there an RMW load lets loom order the setter's store after every one of
/// the spinner's RMWs, an endless path that real hardware cannot take.
pub(crate) trait SpinLoad {
    type Value;
    fn spin_load(&self, order: sync::atomic::Ordering) -> Self::Value;
}

macro_rules! spin_load {
    ($atomic:ty, $value:ty) => {
        impl SpinLoad for $atomic {
            type Value = $value;
            #[inline]
            fn spin_load(&self, order: sync::atomic::Ordering) -> $value {
                #[cfg(loom)]
                return std::ops::Deref::deref(self).load(order);
                #[cfg(not(loom))]
                return self.load(order);
            }
        }
    };
}

spin_load!(sync::atomic::AtomicUsize, usize);
spin_load!(sync::atomic::AtomicU64, u64);
spin_load!(sync::atomic::AtomicPtr<u8>, *mut u8);

/// A value of up to 16 bytes kept on a cache line of its own by padding on
/// both sides: with 56 bytes before and 64 after it, whatever the base
/// address, no byte of a neighbouring field shares a 64-byte line with it
/// (a line holding any byte of the value reaches at most 56 bytes past
/// either end), and two padded values start at least 128 bytes apart, so
/// they never sit in one 128-byte pair either (Intel's adjacent-line
/// prefetcher pulls pairs). 64 after, not more: with 72 a channel was
/// 1 040 bytes, past the 1 032 that glibc serves from its per-thread
/// cache, and creating, using and dropping a `bounded(1)` spent a fifth of
/// its time in `_int_malloc` and `_int_free`.
/// Not aligned, unlike `crossbeam_utils::CachePadded` (128): that made every
/// channel an aligned allocation and, with its padding, pushed it past
/// glibc's small-request limit (1 KiB), where each allocation first
/// consolidates the fast bins (measured: a quarter of the time of
/// creating, using and dropping a `bounded(1)`; 225 -> 177 ns). Padding
/// after the value only is not enough without the alignment: the channel's
/// kind, read by every operation, then shared the line of the permit count
/// (one sender and one receiver on a `bounded(1024)`: 65 -> 180 ns).
#[cfg(not(loom))]
#[repr(C)]
pub(crate) struct CachePadded<T> {
    // Uninitialised: never read, so creating a channel writes no zeros
    // into its ~700 bytes of padding.
    _before: std::mem::MaybeUninit<[u8; 56]>,
    value: T,
    _after: std::mem::MaybeUninit<[u8; 64]>,
}

#[cfg(not(loom))]
impl<T> CachePadded<T> {
    /// The padding isolates values of up to 16 bytes (type docs); checked
    /// where a padded value is made, at compile time.
    const FITS: () = assert!(
        std::mem::size_of::<T>() <= 16 && std::mem::align_of::<T>() <= 16,
        "CachePadded pads values of up to 16 bytes"
    );

    pub(crate) const fn new(value: T) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        CachePadded {
            _before: std::mem::MaybeUninit::uninit(),
            value,
            _after: std::mem::MaybeUninit::uninit(),
        }
    }
}

#[cfg(not(loom))]
impl<T> CachePadded<T> {
    /// Initialises `*p` in place with `value`, writing the value's bytes
    /// only. Written whole (`p.write(CachePadded::new(..))`), the padding
    /// counts as "any bytes" to LLVM, which then merged a channel's zeroed
    /// counters and the padding between them into one `memset` call of 304
    /// bytes (a sixth of the time of creating, using and dropping a
    /// `bounded(1)`).
    ///
    /// # Safety
    /// `p` is valid for writes and aligned. The padding stays
    /// uninitialised, which is what `new` makes it too.
    #[inline(always)]
    pub(crate) unsafe fn write_at(p: *mut Self, value: T) {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        // SAFETY: per the contract; `value` is a field of `*p`.
        unsafe { std::ptr::addr_of_mut!((*p).value).write(value) }
    }
}

#[cfg(not(loom))]
impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

/// Under loom padding only slows the model down.
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct CachePadded<T>(T);

#[cfg(loom)]
impl<T> CachePadded<T> {
    pub(crate) fn new(t: T) -> Self {
        CachePadded(t)
    }
}

#[cfg(loom)]
impl<T> CachePadded<T> {
    /// As without loom: initialises `*p` in place.
    ///
    /// # Safety
    /// `p` is valid for writes and aligned.
    pub(crate) unsafe fn write_at(p: *mut Self, value: T) {
        // SAFETY: per the contract.
        unsafe { p.write(CachePadded(value)) }
    }
}

#[cfg(loom)]
impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
