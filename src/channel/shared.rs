//! The allocation a channel's handles share, and the one word that counts
//! them and decides who frees it.
//!
//! The word holds the number of `Sender`s, the number of `Receiver`s, and
//! the number of sides still open (2, then 1, then 0). Cloning a handle is
//! one add; dropping one is one subtract, and the handle whose subtract
//! takes its side's count to zero runs its side's close work, then closes
//! its side with a second subtract; whoever closes the second side frees
//! the allocation. So creating a channel takes no read-modify-write at all,
//! and dropping both ends of a fresh channel takes two each (an `Arc`
//! beside two handle counts took six; creating, using and dropping a
//! `bounded(1)` went from 142 to about 110 ns).
//!
//! (A handle that reads its side's count at 1 is the last one for good,
//! since handles are only made by cloning one of the same side, and could
//! run the close work first and leave with one subtract: 4 ns less per
//! channel, but that read in every drop made several loom models of the
//! channel two to five times larger.)

use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::segment_chan::Channel;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::{self, NonNull};

/// One `Sender` in the count.
const SENDER: u64 = 1;
/// One `Receiver` in the count.
const RECEIVER: u64 = 1 << 31;
/// One side (senders, receivers) that has handles or is closing.
const OPEN_SIDE: u64 = 1 << 62;
/// A side's count, once shifted down by its unit.
const SIDE_COUNT: u64 = (1 << 31) - 1;
/// More handles of one side than this aborts the process, as `Arc` does
/// past `isize::MAX` references: the count must never carry into the next
/// field (which takes over a billion leaked clones).
const MAX_HANDLES: u64 = 1 << 30;

/// Which side a handle is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Send,
    Recv,
}

impl Side {
    fn unit(self) -> u64 {
        match self {
            Side::Send => SENDER,
            Side::Recv => RECEIVER,
        }
    }

    fn count(self, word: u64) -> u64 {
        (word / self.unit()) & SIDE_COUNT
    }
}

/// The channel and its handle count.
pub(crate) struct Shared<T> {
    pub(crate) chan: Channel<T>,
    handles: AtomicU64,
}

/// glibc serves requests of up to 1 032 bytes from a per-thread cache and
/// sends larger ones through `_int_malloc`, whose slow path was a fifth of
/// the time of creating, using and dropping a `bounded(1)` while a channel
/// was 1 040 bytes (`crate::loom::CachePadded` says what shrank it). Not
/// under loom, whose atomics and padding differ.
#[cfg(all(not(loom), target_pointer_width = "64"))]
const _: () = assert!(std::mem::size_of::<Shared<u64>>() <= 1032);

/// One handle's counted pointer to the [`Shared`] state.
pub(crate) struct SharedRef<T> {
    ptr: NonNull<Shared<T>>,
    _owns: PhantomData<Shared<T>>,
}

// SAFETY: a `SharedRef` gives out only `&Shared<T>` (whose channel is
// `Send + Sync` when `T: Send`), and frees it once, from whichever thread
// drops the last handle: what `Arc<Shared<T>>` would allow.
unsafe impl<T: Send> Send for SharedRef<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send> Sync for SharedRef<T> {}

impl<T> SharedRef<T> {
    /// A new channel of capacity `cap`, and one reference for each side.
    pub(crate) fn new_pair(cap: Option<usize>) -> (SharedRef<T>, SharedRef<T>) {
        // Built in place: on the stack and moved, the ~1 KiB channel (mostly
        // padding) was copied once more, an eighth of the time of creating,
        // using and dropping a `bounded(1)`.
        let mut boxed = Box::<Shared<T>>::new_uninit();
        let p = boxed.as_mut_ptr();
        // SAFETY: `p` is the new allocation, unshared and laid out for
        // `Shared<T>`; each field is written once, so all of it is
        // initialised when `assume_init` runs.
        let shared = unsafe {
            Channel::init_at(ptr::addr_of_mut!((*p).chan), cap);
            ptr::addr_of_mut!((*p).handles)
                .write(AtomicU64::new(SENDER + RECEIVER + 2 * OPEN_SIDE));
            boxed.assume_init()
        };
        let ptr = NonNull::from(Box::leak(shared));
        // SAFETY: in place for good, not yet shared, and `ptr` is the
        // pointer every handle's references derive from.
        unsafe { Channel::share_domains(ptr::addr_of_mut!((*ptr.as_ptr()).chan)) };
        let new = || SharedRef {
            ptr,
            _owns: PhantomData,
        };
        (new(), new())
    }

    /// Another reference for a new handle of `side`.
    pub(crate) fn clone_for(&self, side: Side) -> SharedRef<T> {
        // Relaxed: a new handle is made from an existing one, as in `Arc`.
        let before = self.handles.fetch_add(side.unit(), Ordering::Relaxed);
        if side.count(before) >= MAX_HANDLES {
            std::process::abort();
        }
        SharedRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }

    /// Drops this reference of a handle of `side`. The last handle of its
    /// side runs `close_side` first; the last reference of all frees the
    /// channel (also when `close_side` panics: the panic goes on from here).
    ///
    /// # Safety
    /// Called once per reference, which is not used afterwards.
    pub(crate) unsafe fn release(&self, side: Side, close_side: impl FnOnce(&Channel<T>)) {
        // AcqRel: Release hands our uses of the channel to whoever frees
        // it; Acquire, when we are the last of our side, orders the other
        // handles' uses before our close work.
        let before = self.handles.fetch_sub(side.unit(), Ordering::AcqRel);
        if side.count(before) == 1 {
            let leave = Leave { shared: self.ptr };
            close_side(&self.chan);
            drop(leave);
        }
    }
}

impl<T> Deref for SharedRef<T> {
    type Target = Shared<T>;

    fn deref(&self) -> &Shared<T> {
        // SAFETY: our reference is counted, so the allocation is alive.
        unsafe { self.ptr.as_ref() }
    }
}

/// Closes its side in the count when dropped (so also while a panic
/// unwinds), and frees the channel if that leaves nothing.
struct Leave<T> {
    shared: NonNull<Shared<T>>,
}

impl<T> Drop for Leave<T> {
    fn drop(&mut self) {
        // SAFETY: we hold a counted reference until the subtract below.
        let handles = unsafe { &self.shared.as_ref().handles };
        // AcqRel: Release hands this side's close work (and all its uses)
        // to the freer; Acquire, if we are the freer, sees the other side's.
        if handles.fetch_sub(OPEN_SIDE, Ordering::AcqRel) == OPEN_SIDE {
            // SAFETY: the count is zero: no handle is left, and the
            // allocation came from `Box` in `new_pair`.
            drop(unsafe { Box::from_raw(self.shared.as_ptr()) });
        }
    }
}
