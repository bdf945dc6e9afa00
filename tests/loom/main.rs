//! Loom models (see README for the commands).
#![cfg(loom)]

mod chan;
mod lscq;
mod scq;
mod select;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Runs `f` under loom with preemption bound `bound`, then runs the epoch
/// collector (loom checks that nothing leaks), and reports how many
/// executions were explored and how long it took.
pub(crate) fn model(name: &str, bound: usize, f: impl Fn() + Sync + Send + 'static) {
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
    eprintln!(
        "loom {name}: bound {bound}, {} iterations, {:.2?}",
        iterations.load(Ordering::Relaxed),
        start.elapsed()
    );
}
