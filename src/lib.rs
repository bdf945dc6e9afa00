//! Go-style channels on scalable fetch-and-add queues, model-checked with loom.
//!
//! ```
//! use std::thread;
//!
//! let (tx, rx) = scalechan::bounded(16);
//! let producers: Vec<_> = (0..4)
//!     .map(|p| {
//!         let tx = tx.clone();
//!         thread::spawn(move || {
//!             for i in 0..100 {
//!                 tx.send(p * 100 + i).unwrap();
//!             }
//!         })
//!     })
//!     .collect();
//! drop(tx); // the channel closes when the last sender is gone
//! let sum: u64 = rx.iter().sum();
//! for p in producers {
//!     p.join().unwrap();
//! }
//! assert_eq!(sum, (0..400).sum());
//! ```
//!
//! # Design
//!
//! Every send and every receive takes an index from its side's counter (one
//! CAS, or a fetch-and-add after a short wait when another thread's
//! increment got in first: wait-free either way) and meets
//! its partner in the cell of that index, in a linked list of fixed-size
//! segments ([`segment_chan`](crate) module docs). A thread parks only when
//! its partner has not arrived; timeouts cancel a parked waiter's cell, which
//! the partner then skips. `bounded(n)` puts a counting semaphore in front of
//! the sends; `bounded(0)` parks senders in their cell until a receiver takes
//! the message. Zero-sized messages (a `bounded::<()>(n)` semaphore) are a
//! count in one word instead. Segments are reclaimed with epochs, each
//! channel's its own (a thread preempted mid-operation holds back only the
//! channel it is on), and reused from a small pool, so steady traffic does
//! not allocate.
#![warn(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]

mod atomic128;
mod cell;
mod channel;
mod coarse_clock;
mod counting;
mod epoch;
mod error;
#[allow(dead_code)] // the shim offers more than each module uses
mod loom;
pub mod lscq;
mod pause;
pub mod scq;
mod segment;
mod segment_chan;
pub mod select;
mod semaphore;
mod timer;
mod waiter;
#[cfg(not(loom))]
mod yielding;

pub use channel::{bounded, unbounded, IntoIter, Iter, Receiver, Sender, TryIter};
pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use lscq::Lscq;
pub use scq::Scq;
pub use select::Select;

/// A channel that delivers one message, the [`Instant`] it fired at, once
/// `delay` has passed, and is never ready again (it does not close: a select
/// loop over it must not spin). Go's `time.After`. No thread is spawned: the
/// receiver compares the deadline with the clock.
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// let timeout = scalechan::after(Duration::from_millis(10));
/// let fired = timeout.recv().unwrap();
/// assert!(fired >= start + Duration::from_millis(10));
/// assert!(timeout.try_recv().is_err()); // delivered once
/// ```
///
/// [`Instant`]: std::time::Instant
pub fn after(delay: std::time::Duration) -> Receiver<std::time::Instant> {
    Receiver::from_timer(timer::Timer::after(delay), |at| at)
}

/// A channel that delivers the time every `period`, on the grid
/// `start + k * period` (Go's `time.Ticker`). A receiver that falls behind
/// gets one stale tick and then the next grid point: ticks never queue up.
///
/// # Panics
/// If `period` is zero, as Go's `NewTicker` does.
///
/// ```
/// use std::time::Duration;
/// let ticks = scalechan::tick(Duration::from_millis(5));
/// let first = ticks.recv().unwrap();
/// let second = ticks.recv().unwrap();
/// assert!(second > first);
/// ```
pub fn tick(period: std::time::Duration) -> Receiver<std::time::Instant> {
    Receiver::from_timer(timer::Timer::tick(period), |at| at)
}

/// A channel that never delivers anything: a select case that never fires
/// (for example a disabled timeout). `capacity()` is `Some(0)`.
///
/// ```
/// use std::time::Duration;
/// let rx = scalechan::never::<i32>();
/// assert!(rx.recv_timeout(Duration::from_millis(1)).unwrap_err().is_timeout());
/// ```
pub fn never<T>() -> Receiver<T> {
    fn nothing<T>(_: std::time::Instant) -> T {
        unreachable!("a never() channel delivers nothing")
    }
    Receiver::from_timer(timer::Timer::never(), nothing::<T>)
}

/// How long an operation may wait.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// Not at all.
    Try,
    /// Until the deadline (`None`: forever).
    Until(Option<std::time::Instant>),
}

/// Why an operation did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fail {
    /// Full (send) or empty (receive), and the caller would not wait.
    WouldBlock,
    /// The channel is closed (and, for a receive, drained).
    Closed,
    /// The deadline passed.
    Timeout,
}

impl Fail {
    /// Why an operation that cannot complete now failed: `Closed` on a
    /// closed channel, else it would have to wait.
    #[inline]
    pub(crate) fn closed_or_blocked(closed: bool) -> Fail {
        if closed {
            Fail::Closed
        } else {
            Fail::WouldBlock
        }
    }
}

#[doc(hidden)]
pub mod __private {
    //! Hooks for the crate's own tests; not part of the API.

    /// Segments currently allocated by all channels, live or pooled, since
    /// [`count_live_segments`] was called (before any channel was made).
    pub fn live_segments() -> usize {
        crate::segment::live_segments()
    }

    /// Starts counting segments for [`live_segments`] (off by default: it
    /// costs every channel creation a read-modify-write).
    pub fn count_live_segments() {
        crate::segment::count_live_segments()
    }

    /// Runs the epoch collector a few times: with no thread pinned, frees
    /// every Lscq ring retired so far (loom checks that nothing leaks at
    /// the end of each model; a channel frees its own segments, at the
    /// latest when it is dropped). Safe at any time: it never frees what a
    /// pinned thread may still reach.
    pub fn collect_garbage() {
        for _ in 0..3 {
            crate::epoch::collect();
        }
    }
}
