//! The two kinds of case: a receive and a send, each holding its channel,
//! the slot its value moves through, its registrations and its result.
//!
//! A case lives in the select's frame (`select!`) or in a box (`Select`) and
//! does not move while the select runs, so its entries and slot can be
//! published in cells.

use super::{sealed, Case, CaseKey, Registered, Registrar, Token};
use crate::cell::{Duplex, Registration};
use crate::channel::{Flavor, Receiver, Sender};
use crate::error::{RecvError, SendError};
use crate::segment_chan::{Mode, PairRegs, PairStop, RecvStop, SendStop, NOT_OWN};
use crate::waiter::Entry;
use crate::Fail;
use std::mem::{self, MaybeUninit};
use std::ptr;
use std::time::Instant;

/// Why a send case cannot take part in a select.
const SPENT: &str = "select: this send case's value was already sent (a case is for one select)";

/// How far a case got. Its value, if any, stays in the case's slot until
/// `into_result` moves it out: a result kept beside the slot would be a
/// second `T` in the select's frame (a select over 64 KiB messages needed
/// 394 KiB of stack to receive, 263 to send; now as much as a plain
/// receive or send).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    /// Not completed (or its result was taken).
    Pending,
    /// Received: the message is in the slot. Sent: the slot is empty.
    Done,
    /// The channel is closed. A send case's value is still in its slot.
    Closed,
}

fn blank_entry() -> Entry {
    Entry {
        waiter: ptr::null(),
        case: 0,
        slot: ptr::null_mut(),
    }
}

/// A receive case of a select. Not part of the API (for `select!`).
#[doc(hidden)]
pub struct RecvCase<'a, T> {
    rx: &'a Receiver<T>,
    /// Where a partner puts the message, and where any message stays until
    /// `into_result` (`finish` says whether it holds one).
    slot: MaybeUninit<T>,
    /// Our entry (`0`), and a paired send case's (`1`).
    entries: Duplex,
    /// The send case on the same rendezvous channel, if any.
    partner: Option<usize>,
    /// Registered through another case on the same side.
    shadowed: bool,
    regs: PairRegs,
    finish: Finish,
}

impl<'a, T> RecvCase<'a, T> {
    /// A case receiving from `rx`.
    pub fn new(rx: &'a Receiver<T>) -> Self {
        RecvCase {
            rx,
            slot: MaybeUninit::uninit(),
            entries: Duplex([blank_entry(), blank_entry()]),
            partner: None,
            shadowed: false,
            regs: PairRegs::default(),
            finish: Finish::Pending,
        }
    }

    /// The result of the completed case, taken out in place: the case is
    /// left empty (its drop then does nothing). By reference, not by value:
    /// passed by value, the ~420-byte case was copied for the call (a
    /// `memcpy`, an eighth of a two-case select that found its message).
    ///
    /// # Panics
    /// If the case did not complete (the select chose another).
    pub fn take_result(&mut self) -> Result<T, RecvError> {
        match mem::replace(&mut self.finish, Finish::Pending) {
            // SAFETY: `Done`: the slot holds the message (written by
            // `received` or by the partner that decided us), and `finish`
            // is `Pending` now, so it is moved out once.
            Finish::Done => Ok(unsafe { self.slot.assume_init_read() }),
            Finish::Closed => Err(RecvError),
            Finish::Pending => panic!("select: the chosen case has no result (a bug in scalechan)"),
        }
    }

    /// Keeps a message the case received itself.
    fn received(&mut self, msg: T) {
        debug_assert_eq!(self.finish, Finish::Pending);
        // No partner writes the slot meanwhile: only one that decided the
        // select does, and a select that completes a case itself is not
        // decided by anyone else (it is trying or registering).
        self.slot.write(msg);
        self.finish = Finish::Done;
    }

    /// Our duplex left its cell: the channel stops counting it.
    fn duplex_left(&self) {
        if let Flavor::Chan(shared) = self.rx.flavor() {
            shared.chan.duplex_left();
        }
    }

    fn is_registered(&self) -> bool {
        self.regs.duplex.is_some() || self.regs.recv.is_some() || self.regs.send.is_some()
    }
}

impl<T> sealed::Sealed for RecvCase<'_, T> {}

impl<T> Case for RecvCase<'_, T> {
    fn try_complete(&mut self, waits: bool, _: Token) -> bool {
        if self.finish != Finish::Pending {
            // Completed in an earlier select (code that runs the cases
            // itself) and its result not taken: still complete, and its
            // message is not overwritten.
            return true;
        }
        let got = match self.rx.flavor() {
            // Straight into the slot: a large message is not copied twice.
            // SAFETY (both): the slot is ours to write: no partner writes
            // it while the select is trying its cases (none is registered).
            Flavor::Chan(shared) if waits => {
                unsafe { shared.chan.try_recv_at_cursor_first(self.slot.as_mut_ptr()) }
                    .map_err(RecvStop::unregistered)
            }
            Flavor::Chan(shared) => {
                unsafe { shared.chan.recv_to(Mode::Try, self.slot.as_mut_ptr()) }
                    .map_err(RecvStop::unregistered)
            }
            Flavor::Timer(timer, convert) => timer.try_recv().map(|at| {
                self.slot.write(convert(at));
            }),
        };
        match got {
            Ok(()) => self.finish = Finish::Done,
            Err(Fail::Closed) => self.finish = Finish::Closed,
            Err(_) => return false,
        }
        true
    }

    fn key(&self) -> Option<CaseKey> {
        match self.rx.flavor() {
            Flavor::Chan(shared) => Some(CaseKey {
                channel: &shared.chan as *const _ as usize,
                send: false,
                rendezvous: shared.chan.capacity() == Some(0),
            }),
            Flavor::Timer(..) => None,
        }
    }

    fn shadow(&mut self, _: Token) {
        self.shadowed = true;
    }

    fn forget_meetings(&mut self, _: Token) {
        self.shadowed = false;
        self.partner = None;
        self.entries.0[1] = blank_entry();
    }

    fn pair_with(&mut self, index: usize, slot: *mut (), _: Token) {
        self.partner = Some(index);
        self.entries.0[1].case = index;
        self.entries.0[1].slot = slot;
    }

    fn pair_slot(&mut self, _: Token) -> *mut () {
        unreachable!("only send cases pair through their slot")
    }

    fn register(&mut self, registrar: &Registrar<'_>) -> Registered {
        let shared = match self.rx.flavor() {
            Flavor::Chan(shared) => shared,
            // A timer is waited for by its delivery time; listed only so
            // that its close wakes the select.
            Flavor::Timer(timer, _) => {
                if self.regs.recv.is_some() {
                    return Registered::Pending;
                }
                self.entries.0[0] = Entry {
                    waiter: registrar.waiter,
                    case: registrar.index,
                    slot: ptr::null_mut(),
                };
                return match timer.register(&self.entries.0[0]) {
                    Some(reg) => {
                        self.regs.recv = Some(reg);
                        Registered::Pending
                    }
                    None => {
                        self.finish = Finish::Closed;
                        Registered::Done
                    }
                };
            }
        };
        if self.shadowed {
            return Registered::Pending;
        }
        let chan = &shared.chan;
        if !self.is_registered() {
            // Nothing of ours is published: the entries may be rewritten.
            self.entries.0[0] = Entry {
                waiter: registrar.waiter,
                case: registrar.index,
                slot: self.slot.as_mut_ptr() as *mut (),
            };
            self.entries.0[1].waiter = registrar.waiter;
        }
        if let Some(partner) = self.partner {
            return match chan.register_pair(&self.entries, &mut self.regs) {
                PairStop::Registered => Registered::Pending,
                PairStop::Received(got) => {
                    match got {
                        Ok(msg) => self.received(msg),
                        Err(_) => self.finish = Finish::Closed,
                    }
                    Registered::Done
                }
                PairStop::Sent(sent) => Registered::Partner {
                    index: partner,
                    closed: sent.is_err(),
                },
            };
        }
        let mode = Mode::Register {
            entry: &self.entries.0[0],
            own: NOT_OWN,
        };
        // SAFETY: the slot is ours to write: no partner decides a select
        // while it registers, and only one that decided it writes the slot.
        match unsafe { chan.recv_to(mode, self.slot.as_mut_ptr()) } {
            Ok(()) => self.finish = Finish::Done,
            Err(RecvStop::Fail(_)) => self.finish = Finish::Closed,
            Err(RecvStop::Registered(reg)) => {
                self.regs.recv = Some(reg);
                return Registered::Pending;
            }
            Err(RecvStop::SelfMet) => unreachable!("an unpaired case has no own entry"),
        }
        Registered::Done
    }

    fn drop_lost(&mut self, _: Token) -> bool {
        let mut lost = false;
        if let Some(dead) = self.regs.duplex.take_if(|r| !r.is_live()) {
            dead.cancel();
            self.duplex_left();
            lost = true;
        }
        for reg in [&mut self.regs.recv, &mut self.regs.send] {
            if let Some(dead) = reg.take_if(|r| !r.is_live()) {
                dead.cancel();
                lost = true;
            }
        }
        lost
    }

    fn release(&mut self, decided: Option<usize>, _: Token) {
        // (Only read when registered: then the entries are written.)
        let mine = decided == Some(self.entries.0[0].case);
        let partners = decided.is_some() && decided == self.partner;
        let regs = std::mem::take(&mut self.regs);
        if let Some(reg) = regs.duplex {
            if mine || partners {
                reg.complete();
            } else {
                reg.cancel();
            }
            self.duplex_left();
        }
        if let Some(reg) = regs.recv {
            if mine {
                reg.complete();
            } else {
                reg.cancel();
            }
        }
        if let Some(reg) = regs.send {
            if partners {
                reg.complete();
            } else {
                reg.cancel();
            }
        }
    }

    fn complete(&mut self, closed: bool, _: Token) {
        debug_assert!(
            closed || matches!(self.rx.flavor(), Flavor::Chan(_)),
            "timers are only decided by their close"
        );
        // Not closed: the partner that decided this case wrote the slot
        // before finishing, and `Waiter::wait` saw it finish (Acquire).
        // (It also returned the permit of a bounded channel.)
        self.finish = if closed { Finish::Closed } else { Finish::Done };
    }

    fn next_delivery(&self) -> Option<Instant> {
        match self.rx.flavor() {
            Flavor::Timer(timer, _) => timer.next_delivery(),
            Flavor::Chan(_) => None,
        }
    }

    fn looks_ready(&self) -> bool {
        match self.rx.flavor() {
            Flavor::Chan(shared) => shared.chan.looks_ready(false),
            Flavor::Timer(..) => false,
        }
    }
    fn waits_on_buffer(&self) -> bool {
        match self.rx.flavor() {
            Flavor::Chan(shared) => shared.chan.capacity() != Some(0),
            Flavor::Timer(..) => false,
        }
    }
}

/// A send case of a select. Not part of the API (for `select!`).
#[doc(hidden)]
pub struct SendCase<'a, T> {
    tx: &'a Sender<T>,
    /// The value, until it is sent or handed back.
    slot: MaybeUninit<T>,
    full: bool,
    entry: Entry,
    /// Registered through the paired receive case.
    paired: bool,
    /// Registered through another case on the same side.
    shadowed: bool,
    reg: Option<Registration>,
    finish: Finish,
}

impl<'a, T> SendCase<'a, T> {
    /// A case sending `msg` on `tx`.
    pub fn new(tx: &'a Sender<T>, msg: T) -> Self {
        SendCase {
            tx,
            slot: MaybeUninit::new(msg),
            full: true,
            entry: blank_entry(),
            paired: false,
            shadowed: false,
            reg: None,
            finish: Finish::Pending,
        }
    }

    /// The result of the completed case, taken out in place (see
    /// [`RecvCase::take_result`]).
    ///
    /// # Panics
    /// If the case did not complete (the select chose another).
    pub fn take_result(&mut self) -> Result<(), SendError<T>> {
        match mem::replace(&mut self.finish, Finish::Pending) {
            Finish::Done => Ok(()),
            Finish::Closed => Err(SendError(self.take())),
            Finish::Pending => panic!("select: the chosen case has no result (a bug in scalechan)"),
        }
    }

    /// The value went to the channel.
    fn sent(&mut self) {
        self.full = false;
        self.finish = Finish::Done;
    }

    fn take(&mut self) -> T {
        assert!(self.full, "{SPENT}");
        self.full = false;
        // SAFETY: `full`: the slot holds our value, and nobody else may
        // take it (no partner decided this case).
        unsafe { self.slot.assume_init_read() }
    }
}

impl<T> sealed::Sealed for SendCase<'_, T> {}

impl<T> Case for SendCase<'_, T> {
    fn try_complete(&mut self, _waits: bool, _: Token) -> bool {
        // Every select tries every case before it does anything else with
        // one: a case whose value is gone (sent in an earlier select, by
        // code that reused the case) goes no further.
        assert!(self.full, "{SPENT}");
        // SAFETY: `full`: the slot holds our value, which a failed send
        // leaves there; `Mode::Try` never registers.
        match unsafe { self.tx.chan().send_from(self.slot.as_mut_ptr(), Mode::Try) } {
            Ok(()) => self.sent(),
            // The value stays in the slot until `into_result`.
            Err(SendStop::Fail(Fail::Closed)) => self.finish = Finish::Closed,
            Err(_) => return false,
        }
        true
    }

    fn key(&self) -> Option<CaseKey> {
        let chan = self.tx.chan();
        Some(CaseKey {
            channel: chan as *const _ as usize,
            send: true,
            rendezvous: chan.capacity() == Some(0),
        })
    }

    fn shadow(&mut self, _: Token) {
        self.shadowed = true;
    }

    fn forget_meetings(&mut self, _: Token) {
        self.shadowed = false;
        self.paired = false;
    }

    fn pair_with(&mut self, _: usize, _: *mut (), _: Token) {
        unreachable!("pairs are made from the receive side")
    }

    fn pair_slot(&mut self, _: Token) -> *mut () {
        self.paired = true;
        self.slot.as_mut_ptr() as *mut ()
    }

    fn register(&mut self, registrar: &Registrar<'_>) -> Registered {
        if self.paired || self.shadowed {
            return Registered::Pending;
        }
        self.entry = Entry {
            waiter: registrar.waiter,
            case: registrar.index,
            slot: self.slot.as_mut_ptr() as *mut (),
        };
        debug_assert!(self.full);
        let mode = Mode::Register {
            entry: &self.entry,
            own: NOT_OWN,
        };
        // SAFETY: `full`: the slot (the entry's) holds our value, which
        // stays there unless the send succeeds or registers.
        match unsafe { self.tx.chan().send_from(self.entry.slot as *mut T, mode) } {
            Ok(()) => self.sent(),
            Err(SendStop::Fail(_)) => self.finish = Finish::Closed,
            Err(SendStop::Registered(reg)) => {
                // The value waits in our slot (`full` stays set).
                self.reg = Some(reg);
                return Registered::Pending;
            }
            Err(SendStop::SelfMet) => unreachable!("an unpaired case has no own entry"),
        }
        Registered::Done
    }

    fn drop_lost(&mut self, _: Token) -> bool {
        match self.reg.take_if(|r| !r.is_live()) {
            Some(dead) => {
                dead.cancel();
                true
            }
            None => false,
        }
    }

    fn release(&mut self, decided: Option<usize>, _: Token) {
        if let Some(reg) = self.reg.take() {
            if decided == Some(self.entry.case) {
                reg.complete();
            } else {
                reg.cancel();
            }
        }
    }

    fn complete(&mut self, closed: bool, _: Token) {
        let chan = self.tx.chan();
        if closed {
            self.finish = Finish::Closed;
        } else if chan.takes_from_slot() {
            // The receiver took the value out of our slot.
            self.sent();
        } else {
            // A bounded channel handed us a permit: deposit the value.
            debug_assert!(self.full);
            // SAFETY: `full`: the slot holds our value, which a failed
            // deposit leaves there.
            match unsafe { chan.send_permitted(self.slot.as_mut_ptr()) } {
                Ok(()) => self.sent(),
                Err(_) => self.finish = Finish::Closed,
            }
        }
    }

    fn next_delivery(&self) -> Option<Instant> {
        None
    }

    fn looks_ready(&self) -> bool {
        self.tx.chan().looks_ready(true)
    }
    fn waits_on_buffer(&self) -> bool {
        self.tx.chan().capacity() != Some(0)
    }
}

impl<T> Drop for SendCase<'_, T> {
    fn drop(&mut self) {
        debug_assert!(self.reg.is_none(), "a send case dropped while registered");
        if self.full {
            // A case that was not chosen: its value is dropped, never sent.
            // SAFETY: `full`: the value is ours.
            unsafe { self.slot.assume_init_drop() };
        }
    }
}

impl<T> Drop for RecvCase<'_, T> {
    fn drop(&mut self) {
        debug_assert!(
            !self.is_registered(),
            "a receive case dropped while registered"
        );
        if self.finish == Finish::Done {
            // A received message nobody took (a panic between the select
            // and its handler): dropped, not leaked.
            // SAFETY: `Done`: the slot holds the message, ours alone.
            unsafe { self.slot.assume_init_drop() };
        }
    }
}

impl<T> std::fmt::Debug for RecvCase<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvCase")
            .field("rx", self.rx)
            .field("finish", &self.finish)
            .finish()
    }
}

impl<T> std::fmt::Debug for SendCase<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendCase")
            .field("tx", self.tx)
            .field("finish", &self.finish)
            .finish()
    }
}
