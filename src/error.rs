//! Error types of channel operations.

use std::error::Error;
use std::fmt;

/// `Debug` and `Error` for a send error: `Debug` names the variant (as
/// `Full(..)`, like crossbeam-channel's and std's) and never prints the
/// message, so `T` need not be `Debug` and `unwrap` on a failed send still
/// says why it failed.
macro_rules! send_error_common {
    ($ty:ident { $($variant:path => $name:literal),+ }) => {
        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($variant(_) => f.write_str(concat!($name, "(..)")),)+
                }
            }
        }
        impl<T: Send> Error for $ty<T> {}
    };
}

/// The channel is closed: the message comes back.
///
/// ```
/// let (tx, rx) = scalechan::unbounded::<i32>();
/// drop(rx);
/// let err = tx.send(7).unwrap_err();
/// assert_eq!(format!("{err:?}"), "SendError(..)"); // never the message
/// assert_eq!(err.into_inner(), 7);
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// let (tx, rx) = scalechan::bounded::<String>(1);
    /// rx.close();
    /// let back = tx.send("hi".into()).unwrap_err().into_inner();
    /// assert_eq!(back, "hi");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}
send_error_common!(SendError { SendError => "SendError" });

/// Why [`Sender::try_send`](crate::Sender::try_send) failed.
///
/// ```
/// use scalechan::TrySendError;
/// let (tx, _rx) = scalechan::bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// assert_eq!(format!("{:?}", tx.try_send(3).unwrap_err()), "Full(..)");
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The channel is full (or, for `bounded(0)`, no receiver is waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// let (tx, _rx) = scalechan::bounded(0); // nobody receiving
    /// assert_eq!(tx.try_send(5).unwrap_err().into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(t) | TrySendError::Closed(t) => t,
        }
    }

    /// True for `Full`.
    ///
    /// ```
    /// let (tx, _rx) = scalechan::bounded(1);
    /// tx.try_send(1).unwrap();
    /// assert!(tx.try_send(2).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// True for `Closed`.
    ///
    /// ```
    /// let (tx, rx) = scalechan::bounded(1);
    /// drop(rx);
    /// assert!(tx.try_send(1).unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}
send_error_common!(TrySendError { TrySendError::Full => "Full", TrySendError::Closed => "Closed" });

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Closed(e.0)
    }
}

/// Why a timed send failed.
///
/// ```
/// use std::time::Duration;
/// use scalechan::SendTimeoutError;
/// let (tx, _rx) = scalechan::bounded(0);
/// let r = tx.send_timeout(1, Duration::from_millis(1));
/// assert_eq!(r, Err(SendTimeoutError::Timeout(1)));
/// assert_eq!(format!("{:?}", r.unwrap_err()), "Timeout(..)");
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// No room (or no receiver) before the deadline.
    Timeout(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> SendTimeoutError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, _rx) = scalechan::bounded(0);
    /// let err = tx.send_timeout(3, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(err.into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(t) | SendTimeoutError::Closed(t) => t,
        }
    }

    /// True for `Timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, _rx) = scalechan::bounded(0);
    /// assert!(tx.send_timeout(1, Duration::from_millis(1)).unwrap_err().is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// True for `Closed` (reported before any wait: a closed channel never
    /// times out).
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, rx) = scalechan::bounded(0);
    /// rx.close();
    /// assert!(tx.send_timeout(1, Duration::from_secs(60)).unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, SendTimeoutError::Closed(_))
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting on send operation"),
            SendTimeoutError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}
send_error_common!(SendTimeoutError {
    SendTimeoutError::Timeout => "Timeout",
    SendTimeoutError::Closed => "Closed"
});

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(e: SendError<T>) -> Self {
        SendTimeoutError::Closed(e.0)
    }
}

/// The channel is closed and drained.
///
/// ```
/// let (tx, rx) = scalechan::unbounded::<i32>();
/// drop(tx);
/// assert_eq!(rx.recv(), Err(scalechan::RecvError));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}
impl Error for RecvError {}

/// Why [`Receiver::try_recv`](crate::Receiver::try_recv) failed.
///
/// ```
/// use scalechan::TryRecvError;
/// let (tx, rx) = scalechan::unbounded::<i32>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// tx.close();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum TryRecvError {
    /// Nothing to receive right now.
    Empty,
    /// The channel is closed and drained.
    Closed,
}

impl TryRecvError {
    /// True for `Empty`.
    ///
    /// ```
    /// let (_tx, rx) = scalechan::unbounded::<i32>();
    /// assert!(rx.try_recv().unwrap_err().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// True for `Closed`: closed, and every message sent before the close
    /// already received.
    ///
    /// ```
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(1).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert!(rx.try_recv().unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TryRecvError::Closed)
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}
impl Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Closed
    }
}

/// Why a timed receive failed.
///
/// ```
/// use std::time::Duration;
/// use scalechan::RecvTimeoutError;
/// let (_tx, rx) = scalechan::unbounded::<i32>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum RecvTimeoutError {
    /// Nothing arrived before the deadline.
    Timeout,
    /// The channel is closed and drained.
    Closed,
}

impl RecvTimeoutError {
    /// True for `Timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = scalechan::bounded::<i32>(1);
    /// assert!(rx.recv_timeout(Duration::from_millis(1)).unwrap_err().is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// True for `Closed` (closed and drained; a closed channel never times
    /// out).
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, rx) = scalechan::bounded::<i32>(1);
    /// drop(tx);
    /// assert!(rx.recv_timeout(Duration::from_secs(60)).unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, RecvTimeoutError::Closed)
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on receive operation"),
            RecvTimeoutError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}
impl Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Closed
    }
}
