//! The public handles: [`Sender`], [`Receiver`], and their iterators.

use crate::error::*;
use crate::loom::sync::Arc;
use crate::segment_chan::Channel;
use crate::timer::Timer;
use crate::{Fail, Wait};
use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::time::{Duration, Instant};

mod shared;

use shared::{SharedRef, Side};

fn new_pair<T>(cap: Option<usize>) -> (Sender<T>, Receiver<T>) {
    let (sender, receiver) = SharedRef::new_pair(cap);
    (
        Sender { shared: sender },
        Receiver {
            flavor: Flavor::Chan(receiver),
        },
    )
}

/// Creates a channel of capacity `cap`. `bounded(0)` is a rendezvous
/// channel (Go's unbuffered channel): a send completes only when a receiver
/// takes the message. No memory proportional to `cap` is allocated up front.
///
/// ```
/// let (tx, rx) = scalechan::bounded(2);
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert!(tx.try_send(3).is_err()); // full
/// assert_eq!(rx.recv(), Ok(1));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    new_pair(Some(cap))
}

/// Creates a channel without a capacity limit: sends never block.
///
/// ```
/// let (tx, rx) = scalechan::unbounded();
/// for i in 0..1000 {
///     tx.send(i).unwrap();
/// }
/// assert_eq!(rx.len(), 1000);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    new_pair(None)
}

/// Turns a timeout into a deadline; one too large to represent waits forever.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// Whether a timed operation first tries without a deadline, so that one
/// that completes at once reads no clock: `Instant::now()` cost 25 ns here,
/// twice a receive of a waiting message (a `recv_timeout` that found one
/// took 39 ns, as crossbeam-channel's does, against 13 for `recv`;
/// 14.6-15.2 with the try, which takes the message in `Channel::try_take`'s
/// small frame). Not for large messages, which a failed try would move
/// twice more (there the clock read is the lesser cost). Not under loom:
/// the try and the timed operation are each checked there, and a try in
/// front would only multiply the timed models' interleavings.
const fn tries_first<T>() -> bool {
    std::mem::size_of::<T>() <= 64 && !cfg!(loom)
}

/// The sending half of a channel. Clone it for more producers.
///
/// ```
/// let (tx, rx) = scalechan::unbounded();
/// let tx2 = tx.clone();
/// std::thread::spawn(move || tx2.send("hi").unwrap()).join().unwrap();
/// assert_eq!(rx.recv(), Ok("hi"));
/// ```
pub struct Sender<T> {
    shared: SharedRef<T>,
}

/// The receiving half of a channel. Clone it for more consumers.
///
/// ```
/// let (tx, rx) = scalechan::unbounded();
/// tx.send(5).unwrap();
/// let rx2 = rx.clone();
/// assert_eq!(rx2.recv(), Ok(5));
/// ```
///
/// # Dropping
///
/// When the last `Receiver` is dropped the channel closes, and the messages
/// still buffered are dropped there, each exactly once, before that drop
/// returns; senders then see `len() == 0`. If a message's `Drop` panics,
/// the panic comes out of the `Receiver`'s drop and the messages behind it
/// are leaked, never dropped (a second panic while the first unwinds would
/// abort the process); nothing is dropped twice and the channel's own
/// memory is still freed.
///
/// ```
/// let (tx, rx) = scalechan::bounded(4);
/// tx.send(String::from("never received")).unwrap();
/// drop(rx); // drops the buffered string, closes the channel
/// assert_eq!(tx.len(), 0);
/// assert!(tx.send(String::new()).is_err());
/// ```
pub struct Receiver<T> {
    flavor: Flavor<T>,
}

// No operation runs the caller's code while a cell or count is mid-change:
// a message's own `Drop` runs only where the channel is done with it (the
// last `Receiver`'s drain, an unsent select value), and a select's arm
// after the select has completed. So a panic cannot leave a channel
// inconsistent, and the handles may cross `catch_unwind`, as std's and
// crossbeam-channel's do (without these, the segment list's `UnsafeCell`s
// made them neither).
impl<T> UnwindSafe for Sender<T> {}
impl<T> RefUnwindSafe for Sender<T> {}
impl<T> UnwindSafe for Receiver<T> {}
impl<T> RefUnwindSafe for Receiver<T> {}

/// What a [`Receiver`] receives from.
pub(crate) enum Flavor<T> {
    /// A channel.
    Chan(SharedRef<T>),
    /// A timer ([`after`](crate::after), [`tick`](crate::tick),
    /// [`never`](crate::never)). The function makes its `Instant` a `T`:
    /// only the timer constructors build this flavor, with `T = Instant`
    /// (identity) or, for `never`, a function that is never called.
    Timer(Arc<Timer>, fn(Instant) -> T),
}

/// The operations both handle types share, whatever is behind them.
enum Ops<'a, T> {
    Chan(&'a Channel<T>),
    Timer(&'a Timer),
}

impl<T> Ops<'_, T> {
    fn close(&self) -> bool {
        match self {
            Ops::Chan(chan) => chan.close(),
            Ops::Timer(timer) => timer.close(),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Ops::Chan(chan) => chan.is_closed(),
            Ops::Timer(timer) => timer.is_closed(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Ops::Chan(chan) => chan.len(),
            Ops::Timer(timer) => timer.len(),
        }
    }

    fn is_full(&self) -> bool {
        match self {
            Ops::Chan(chan) => chan.is_full(),
            Ops::Timer(timer) => timer.capacity().is_some_and(|cap| timer.len() >= cap),
        }
    }

    fn capacity(&self) -> Option<usize> {
        match self {
            Ops::Chan(chan) => chan.capacity(),
            Ops::Timer(timer) => timer.capacity(),
        }
    }

    fn addr(&self) -> usize {
        match self {
            Ops::Chan(chan) => *chan as *const Channel<T> as usize,
            Ops::Timer(timer) => *timer as *const Timer as usize,
        }
    }
}

impl<T> Receiver<T> {
    fn ops(&self) -> Ops<'_, T> {
        match &self.flavor {
            Flavor::Chan(shared) => Ops::Chan(&shared.chan),
            Flavor::Timer(timer, _) => Ops::Timer(timer),
        }
    }

    pub(crate) fn from_timer(timer: Timer, convert: fn(Instant) -> T) -> Self {
        Receiver {
            flavor: Flavor::Timer(Arc::new(timer), convert),
        }
    }

    pub(crate) fn flavor(&self) -> &Flavor<T> {
        &self.flavor
    }
}

impl<T> Sender<T> {
    fn ops(&self) -> Ops<'_, T> {
        Ops::Chan(&self.shared.chan)
    }

    pub(crate) fn chan(&self) -> &Channel<T> {
        &self.shared.chan
    }
}

macro_rules! common_methods {
    () => {
        /// Closes the channel (Go's `close`). Sends fail from now on, blocked
        /// senders get their message back; messages already sent can still be
        /// received. Returns `true` if this call closed it.
        ///
        /// ```
        /// let (tx, rx) = scalechan::unbounded();
        /// tx.send(1).unwrap();
        /// assert!(rx.close());
        /// assert!(!tx.close());
        /// assert_eq!(rx.recv(), Ok(1));
        /// assert!(rx.recv().is_err());
        /// ```
        pub fn close(&self) -> bool {
            self.ops().close()
        }

        /// Whether the channel is closed.
        ///
        /// ```
        /// let (tx, rx) = scalechan::bounded::<i32>(1);
        /// drop(rx);
        /// assert!(tx.is_closed());
        /// ```
        pub fn is_closed(&self) -> bool {
            self.ops().is_closed()
        }

        /// The number of buffered messages (always 0 for `bounded(0)`).
        ///
        /// ```
        /// let (tx, rx) = scalechan::bounded(4);
        /// tx.send(1).unwrap();
        /// assert_eq!(rx.len(), 1);
        /// ```
        pub fn len(&self) -> usize {
            self.ops().len()
        }

        /// Whether no message is buffered.
        ///
        /// ```
        /// let (tx, _rx) = scalechan::unbounded::<i32>();
        /// assert!(tx.is_empty());
        /// ```
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Whether a send would block (always `true` for `bounded(0)`, never
        /// for unbounded channels).
        ///
        /// ```
        /// let (tx, _rx) = scalechan::bounded(1);
        /// tx.send(1).unwrap();
        /// assert!(tx.is_full());
        /// ```
        pub fn is_full(&self) -> bool {
            self.ops().is_full()
        }

        /// The capacity; `None` for unbounded channels.
        ///
        /// ```
        /// assert_eq!(scalechan::bounded::<u8>(3).0.capacity(), Some(3));
        /// assert_eq!(scalechan::unbounded::<u8>().0.capacity(), None);
        /// ```
        pub fn capacity(&self) -> Option<usize> {
            self.ops().capacity()
        }

        /// Whether both handles belong to the same channel.
        ///
        /// ```
        /// let (tx, _rx) = scalechan::unbounded::<i32>();
        /// assert!(tx.same_channel(&tx.clone()));
        /// ```
        pub fn same_channel(&self, other: &Self) -> bool {
            self.ops().addr() == other.ops().addr()
        }
    };
}

impl<T> Sender<T> {
    /// Sends a message, blocking while the channel is full (for `bounded(0)`,
    /// until a receiver takes it). Fails, handing the message back, if the
    /// channel is or becomes closed.
    ///
    /// ```
    /// let (tx, rx) = scalechan::bounded(1);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.recv(), Ok(1));
    /// ```
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        self.shared
            .chan
            .send(msg, Wait::Until(None))
            .map_err(|(msg, _)| SendError(msg))
    }

    /// Sends without blocking. Decides "full" from reads alone.
    ///
    /// ```
    /// use scalechan::TrySendError;
    /// let (tx, rx) = scalechan::bounded(0);
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1))); // nobody waiting
    /// drop(rx);
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Closed(1)));
    /// ```
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        self.shared
            .chan
            .send(msg, Wait::Try)
            .map_err(|(msg, fail)| match fail {
                Fail::Closed => TrySendError::Closed(msg),
                _ => TrySendError::Full(msg),
            })
    }

    /// Sends, waiting at most `timeout`. A timeout too large for `Instant`
    /// waits forever. A send that can complete at once does so without
    /// reading the clock; the timeout counts from when it starts to wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, _rx) = scalechan::bounded(1);
    /// tx.send(1).unwrap();
    /// assert!(tx.send_timeout(2, Duration::from_millis(5)).unwrap_err().is_timeout());
    /// ```
    pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        let msg = if tries_first::<T>() {
            // The timeout starts when the send has to wait: see `tries_first`.
            match self.try_send(msg) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(msg)) => return Err(SendTimeoutError::Closed(msg)),
                Err(TrySendError::Full(msg)) => msg,
            }
        } else {
            msg
        };
        self.send_until(msg, deadline_after(timeout))
    }

    /// Sends, waiting until `deadline` at most.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = scalechan::bounded(1);
    /// tx.send_deadline(1, Instant::now() + Duration::from_secs(1)).unwrap();
    /// assert_eq!(rx.recv(), Ok(1));
    /// ```
    pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_until(msg, Some(deadline))
    }

    fn send_until(&self, msg: T, deadline: Option<Instant>) -> Result<(), SendTimeoutError<T>> {
        let chan = &self.shared.chan;
        chan.send(msg, Wait::Until(deadline))
            .map_err(|(msg, fail)| match fail {
                Fail::Closed => SendTimeoutError::Closed(msg),
                // A close before the deadline is reported as one: a closer
                // sets its bit, then fails the waiters it finds, so the
                // waiter may have withdrawn unaware of it. The bit alone
                // decides (no try, unlike a receive: a bounded channel's
                // releaser never waits for an acquirer on its way, and on a
                // rendezvous channel see `Channel::recv_after_timeout`).
                _ if chan.is_closed() => SendTimeoutError::Closed(msg),
                _ => SendTimeoutError::Timeout(msg),
            })
    }

    common_methods!();
}

impl<T> Receiver<T> {
    /// Receives a message, blocking while the channel is empty. Fails once
    /// the channel is closed and drained.
    ///
    /// ```
    /// let (tx, rx) = scalechan::unbounded();
    /// std::thread::spawn(move || tx.send(9).unwrap());
    /// assert_eq!(rx.recv(), Ok(9));
    /// ```
    pub fn recv(&self) -> Result<T, RecvError> {
        self.recv_blocking(None).map_err(|_| RecvError)
    }

    /// `recv_in` for the blocking forms, apart from it so that `try_recv`
    /// stays two loads (see `Channel::recv_parked`).
    #[inline]
    fn recv_blocking(&self, deadline: Option<Instant>) -> Result<T, Fail> {
        match &self.flavor {
            Flavor::Chan(shared) => shared.chan.recv_parked(deadline),
            Flavor::Timer(..) => self.recv_in(Wait::Until(deadline)),
        }
    }

    #[inline]
    fn recv_in(&self, wait: Wait) -> Result<T, Fail> {
        match &self.flavor {
            Flavor::Chan(shared) => shared.chan.recv(wait),
            Flavor::Timer(timer, convert) => match wait {
                Wait::Try => timer.try_recv(),
                Wait::Until(deadline) => timer.recv(deadline),
            }
            .map(convert),
        }
    }

    /// Receives without blocking. "Empty" and "closed and drained" are
    /// decided from two loads, with no read-modify-write.
    ///
    /// ```
    /// use scalechan::TryRecvError;
    /// let (tx, rx) = scalechan::unbounded();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.recv_in(Wait::Try).map_err(|fail| match fail {
            Fail::Closed => TryRecvError::Closed,
            _ => TryRecvError::Empty,
        })
    }

    /// Receives, waiting at most `timeout`. A timeout too large for
    /// `Instant` waits forever. A message already there is taken without
    /// reading the clock; the timeout counts from when the receive starts
    /// to wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = scalechan::unbounded::<i32>();
    /// assert!(rx.recv_timeout(Duration::from_millis(5)).unwrap_err().is_timeout());
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        // The timeout starts when the receive has to wait: see
        // `tries_first`. (A timer reads the clock to answer a try anyway.)
        if tries_first::<T>() && matches!(self.flavor, Flavor::Chan(_)) {
            match self.try_recv() {
                Ok(msg) => return Ok(msg),
                Err(TryRecvError::Closed) => return Err(RecvTimeoutError::Closed),
                Err(TryRecvError::Empty) => {}
            }
        }
        self.recv_until(deadline_after(timeout))
    }

    /// Receives, waiting until `deadline` at most.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(3).unwrap();
    /// assert_eq!(rx.recv_deadline(Instant::now() + Duration::from_secs(1)), Ok(3));
    /// ```
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_until(Some(deadline))
    }

    fn recv_until(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        self.recv_blocking(deadline)
            .or_else(|fail| match (fail, &self.flavor) {
                // Gave up: one more try (see `recv_after_timeout`). A
                // timer's `recv` checks its own flag after its deadline.
                (Fail::Closed, _) | (_, Flavor::Timer(..)) => Err(fail),
                (_, Flavor::Chan(shared)) => shared.chan.recv_after_timeout(),
            })
            .map_err(|fail| match fail {
                Fail::Closed => RecvTimeoutError::Closed,
                _ => RecvTimeoutError::Timeout,
            })
    }

    /// A blocking iterator that ends when the channel is closed and drained.
    ///
    /// ```
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages available now.
    ///
    /// ```
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_iter().count(), 1);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    common_methods!();
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            shared: self.shared.clone_for(Side::Send),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        let flavor = match &self.flavor {
            Flavor::Chan(shared) => Flavor::Chan(shared.clone_for(Side::Recv)),
            Flavor::Timer(timer, convert) => Flavor::Timer(timer.clone(), *convert),
        };
        Receiver { flavor }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // SAFETY: the handle's one release; `shared` is not used after.
        unsafe { self.shared.release(Side::Send, |chan| _ = chan.close()) };
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let Flavor::Chan(shared) = &self.flavor else {
            return; // a timer stops when its last handle goes
        };
        // Buffered messages are dropped by the last receiver, each exactly
        // once. If one's `Drop` panics, the panic propagates and the rest
        // are leaked (never dropped twice, and never during the unwind,
        // where a second panic would abort).
        // SAFETY: the handle's one release; `shared` is not used after.
        unsafe { shared.release(Side::Recv, Channel::close_and_drain) };
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Blocking iterator returned by [`Receiver::iter`].
///
/// ```
/// let (tx, rx) = scalechan::bounded(1);
/// std::thread::spawn(move || { tx.send(1).unwrap(); });
/// assert_eq!(rx.iter().next(), Some(1));
/// ```
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

/// Non-blocking iterator returned by [`Receiver::try_iter`].
///
/// ```
/// let (tx, rx) = scalechan::unbounded::<i32>();
/// assert_eq!(rx.try_iter().next(), None);
/// ```
#[derive(Debug)]
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// Owning blocking iterator, from `IntoIterator for Receiver`.
///
/// ```
/// let (tx, rx) = scalechan::unbounded();
/// tx.send(1).unwrap();
/// drop(tx);
/// assert_eq!(rx.into_iter().sum::<i32>(), 1);
/// ```
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}
