//! [`Select`]: a select built at run time, with any number of cases.

use super::cases::{RecvCase, SendCase};
use super::{Case, Limit};
use crate::channel::{Receiver, Sender};
use crate::error::{RecvError, SendError};
use std::fmt;
use std::time::{Duration, Instant};

/// A case together with the handler that consumes its result.
trait Arm<'a, R> {
    fn case(&mut self) -> &mut (dyn Case + 'a);
    fn fire(self: Box<Self>) -> R;
}

struct RecvArm<'a, T, F> {
    case: RecvCase<'a, T>,
    handler: F,
}

impl<'a, T, R, F: FnOnce(Result<T, RecvError>) -> R> Arm<'a, R> for RecvArm<'a, T, F> {
    fn case(&mut self) -> &mut (dyn Case + 'a) {
        &mut self.case
    }
    fn fire(mut self: Box<Self>) -> R {
        let result = self.case.take_result();
        (self.handler)(result)
    }
}

struct SendArm<'a, T, F> {
    case: SendCase<'a, T>,
    handler: F,
}

impl<'a, T, R, F: FnOnce(Result<(), SendError<T>>) -> R> Arm<'a, R> for SendArm<'a, T, F> {
    fn case(&mut self) -> &mut (dyn Case + 'a) {
        &mut self.case
    }
    fn fire(mut self: Box<Self>) -> R {
        let result = self.case.take_result();
        (self.handler)(result)
    }
}

/// A select assembled at run time: any number of receive and send cases,
/// over channels of any element types, each with a handler. Exactly one
/// case completes and its handler runs; the values of send cases that were
/// not chosen are dropped before it runs, never sent.
///
/// [`select!`](crate::select!) is the same with a fixed set of cases and no
/// heap allocation; `Select` allocates one box per case.
///
/// ```
/// use scalechan::Select;
/// let (tx1, rx1) = scalechan::unbounded::<i32>();
/// let (tx2, rx2) = scalechan::bounded::<&str>(1);
/// tx1.send(7).unwrap();
/// tx2.send("full").unwrap(); // bounded(1) is now full
/// let got = Select::new()
///     .recv(&rx1, |msg| format!("got {}", msg.unwrap()))
///     .send(&tx2, "more", |res| format!("sent: {}", res.is_ok()))
///     .wait();
/// assert_eq!(got, "got 7");
/// # drop(rx2);
/// ```
pub struct Select<'a, R> {
    arms: Vec<Box<dyn Arm<'a, R> + 'a>>,
}

impl<'a, R> Select<'a, R> {
    /// A select with no cases.
    ///
    /// ```
    /// let none = scalechan::Select::<()>::new();
    /// assert!(none.try_wait().is_none());
    /// ```
    pub fn new() -> Self {
        Select { arms: Vec::new() }
    }

    /// Adds a case receiving from `rx`; `handler` gets the message, or
    /// `Err(RecvError)` if the channel is closed and drained.
    ///
    /// ```
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(1).unwrap();
    /// let n = scalechan::Select::new().recv(&rx, |m| m.unwrap() + 1).wait();
    /// assert_eq!(n, 2);
    /// ```
    pub fn recv<T: 'a>(
        mut self,
        rx: &'a Receiver<T>,
        handler: impl FnOnce(Result<T, RecvError>) -> R + 'a,
    ) -> Self {
        self.arms.push(Box::new(RecvArm {
            case: RecvCase::new(rx),
            handler,
        }));
        self
    }

    /// Adds a case sending `msg` on `tx`; `handler` gets `Ok(())`, or the
    /// message back if the channel is closed. If another case is chosen,
    /// `msg` is dropped, not sent.
    ///
    /// ```
    /// let (tx, rx) = scalechan::bounded(1);
    /// let sent = scalechan::Select::new().send(&tx, 5, |r| r.is_ok()).wait();
    /// assert!(sent);
    /// assert_eq!(rx.recv(), Ok(5));
    /// ```
    pub fn send<T: 'a>(
        mut self,
        tx: &'a Sender<T>,
        msg: T,
        handler: impl FnOnce(Result<(), SendError<T>>) -> R + 'a,
    ) -> Self {
        self.arms.push(Box::new(SendArm {
            case: SendCase::new(tx, msg),
            handler,
        }));
        self
    }

    /// Blocks until a case completes and returns its handler's value. With
    /// no cases, blocks forever.
    ///
    /// ```
    /// let (tx, rx) = scalechan::bounded(0);
    /// std::thread::spawn(move || tx.send("hello").unwrap());
    /// let msg = scalechan::Select::new().recv(&rx, |m| m.unwrap()).wait();
    /// assert_eq!(msg, "hello");
    /// ```
    pub fn wait(self) -> R {
        self.run(true, Limit::Never)
            .expect("a select without a deadline always completes a case")
    }

    /// Completes a case that is ready now, if any.
    ///
    /// ```
    /// let (_tx, rx) = scalechan::unbounded::<i32>();
    /// assert!(scalechan::Select::new().recv(&rx, |_| ()).try_wait().is_none());
    /// ```
    pub fn try_wait(self) -> Option<R> {
        self.run(false, Limit::Never)
    }

    /// Waits at most `timeout` for a case to complete. A timeout too large
    /// for `Instant` waits forever. A case ready at once completes without
    /// a clock read; the timeout counts from when the select starts to
    /// wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = scalechan::unbounded::<i32>();
    /// let r = scalechan::Select::new()
    ///     .recv(&rx, |_| ())
    ///     .wait_timeout(Duration::from_millis(5));
    /// assert!(r.is_none());
    /// ```
    pub fn wait_timeout(self, timeout: Duration) -> Option<R> {
        self.run(true, Limit::After(timeout))
    }

    /// Waits until `deadline` at most for a case to complete.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = scalechan::unbounded();
    /// tx.send(1).unwrap();
    /// let r = scalechan::Select::new()
    ///     .recv(&rx, |m| m.unwrap())
    ///     .wait_deadline(Instant::now() + Duration::from_secs(1));
    /// assert_eq!(r, Some(1));
    /// ```
    pub fn wait_deadline(self, deadline: Instant) -> Option<R> {
        self.run(true, Limit::At(deadline))
    }

    fn run(mut self, block: bool, limit: Limit) -> Option<R> {
        // The cases and the shuffle's scratch on the stack for the usual
        // few cases: two allocations fewer per select (a two-case `Select`
        // that found its message: 99-101 -> 80-86 ns, crossbeam-channel's
        // 70-79 in the same runs).
        let mut small = [0; 4];
        let mut large = Vec::new();
        let order = if self.arms.len() <= small.len() {
            &mut small[..self.arms.len()]
        } else {
            large.resize(self.arms.len(), 0);
            &mut large[..]
        };
        let index = match &mut self.arms[..] {
            [a] => super::run(&mut [a.case()], order, block, limit),
            [a, b] => super::run(&mut [a.case(), b.case()], order, block, limit),
            [a, b, c] => super::run(&mut [a.case(), b.case(), c.case()], order, block, limit),
            [a, b, c, d] => super::run(
                &mut [a.case(), b.case(), c.case(), d.case()],
                order,
                block,
                limit,
            ),
            arms => {
                let mut cases: Vec<&mut (dyn Case + 'a)> =
                    arms.iter_mut().map(|arm| arm.case()).collect();
                super::run(&mut cases, order, block, limit)
            }
        }?;
        let chosen = self.arms.swap_remove(index);
        // The other cases' unsent values go first, as `select!`'s do.
        self.arms.clear();
        Some(chosen.fire())
    }
}

impl<R> Default for Select<'_, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R> fmt::Debug for Select<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select")
            .field("cases", &self.arms.len())
            .finish()
    }
}
