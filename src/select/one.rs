//! `select!` with a single case: the plain operation is that select, with
//! none of the select's machinery (no case objects, no shuffle, no
//! registration). Go compiles such selects to its plain channel operations
//! too. Measured here on an unbounded channel holding the message: a
//! one-case blocking `select!` 40-43 ns through `run`, the plain `recv`
//! 13; with `default(timeout)` 35 against 17 (the timed receive, which
//! reads the clock only if it must wait).
//!
//! The macro's rules for one case call these. A send whose value the
//! channel did not take hands it back as `Err`, for the macro to drop
//! before the default arm's body, as a send case that is not chosen drops
//! its value.

use crate::channel::{Receiver, Sender};
use crate::error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
use std::time::Duration;

/// `select! { recv(rx) -> res => .. }`.
#[inline]
pub fn recv<T>(rx: &Receiver<T>) -> Result<T, RecvError> {
    rx.recv()
}

/// With `default`: the case's result, or `None` when it was not ready.
#[inline]
pub fn try_recv<T>(rx: &Receiver<T>) -> Option<Result<T, RecvError>> {
    match rx.try_recv() {
        Ok(msg) => Some(Ok(msg)),
        Err(TryRecvError::Closed) => Some(Err(RecvError)),
        Err(TryRecvError::Empty) => None,
    }
}

/// With `default(timeout)`: the case's result, or `None` on the timeout.
#[inline]
pub fn recv_timeout<T>(rx: &Receiver<T>, timeout: Duration) -> Option<Result<T, RecvError>> {
    match rx.recv_timeout(timeout) {
        Ok(msg) => Some(Ok(msg)),
        Err(RecvTimeoutError::Closed) => Some(Err(RecvError)),
        Err(RecvTimeoutError::Timeout) => None,
    }
}

/// `select! { send(tx, msg) -> res => .. }`.
#[inline]
pub fn send<T>(tx: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
    tx.send(msg)
}

/// With `default`: the case's result, or the value back when the case was
/// not ready.
#[inline]
pub fn try_send<T>(tx: &Sender<T>, msg: T) -> Result<Result<(), SendError<T>>, T> {
    match tx.try_send(msg) {
        Ok(()) => Ok(Ok(())),
        Err(TrySendError::Closed(msg)) => Ok(Err(SendError(msg))),
        Err(TrySendError::Full(msg)) => Err(msg),
    }
}

/// With `default(timeout)`: the case's result, or the value back on the
/// timeout.
#[inline]
pub fn send_timeout<T>(
    tx: &Sender<T>,
    msg: T,
    timeout: Duration,
) -> Result<Result<(), SendError<T>>, T> {
    match tx.send_timeout(msg, timeout) {
        Ok(()) => Ok(Ok(())),
        Err(SendTimeoutError::Closed(msg)) => Ok(Err(SendError(msg))),
        Err(SendTimeoutError::Timeout(msg)) => Err(msg),
    }
}
