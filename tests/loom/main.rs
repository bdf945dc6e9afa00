//! Loom models (see README for the commands).
#![cfg(loom)]

mod chan;
mod counting;
mod lscq;
mod scq;
mod select;

use scalechan::{bounded, Receiver, SendTimeoutError, Sender, TryRecvError, TrySendError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use std::time::Instant;

/// Runs `f` under loom with preemption bound `bound`, then runs the epoch
/// collector (loom checks that nothing leaks), and reports how many
/// executions were explored and how long it took.
///
/// `SCALECHAN_LOOM_EXTRA_BOUND=n` adds `n` to every model's bound, for a
/// deeper run than CI's; with `LOOM_MAX_DURATION=secs` each model stops
/// after that long, explored in loom's order as far as it got (README,
/// "Verification").
pub(crate) fn model(name: &str, bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let bound = bound + extra_bound();
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let start = Instant::now();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.max_branches = 20_000;
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
        scalechan::__private::collect_garbage();
    });
    let took = start.elapsed();
    // (loom stops exploring, without an error, once the time is up.)
    let cut_short = builder.max_duration.is_some_and(|max| took >= max);
    eprintln!(
        "loom {name}: bound {bound}, {} iterations, {took:.2?}{}",
        iterations.load(Ordering::Relaxed),
        if cut_short {
            " (stopped by LOOM_MAX_DURATION)"
        } else {
            ""
        }
    );
}

/// The preemptions `SCALECHAN_LOOM_EXTRA_BOUND` adds to each model's bound
/// (0 when unset).
fn extra_bound() -> usize {
    match std::env::var("SCALECHAN_LOOM_EXTRA_BOUND") {
        Ok(v) => v
            .parse()
            .expect("SCALECHAN_LOOM_EXTRA_BOUND: a number of preemptions"),
        Err(_) => 0,
    }
}

/// For a model where one send raced a close and another receiver: `first`
/// and `last` are `try_recv`s made after the close and after everything
/// joined. A `Closed` answer is final (no message comes out after it), and
/// the message was received exactly once (by the other receiver, which
/// `elsewhere` says, or by one of the two) if its send returned `Ok`.
pub(crate) fn assert_closed_is_final(
    first: Result<i32, TryRecvError>,
    last: Result<i32, TryRecvError>,
    elsewhere: bool,
    sent: bool,
) {
    if first == Err(TryRecvError::Closed) {
        assert_eq!(last, Err(TryRecvError::Closed), "a message after Closed");
    }
    let received = [elsewhere, first.is_ok(), last.is_ok()]
        .iter()
        .filter(|&&got| got)
        .count();
    assert_eq!(received, sent as usize);
}

/// `bounded(cap)` holding `0..cap`: full.
pub(crate) fn full(cap: usize) -> (Sender<i32>, Receiver<i32>) {
    let (tx, rx) = bounded(cap);
    for i in 0..cap as i32 {
        tx.send(i).unwrap();
    }
    (tx, rx)
}

/// Takes what is left in a channel of capacity 1, then checks that it
/// counts exactly one free slot: a waiter's withdrawn debt left no permit
/// behind and took none away.
pub(crate) fn drain_and_check_one_slot(tx: &Sender<i32>, rx: &Receiver<i32>) -> Vec<i32> {
    let left: Vec<i32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(tx.try_send(10), Ok(()));
    assert_eq!(tx.try_send(11), Err(TrySendError::Full(11)));
    // A permit left in a queue cell (seen only by a sender that queues)
    // would let this one through.
    assert_eq!(
        tx.send_timeout(12, Duration::from_millis(1)),
        Err(SendTimeoutError::Timeout(12))
    );
    assert_eq!(rx.try_recv(), Ok(10));
    left
}
