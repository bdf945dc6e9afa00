//! Channels of zero-sized messages: a count, and lists of the blocked.
//!
//! A zero-sized message carries no data, and any two are indistinguishable,
//! so a buffered one needs no cell: `bounded::<()>(n)` (a semaphore, Go's
//! `chan struct{}`) and `unbounded::<()>()` are one word, the number of
//! messages buffered, with the closed flag beside it. A send adds one by
//! CAS, a receive takes one: one cache line per operation, where the cell
//! channel touches four (the permit count, its own index counter, the cell,
//! and the other side's counter) and pins the epoch on both sides. Measured
//! on Go's `chan_sem` shape (each thread sends, then receives; ns per
//! message, kanal in the same process): 1 thread 55 through cells, 18 now
//! (kanal 16); 2 threads 260, 43-71 now (kanal 17-21). With the one-CAS
//! attempt of each side inlined into the channel's send and receive (it was
//! behind two calls, whose frames cost more than the CAS), the same shape
//! went from 1.34-1.90x kanal's time to 0.98-1.19x at 1 to 16 threads
//! (medians of 3 alternating runs, 5.2-5.9 ns per send and receive).
//! Rendezvous channels of zero-sized messages stay on cells: there each send
//! must meet a receive.
//!
//! Blocked operations (a receive on an empty channel, a send on a full
//! one) wait in a list behind a mutex, taken only off the fast path. A
//! waiter sets `WAITERS` in the word in the same CAS that checks it must
//! wait, under the lock: from then on every operation takes the slow path
//! (its fast-path CAS requires the flag clear) and meets the lock, so none
//! can slip past a waiter. The slow path serves waiters first: a send hands
//! its message straight to a waiting receiver; a receive takes a buffered
//! message and lets a waiting sender's message take its place (the count
//! does not move). The flag is cleared, under the lock, once both lists
//! are empty: by the CAS that moves the count, by a waiter that gives up
//! last (`unlist`), and by `close`.
//!
//! A waiter is the one-shot [`Waiter`] of the cell channel, registered
//! through an [`Entry`]; the server decides it by CAS while holding the lock,
//! so the entry is alive (its owner removes it under the same lock before it
//! may return), and wakes it after unlocking (a decided owner waits for the
//! wake before it returns). A select registers the same way; a server that
//! meets it still registering drops its entry and marks it `LOST`, as on a
//! cell, and the select registers the case again.
//!
//! Closing sets `CLOSED` in the word and then fails every waiter: a waiting
//! receiver means the count is zero, and a waiting sender's message goes back
//! to it. No send succeeds after the close: later sends fail in their own
//! CAS, and a receive that finds the flag set gives the place it frees to no
//! listed sender (the closer fails those once it has the lock). Receives
//! drain what is buffered, then see `Closed`.

use crate::cell::{self, Registration, Word};
use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::loom::sync::Mutex;
use crate::loom::{CachePadded, RaceBackoff};
use crate::segment_chan::{Mode, RecvStop, NOT_OWN};
use crate::waiter::{close_listed, decision, Entry, Outcome, Parked, Waiter};
use crate::Fail;
use std::collections::VecDeque;
use std::time::Instant;

/// The closed flag.
const CLOSED: u64 = 1 << 63;
/// Someone may be in a wait list: every operation takes the slow path.
const WAITERS: u64 = 1 << 62;
/// The buffered count's bits.
const COUNT: u64 = WAITERS - 1;

/// The largest capacity: an unbounded channel of zero-sized messages holds at
/// most 2^62 - 1 of them (a send beyond that waits, like a bounded one).
pub(crate) const UNBOUNDED: u64 = COUNT;

/// Entries of blocked operations, by side.
#[derive(Default)]
struct Lists {
    receivers: VecDeque<*const Entry>,
    senders: VecDeque<*const Entry>,
}

impl Lists {
    fn side(&mut self, sender: bool) -> &mut VecDeque<*const Entry> {
        if sender {
            &mut self.senders
        } else {
            &mut self.receivers
        }
    }

    fn is_empty(&self) -> bool {
        self.receivers.is_empty() && self.senders.is_empty()
    }
}

// SAFETY: the entries are only dereferenced under the mutex, while their
// owners cannot return (see the module docs).
unsafe impl Send for Lists {}

/// How an operation moved its message.
pub(crate) enum Moved<'a> {
    /// Through the count: a send forgets its message, a receive makes one.
    Counted,
    /// Straight to or from the waiter that owns `slot`
    /// (`*mut MaybeUninit<T>`): the caller moves the value, then wakes it.
    Handed { waiter: &'a Waiter, slot: *mut () },
}

pub(crate) struct Counting {
    /// Buffered messages, `WAITERS`, `CLOSED`.
    state: CachePadded<AtomicU64>,
    cap: u64,
    lists: Mutex<Lists>,
}

impl Counting {
    pub(crate) fn new(cap: u64) -> Self {
        Counting {
            state: CachePadded::new(AtomicU64::new(0)),
            cap: cap.min(UNBOUNDED),
            lists: Mutex::new(Lists::default()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        (self.state.load(Ordering::SeqCst) & COUNT) as usize
    }

    pub(crate) fn is_full(&self) -> bool {
        self.state.load(Ordering::SeqCst) & COUNT == self.cap
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED != 0
    }

    /// One attempt at the uncontended send: the count moves up by one CAS
    /// when nobody waits and there is room. `false`: take [`Counting::send`]
    /// (full, closed, waiters listed, or the CAS lost a race). Kept apart so
    /// the channel can inline it before its large out-of-line send: the call
    /// and its frame were half of a send on a semaphore.
    #[inline(always)]
    pub(crate) fn send_fast(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & (CLOSED | WAITERS) == 0 && s & COUNT != self.cap && self.moved_by_cas(s, s + 1)
    }

    /// The mirror of [`Counting::send_fast`]: takes one buffered message by
    /// one CAS when nobody waits. `false`: take [`Counting::recv`].
    #[inline(always)]
    pub(crate) fn recv_fast(&self) -> bool {
        let s = self.state.load(Ordering::Acquire);
        // (Closed or not: what is buffered is still received.)
        s & WAITERS == 0 && s & COUNT != 0 && self.moved_by_cas(s, s - 1)
    }

    /// The fast paths' CAS (AcqRel: as in `send`). A lost race waits as the
    /// loops in `send` and `recv` do before their next attempt, so the
    /// fallback's first CAS does not follow ours at once onto a contended
    /// line.
    #[inline(always)]
    fn moved_by_cas(&self, from: u64, to: u64) -> bool {
        match self
            .state
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(_) => {
                RaceBackoff::new().lost();
                false
            }
        }
    }

    /// Adds one message, or hands it to a waiting receiver.
    #[inline]
    pub(crate) fn send(&self, mode: Mode<'_>) -> Result<Moved<'_>, RecvStop> {
        let mut s = self.state.load(Ordering::Relaxed);
        let mut backoff = RaceBackoff::new();
        loop {
            if s & CLOSED != 0 {
                return Err(RecvStop::Fail(Fail::Closed));
            }
            if s & COUNT == self.cap {
                if let Mode::Try = mode {
                    // Full, decided from one load, even with waiters listed:
                    // a full channel has no waiting receiver to serve
                    // (receivers wait only while the count is zero, and
                    // while any is listed the count moves only under the
                    // lock, by a send that serves them first).
                    return Err(RecvStop::Fail(Fail::WouldBlock));
                }
                return self.send_slow(mode);
            }
            if s & WAITERS != 0 {
                return self.send_slow(mode);
            }
            // Release: the sender's work before the send happens before
            // the receive that takes a message. Acquire: and a receive's
            // before our send (the channel as a semaphore orders both ways).
            match self
                .state
                .compare_exchange(s, s + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Ok(Moved::Counted),
                Err(now) => {
                    backoff.lost();
                    s = now;
                }
            }
        }
    }

    /// Takes one message, with the place it leaves going to a waiting
    /// sender's message.
    #[inline]
    pub(crate) fn recv(&self, mode: Mode<'_>) -> Result<Moved<'_>, RecvStop> {
        let mut s = self.state.load(Ordering::Acquire);
        let mut backoff = RaceBackoff::new();
        loop {
            if s & COUNT == 0 {
                // Empty, decided from one load: the closed flag sits in the
                // same word, so "empty" and "closed" are seen at one
                // instant, and a message sent before the close is counted.
                // Waiters listed change nothing: an empty channel has no
                // waiting sender (the mirror of `send`'s full case).
                if s & CLOSED != 0 {
                    return Err(RecvStop::Fail(Fail::Closed));
                }
                if let Mode::Try = mode {
                    return Err(RecvStop::Fail(Fail::WouldBlock));
                }
                return self.recv_slow(mode);
            }
            if s & WAITERS != 0 {
                return self.recv_slow(mode);
            }
            // AcqRel: as in `send`.
            match self
                .state
                .compare_exchange(s, s - 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Moved::Counted),
                Err(now) => {
                    backoff.lost();
                    s = now;
                }
            }
        }
    }

    #[cold]
    fn send_slow(&self, mode: Mode<'_>) -> Result<Moved<'_>, RecvStop> {
        let mut lists = self.lists.lock().unwrap();
        loop {
            // (Under the lock nobody else moves the flag or serves the
            // lists; fast-path operations may still move the count while
            // the flag is clear.)
            let s = self.state.load(Ordering::Acquire);
            if s & CLOSED != 0 {
                return Err(RecvStop::Fail(Fail::Closed));
            }
            if let Some(handed) = Self::serve(&mut lists.receivers) {
                self.settle(&lists, s);
                return Ok(handed);
            }
            if s & COUNT < self.cap {
                if self.step(&lists, s, true) {
                    return Ok(Moved::Counted);
                }
                continue;
            }
            if let Some(stop) = self.list(&mut lists, s, true, mode) {
                return Err(stop);
            }
        }
    }

    #[cold]
    fn recv_slow(&self, mode: Mode<'_>) -> Result<Moved<'_>, RecvStop> {
        let mut lists = self.lists.lock().unwrap();
        loop {
            let s = self.state.load(Ordering::Acquire);
            if s & COUNT > 0 {
                // A waiting sender's message takes the place of the one we
                // take: the count stays. Not once closed: the send would
                // then complete after the close (the closer, on its way to
                // the lock, fails the listed senders and hands their
                // messages back); we take ours from the count.
                if s & CLOSED == 0 {
                    if let Some(handed) = Self::serve(&mut lists.senders) {
                        self.settle(&lists, s);
                        return Ok(handed);
                    }
                }
                if self.step(&lists, s, false) {
                    return Ok(Moved::Counted);
                }
                continue;
            }
            if s & CLOSED != 0 {
                return Err(RecvStop::Fail(Fail::Closed));
            }
            if let Some(stop) = self.list(&mut lists, s, false, mode) {
                return Err(stop);
            }
        }
    }

    /// Decides the first waiter of `list` that can still be decided,
    /// dropping those that cannot (timed out, or a select registering,
    /// which learns it was passed over: `LOST`).
    fn serve<'a>(list: &mut VecDeque<*const Entry>) -> Option<Moved<'a>> {
        while let Some(entry) = list.pop_front() {
            // SAFETY: listed entries are alive while we hold the lock: an
            // owner removes its entry under the lock before returning, and
            // one that is decided waits for our wake.
            let entry = unsafe { &*entry };
            // SAFETY: as above, the waiter outlives its entry.
            let waiter: &'a Waiter = unsafe { &*entry.waiter };
            // (Under the lock: no waiting for a registering select.)
            if waiter.try_decide(decision(entry.case, false), false) {
                return Some(Moved::Handed {
                    waiter,
                    slot: entry.slot,
                });
            }
        }
        None
    }

    /// Under the lock, with no waiter left to serve: moves the count from
    /// `s` up one (a send) or down one, clearing `WAITERS` if the lists are
    /// empty. `false`: the state moved (a fast-path operation or a close
    /// came first); look again.
    fn step(&self, lists: &Lists, s: u64, up: bool) -> bool {
        let kept = if lists.is_empty() { s & !WAITERS } else { s };
        let next = if up { kept + 1 } else { kept - 1 };
        // AcqRel: as in `send`.
        self.state
            .compare_exchange(s, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// After a hand-off (the count unchanged): clears `WAITERS` if the
    /// lists are now empty.
    fn settle(&self, lists: &Lists, mut s: u64) {
        if !lists.is_empty() {
            return;
        }
        // A CAS loop: fast-path operations cannot run while the flag is
        // set, but a close can.
        while let Err(now) =
            self.state
                .compare_exchange(s, s & !WAITERS, Ordering::Relaxed, Ordering::Relaxed)
        {
            s = now;
        }
    }

    /// The operation must wait (`sender`: a send on a full channel, else a
    /// receive on an empty one), the state being `s`: in `Mode::Register`,
    /// sets `WAITERS` by CAS from `s` and lists the entry. `None`: the state
    /// moved; look again.
    fn list(&self, lists: &mut Lists, s: u64, sender: bool, mode: Mode<'_>) -> Option<RecvStop> {
        let Mode::Register { entry, .. } = mode else {
            // `Park` is `Counting::wait`, which registers.
            return Some(RecvStop::Fail(Fail::WouldBlock));
        };
        if s & WAITERS == 0
            && self
                .state
                .compare_exchange(s, s | WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        lists.side(sender).push_back(entry);
        // SAFETY: the lists live as long as `self`, which the registrant's
        // channel handle keeps alive while the registration exists.
        Some(RecvStop::Registered(unsafe {
            Registration::listed(
                self as *const Self as *const (),
                cell::entry_word(entry, sender),
                listed_ops,
            )
        }))
    }

    /// Blocks until the operation (`sender`, or a receive) completes, the
    /// channel closes, or `deadline` passes. `slot` is the caller's value
    /// (a send) or where one goes (a receive). `Ok(None)`: a partner moved
    /// the value through `slot`; `Ok(Some(moved))`: the caller moves it.
    pub(crate) fn wait(
        &self,
        sender: bool,
        slot: *mut (),
        deadline: Option<Instant>,
    ) -> Result<Option<Moved<'_>>, Fail> {
        // (Entry and waiter in one line: see `Parked`.)
        let mut parked = Parked::<()>::new();
        let entry = parked.entry_with_slot(slot);
        let waiter = entry.waiter();
        let mode = Mode::Register {
            entry,
            own: NOT_OWN,
        };
        let done = if sender {
            self.send_slow(mode)
        } else {
            self.recv_slow(mode)
        };
        let reg = match done {
            Ok(moved) => return Ok(Some(moved)),
            Err(RecvStop::Fail(fail)) => return Err(fail),
            Err(RecvStop::Registered(reg)) => reg,
            Err(RecvStop::SelfMet) => unreachable!("no duplexes here"),
        };
        match waiter.wait(deadline) {
            Outcome::Selected(_) => {
                reg.complete();
                Ok(None)
            }
            Outcome::Closed(_) => {
                reg.complete();
                Err(Fail::Closed)
            }
            Outcome::TimedOut => {
                reg.cancel();
                Err(Fail::Timeout)
            }
        }
    }

    /// Closes: later sends fail, and every waiter is failed (a waiting
    /// receiver means nothing is buffered; a waiting sender keeps its
    /// message). Returns whether this call closed it.
    pub(crate) fn close(&self) -> bool {
        // SeqCst, as the cell channel's close: it is ordered with every
        // operation's read-modify-write on the word.
        if self.state.fetch_or(CLOSED, Ordering::SeqCst) & CLOSED != 0 {
            return false;
        }
        let mut lists = self.lists.lock().unwrap();
        for sender in [false, true] {
            for entry in lists.side(sender).drain(..) {
                // SAFETY: listed, and we hold the lock (as in `serve`).
                unsafe { close_listed(entry) };
            }
        }
        let s = self.state.load(Ordering::Relaxed);
        self.settle(&lists, s);
        true
    }

    /// Whether `word` (an entry and its side) is still listed.
    fn is_listed(&self, word: Word) -> bool {
        let (entry, sender) = split(word);
        let mut lists = self.lists.lock().unwrap();
        lists.side(sender).contains(&entry)
    }

    /// Takes `word`'s entry out of its list, if it is still there, and
    /// clears `WAITERS` if that was the last one: a waiter that gave up
    /// (a timeout, a select case not chosen) left the flag set, and every
    /// operation took the lock until one moved the count through it (a
    /// `recv_timeout` poll on an idle semaphore did so each time; found
    /// in review).
    fn unlist(&self, word: Word) {
        let (entry, sender) = split(word);
        let mut lists = self.lists.lock().unwrap();
        let list = lists.side(sender);
        if let Some(at) = list.iter().position(|&e| e == entry) {
            list.remove(at);
            let s = self.state.load(Ordering::Relaxed);
            self.settle(&lists, s);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A waiter that gives up leaves the fast paths open again.
    #[test]
    fn a_waiter_that_gives_up_clears_the_waiters_flag() {
        let count = Counting::new(1);
        let past = Some(Instant::now() - Duration::from_millis(1));
        let mut unit = ();
        let slot = &mut unit as *mut ();
        assert_eq!(count.wait(false, slot, past).err(), Some(Fail::Timeout));
        assert_eq!(count.state.load(Ordering::Relaxed) & WAITERS, 0);
        assert!(count.send_fast(), "an uncontended send takes the fast path");
        assert_eq!(count.wait(true, slot, past).err(), Some(Fail::Timeout));
        assert_eq!(count.state.load(Ordering::Relaxed) & WAITERS, 0);
    }
}

/// The entry and side of a listed entry's word (see `cell::entry_word`).
fn split(word: Word) -> (*const Entry, bool) {
    (cell::entry_ptr(word), word.addr() & cell::SENDER_TAG != 0)
}

/// What a listed [`Registration`] calls back (see `Registration::listed`).
///
/// # Safety
/// `owner` is the live `Counting` whose list `word`'s entry went into.
unsafe fn listed_ops(owner: *const (), word: Word, remove: bool) -> bool {
    // SAFETY: `owner` is the `Counting` that listed the entry, alive while
    // the registration is (see `Counting::list`).
    let counting = unsafe { &*(owner as *const Counting) };
    if remove {
        counting.unlist(word);
        false
    } else {
        counting.is_listed(word)
    }
}
