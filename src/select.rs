//! `select`: one operation out of several, whichever can complete first.
//!
//! ```
//! use scalechan::{bounded, select, Select};
//! let (tx, rx) = bounded::<i32>(1);
//! // The send case is ready (room in the buffer), the receive is not.
//! let sent = select! {
//!     send(tx, 1) -> res => res.is_ok(),
//!     recv(rx) -> _ => false,
//! };
//! assert!(sent);
//! // The same with the builder: now the receive is the ready case.
//! let got = Select::new().recv(&rx, |m| m.unwrap()).wait();
//! assert_eq!(got, 1);
//! ```
//!
//! The design is seed 003's, on the cells of the channel core:
//!
//! 1. **Try pass.** Every case is tried without blocking, in a random order
//!    (so each ready case is equally likely to be chosen).
//! 2. **Register.** One `Waiter`, starting in the `REGISTERING` state,
//!    publishes an entry in a cell of every case (a receive index, a
//!    rendezvous send index, or a place in a bounded channel's permit
//!    queue), in a fresh random order. A case found ready while registering
//!    completes at once; nobody else can decide a registering waiter, so the
//!    select simply takes it and withdraws what it published so far.
//!    A partner that meets a registering select skips its cell (as it skips
//!    a timed-out waiter) and marks the waiter `LOST`; when registration
//!    ends, the select re-checks its cells and registers those cases again.
//! 3. **Park.** The first partner (or closer) to win the waiter's state by
//!    CAS completes its case; the select wakes, withdraws its other entries
//!    (partners that reach them later skip them), and finishes the chosen
//!    case. A timeout aborts the waiter the same way.
//!
//! A select with both a send and a receive case on one rendezvous channel
//! must not pair with itself: see `Channel::register_pair` and the
//! duplex entries of the `cell` module. Several cases on one side of one
//! rendezvous channel register only once (the first in the random order);
//! the others still take part in the try pass.
//!
//! A timer case is waited for by time: the select parks until the earliest
//! timer's delivery time and then tries again. It also lists its entry with
//! the timer, so that closing the timer wakes the select.

mod builder;
mod cases;
mod macros;
#[doc(hidden)]
pub mod one;
mod rng;

/// What keeps [`Case`] to this crate's cases and its methods to `run`.
mod sealed {
    /// Implemented by the cases of this crate only.
    pub trait Sealed {}

    /// Made only in `select` and below: the permission to move a case on.
    #[derive(Clone, Copy, Debug)]
    pub struct Token(pub(in crate::select) ());
}

use sealed::Token;

/// The one token `run` and its helpers pass to the cases.
const TOKEN: Token = Token(());

use crate::waiter::{spin_until, Outcome, Waiter};
use std::time::Instant;

pub use builder::Select;
#[doc(hidden)]
pub use cases::{RecvCase, SendCase};

/// What [`Case::register`] did.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// The case waits in its cell (or registers nothing, like a timer).
    Pending,
    /// The case completed on the spot; its result is stored.
    Done,
    /// The case completed another case: its paired send case, which must
    /// now be finished with `complete(closed)`.
    Partner { index: usize, closed: bool },
}

/// What a case needs to register: the select's waiter and its own number.
#[doc(hidden)]
#[derive(Debug)]
pub struct Registrar<'a> {
    waiter: &'a Waiter,
    index: usize,
}

/// Where a case sits: which channel, on which side, and whether it is a
/// rendezvous channel (where a select could meet itself).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseKey {
    channel: usize,
    send: bool,
    rendezvous: bool,
}

/// One case of a select, its element type erased. Implemented by
/// [`RecvCase`] and [`SendCase`] only (sealed); not part of the API (for
/// `select!`, which needs to name it).
///
/// Every method that moves a case's state on takes a `Token`, which only
/// this module can make: called out of turn, they would read a slot no
/// partner wrote, send a value twice, or hand a partner a pointer to write
/// through, and code outside the crate can name this trait and call its
/// methods on a `dyn Case`. Those that only read take none, and
/// `register` needs a [`Registrar`], which only `run` makes.
///
/// ```compile_fail
/// use scalechan::select::{Case, SendCase};
/// let (tx, _rx) = scalechan::bounded(1);
/// let mut case = SendCase::new(&tx, String::from("once"));
/// let case: &mut dyn Case = &mut case;
/// case.complete(true); // the token is missing, and cannot be made here
/// ```
///
/// ```compile_fail
/// // Not implementable outside the crate (a case that claimed a partner
/// // decided it would make `run` read an unwritten slot).
/// struct Mine;
/// impl scalechan::select::Case for Mine {}
/// ```
#[doc(hidden)]
pub trait Case: sealed::Sealed {
    /// Tries the operation without blocking; `true`: it completed and its
    /// result is stored. `waits`: the select waits if no case is ready
    /// (a receive case may then look for a message before it looks for
    /// emptiness: see `Channel::try_recv_at_cursor_first`).
    fn try_complete(&mut self, waits: bool, _: Token) -> bool;
    /// The channel and side, for finding cases that would meet each other.
    fn key(&self) -> Option<CaseKey>;
    /// Leaves registration to another case on the same side of the same
    /// rendezvous channel.
    fn shadow(&mut self, _: Token);
    /// Forgets the pairing and shadowing of an earlier select, so that a
    /// case used again (by code calling `run` itself) starts from scratch.
    fn forget_meetings(&mut self, _: Token);
    /// For a receive case: pairs with send case `index` on the same
    /// rendezvous channel, whose value lives at `slot`.
    fn pair_with(&mut self, index: usize, slot: *mut (), _: Token);
    /// For a send case: the place its value waits in, and that it is now
    /// registered through a paired receive case.
    fn pair_slot(&mut self, _: Token) -> *mut ();
    /// Publishes the case's entry (keeping those still live).
    fn register(&mut self, registrar: &Registrar<'_>) -> Registered;
    /// Drops the entries partners skipped while the select was registering;
    /// `true` if the case must register again.
    fn drop_lost(&mut self, _: Token) -> bool;
    /// Takes the entries out after the select was decided: the entry that
    /// carried case `decided` (when a partner decided it) is complete, the
    /// others are withdrawn.
    fn release(&mut self, decided: Option<usize>, _: Token);
    /// A partner or closer decided this case: finishes it (moves the value
    /// in or out) and stores the result.
    fn complete(&mut self, closed: bool, _: Token);
    /// For a timer: when it may next be ready.
    fn next_delivery(&self) -> Option<Instant>;
    /// Whether the case would likely complete now (reads alone; timers
    /// say no, their delivery time bounds the wait instead).
    fn looks_ready(&self) -> bool;
    /// Whether the case waits on a buffer (for room in it, or for a value
    /// in it) rather than on a partner of a rendezvous channel or a timer.
    fn waits_on_buffer(&self) -> bool;
}

/// How long a blocking select may wait.
///
/// A timeout becomes a deadline only once the try pass found nothing ready:
/// a select that completes at once reads no clock (`Instant::now()`, 25 ns
/// here; a two-case `select!` with a `default(timeout)` arm that found its
/// message took 47-51 ns with the read first, 36-40 without).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// No deadline.
    Never,
    /// Until this instant.
    At(Instant),
    /// For this long from when the select starts to wait; a timeout too
    /// large for `Instant` waits forever.
    After(std::time::Duration),
}

impl Limit {
    fn deadline(self) -> Option<Instant> {
        match self {
            Limit::Never => None,
            Limit::At(deadline) => Some(deadline),
            Limit::After(timeout) => Instant::now().checked_add(timeout),
        }
    }
}

/// Runs a select over `cases`; `order` is scratch of the same length. With
/// `block` false, only the try pass runs. Returns the completed case, or
/// `None` when nothing was ready (`block` false) or the deadline passed.
#[doc(hidden)]
pub fn run<'c>(
    cases: &mut [&mut (dyn Case + 'c)],
    order: &mut [usize],
    block: bool,
    limit: Limit,
) -> Option<usize> {
    debug_assert_eq!(cases.len(), order.len());
    rng::shuffled(order);
    if let Some(done) = try_pass(cases, order, block) {
        return Some(done);
    }
    if !block {
        // (One case: its try was already linearizable on its own.)
        return if cases.len() > 1 {
            second_look(cases, order)
        } else {
            None
        };
    }
    let deadline = limit.deadline();
    find_meetings(cases, order);
    if let Some(done) = await_ready(cases, order, deadline) {
        return Some(done);
    }
    loop {
        // (loom has no clock and must replay deterministically: there the
        // deadline passes when a timed park returns, below.)
        if !cfg!(loom) && deadline.is_some_and(|d| Instant::now() >= d) {
            return second_look(cases, order);
        }
        rng::shuffled(order);
        let wake = next_wake(cases, deadline);
        let waiter = Waiter::registering();
        if let Some(done) = register_all(cases, order, &waiter) {
            return Some(done);
        }
        match waiter.wait(wake) {
            Outcome::Selected(index) => return Some(finish(cases, index, false)),
            Outcome::Closed(index) => return Some(finish(cases, index, true)),
            Outcome::TimedOut => {
                for case in cases.iter_mut() {
                    case.release(None, TOKEN);
                }
                // A timer may be due, or a channel may have become ready
                // just as we gave up.
                if let Some(done) = try_pass(cases, order, true) {
                    return Some(done);
                }
                // loom has no clock: a timed park that returned has expired.
                if cfg!(loom) && deadline.is_some() {
                    return None;
                }
            }
        }
    }
}

/// When a waiting select must look again: the earliest timer delivery or
/// its deadline.
fn next_wake(cases: &[&mut (dyn Case + '_)], deadline: Option<Instant>) -> Option<Instant> {
    cases
        .iter()
        .filter_map(|case| case.next_delivery())
        .chain(deadline)
        .min()
}

/// After a try pass found nothing, on the way to reporting that nothing
/// was ready: if a case looks ready now, one more pass. A pass reads its
/// cases one after another, so a case filled just after the pass went by it
/// and another emptied just before the pass reached it leave the pass empty
/// although some case was ready at every instant (crossbeam-channel's
/// `linearizable_*` tests: one channel is filled, then the other drained,
/// while a select with `default` looks at both). Every such change made
/// before the pass ended shows here, so the second pass finds that case
/// unless someone else takes it first.
fn second_look(cases: &mut [&mut (dyn Case + '_)], order: &[usize]) -> Option<usize> {
    if cases.iter().any(|case| case.looks_ready()) {
        try_pass(cases, order, false)
    } else {
        None
    }
}

/// Tries every case once, in `order`; `waits`: the select waits if none
/// is ready.
fn try_pass(cases: &mut [&mut (dyn Case + '_)], order: &[usize], waits: bool) -> Option<usize> {
    order
        .iter()
        .copied()
        .find(|&i| cases[i].try_complete(waits, TOKEN))
}

/// Before a select that waits on a buffer registers, waits a little (spin,
/// then yield, as a plain blocking operation does before it queues) for a
/// case to look ready, and tries again. A registered case waits in a queue
/// (a bounded channel's permit queue, or a receive cell), and with more
/// threads than cores every permit or message handed down that queue waits
/// for its select to be scheduled: measured, 16 select producers and 16
/// select consumers on a `bounded(10)` parked on every message (~1.7 us per
/// message against 0.25 us with the wait). Not when every case waits on a
/// rendezvous partner (or a timer): there the partner is a plain operation
/// that finds a registered select at once, and a wait only delays that
/// (Go's `chan_popular` shape measured 1.2-4.6x slower with it). And never
/// with a rendezvous send case: its receiver may be a select waiting the
/// same way, and a receiver only sees a sender that registered.
fn await_ready(
    cases: &mut [&mut (dyn Case + '_)],
    order: &mut [usize],
    deadline: Option<Instant>,
) -> Option<usize> {
    let rendezvous_send = cases
        .iter()
        .any(|case| case.key().is_some_and(|key| key.rendezvous && key.send));
    // (loom skips the wait, so the second pass would only add interleavings.)
    if cfg!(loom) || rendezvous_send || !cases.iter().any(|case| case.waits_on_buffer()) {
        return None;
    }
    // A zero timeout: no wait. Only the select's own deadline is read
    // against the clock: the try pass just found every timer not yet due,
    // and a timer due since ends the wait below by its `wake` anyway (the
    // exact clock read per wait took 2.7% of `select_prodcons_10`'s
    // samples under perf, whose selects all carry a timer case; what is
    // left, 0.9%, is the timers' coarse reads).
    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
        return None;
    }
    let wake = next_wake(cases, deadline);
    let ready = || cases.iter().any(|case| case.looks_ready());
    if !ready() && !spin_until(wake, ready) {
        return None;
    }
    rng::shuffled(order);
    try_pass(cases, order, true)
}

/// Finds the cases that would meet each other on a rendezvous channel: the
/// first receive and the first send case on a channel, in the select's
/// random `order`, are paired, further cases on the same side shadowed.
/// Random, not source order: when the select waits, the one case that
/// registers for its side of the channel is the one a partner completes, so
/// in source order the first of several duplicate cases would win every
/// time (crossbeam-channel's `fairness_duplicates` on a rendezvous channel).
/// Quadratic in the rendezvous cases, once per blocking select.
fn find_meetings(cases: &mut [&mut (dyn Case + '_)], order: &[usize]) {
    for case in cases.iter_mut() {
        case.forget_meetings(TOKEN);
    }
    for (pos, &i) in order.iter().enumerate() {
        let Some(key) = cases[i].key().filter(|k| k.rendezvous) else {
            continue;
        };
        if order[..pos].iter().any(|&j| cases[j].key() == Some(key)) {
            cases[i].shadow(TOKEN);
            continue;
        }
        if key.send {
            continue; // pairs are made from the receive side
        }
        let send = CaseKey { send: true, ..key };
        if let Some(&j) = order.iter().find(|&&j| cases[j].key() == Some(send)) {
            let slot = cases[j].pair_slot(TOKEN);
            cases[i].pair_with(j, slot, TOKEN);
        }
    }
}

/// Registers every case; on a case that completes during registration,
/// withdraws the rest and returns it.
fn register_all(
    cases: &mut [&mut (dyn Case + '_)],
    order: &[usize],
    waiter: &Waiter,
) -> Option<usize> {
    // Partners this thread meets registering may wait for our registration
    // to end only if they rank above us (see `waiter`).
    let _registering = waiter.registering_here();
    let mut again = false;
    loop {
        for &index in order {
            // After a lost round, only the cases a partner skipped.
            if again && !cases[index].drop_lost(TOKEN) {
                continue;
            }
            let registrar = Registrar { waiter, index };
            let done = match cases[index].register(&registrar) {
                Registered::Pending => {
                    waiter.note_progress();
                    continue;
                }
                Registered::Done => index,
                Registered::Partner { index, closed } => {
                    cases[index].complete(closed, TOKEN);
                    index
                }
            };
            waiter.decide_own(done, false);
            for case in cases.iter_mut() {
                case.release(None, TOKEN);
            }
            return Some(done);
        }
        if waiter.finish_registration() {
            return None;
        }
        again = true;
    }
}

/// Finishes the case a partner or closer decided, after withdrawing the
/// other entries.
fn finish(cases: &mut [&mut (dyn Case + '_)], index: usize, closed: bool) -> usize {
    for case in cases.iter_mut() {
        case.release(Some(index), TOKEN);
    }
    cases[index].complete(closed, TOKEN);
    index
}
