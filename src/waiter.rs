//! One-shot waiters: what a blocked operation leaves in a cell.
//!
//! A [`Waiter`] is owned by a blocked thread (on its stack). It is published
//! in a cell through an [`Entry`], which adds the case number and the slot a
//! value moves through, so one waiter can be registered in several cells at
//! once: that is what `select` does.
//!
//! The waiter's `state` is decided once, by CAS: the owner gives up
//! (`ABORTED`: timeout), or a partner or closer decides one of its cases
//! ([`decision`]: the case number, and whether the channel closed). Only the
//! winner may touch the waiter's slots; it then publishes the outcome in
//! `done` and unparks.
//!
//! A select starts in `REGISTERING`: while it publishes its entries one by
//! one, nobody else may decide it, because the select itself may still find
//! a case ready and complete it on the spot. A partner that meets a
//! registering waiter leaves the bit `LOST` in its state and skips the cell,
//! as if the waiter had timed out; the select sees the bit when it tries to
//! move to `WAITING`, and registers the lost cases again (kotlinx.coroutines'
//! select does the same with its re-registration list).
//!
//! Before it skips, a partner waits a moment (a pause-spin of up to 10 us
//! while the registration progresses, `REGISTRATION_WAIT_NANOS`) for the
//! registration to end, and then
//! decides the waiter after all. Two selects that register at once on the
//! same rendezvous channels would otherwise skip each other's cells round
//! after round: measured on 2 cores, a select receiving on three
//! rendezvous channels against a select sending on them made five lost
//! rounds per registration and took ~10 us per message; with a wait of a
//! fraction of a microsecond, ~1.5 us. On 16 cores that wait was too short
//! (a registration there takes microseconds): 190 lost rounds per message.
//! A select that is itself registering (its thread says so in a thread-local while it registers)
//! may only wait for a waiter of higher [`Waiter::rank`] (address), so no
//! two selects wait for each other; a plain operation holds no
//! registration and may wait for any. The wait is bounded because
//! the other select can still be waiting on the cell we hold (`CLAIMED`,
//! while it re-checks its cells after a lost round).
//!
//! A partner that finds an entry pointer in a cell first moves the cell to
//! `CLAIMED` by CAS and only then dereferences the entry; an owner that gives
//! up waits for any `CLAIMED` cell of its own to be released before its stack
//! frame can go away. So an entry is never read after its owner returned.

use crate::loom::park::{Parker, UnparkHandle};
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::SpinLoad;
#[cfg(not(loom))]
use crate::yielding;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::time::Instant;

/// `Waiter::state`: waiting for a partner; any may decide it.
pub(crate) const WAITING: usize = 0;
/// `Waiter::state`: the owner gave up (timeout, or a select that completed
/// another way).
pub(crate) const ABORTED: usize = 1;
/// `Waiter::state`: a select is still publishing its entries; only its owner
/// may decide it.
const REGISTERING: usize = 2;
/// `Waiter::state`: as `REGISTERING`, and a partner skipped one of its cells.
const REGISTERING_LOST: usize = 3;
/// First decided state: `DECIDED + 2 * case + closed`.
const DECIDED: usize = 4;

/// The state word that decides `case`: completed by a partner, or (with
/// `closed`) failed because its channel closed.
#[inline]
pub(crate) const fn decision(case: usize, closed: bool) -> usize {
    DECIDED + (case << 1) + closed as usize
}

/// The rank of a thread not registering a select (a plain operation, or a
/// select's try pass): it holds no registration anybody could be waiting
/// on, so it may wait for any registering select.
const PLAIN: usize = 0;

// The rank of the select this thread is registering (`PLAIN` if none), read
// only by a partner that meets another select registering. A thread-local,
// not a parameter: as a parameter it had to be threaded through every send
// and receive path (`send_buffered` included) for a case that is rare.
#[cfg(not(loom))]
std::thread_local! {
    static MY_RANK: Cell<usize> = const { Cell::new(PLAIN) };
}
#[cfg(loom)]
loom::thread_local! {
    static MY_RANK: Cell<usize> = Cell::new(PLAIN);
}

/// While alive, this thread is registering a select's waiter (see
/// [`Waiter::registering_here`]).
pub(crate) struct RegisteringHere {
    before: usize,
}

impl Drop for RegisteringHere {
    fn drop(&mut self) {
        MY_RANK.with(|rank| rank.set(self.before));
    }
}

/// `Waiter::done`: nobody has finished with the waiter yet; the owner is
/// still spinning.
const PENDING: usize = 0;
/// `Waiter::done`: the decider has finished; the owner may proceed.
const FINISHED: usize = 1;
/// `Waiter::done`: as `PENDING`, and the owner is (about to be) parked, so
/// the decider must unpark it. A waker that finds `PENDING` skips the
/// unpark: ~20 ns and a lock on a parking-table bucket saved on every
/// hand-off to a thread that was still spinning.
const PARKED: usize = 2;

/// A blocked operation's rendezvous point.
#[derive(Debug)]
pub(crate) struct Waiter {
    state: AtomicUsize,
    done: AtomicUsize,
    parker: Parker,
    /// How many entries a registering select has published, plus
    /// `NEW_ROUND` per lost round (wrapping): a delay hint for partners
    /// waiting for its registration to end, so Relaxed and outside loom's
    /// model (under loom nobody waits).
    #[cfg(not(loom))]
    progress: std::sync::atomic::AtomicUsize,
    /// Under loom, the rank: addresses change between the executions loom
    /// replays, and a rank order that changed would change the branches.
    /// Creation order is fixed by the schedule.
    #[cfg(loom)]
    rank: usize,
    /// Under loom, the waiter's memory as loom sees it: every partner or
    /// closer reads it (`touch`) before it lets the owner go, and the
    /// owner's drop writes it, so loom reports any access by another
    /// thread that is not ordered before the owner's frame is reused.
    #[cfg(loom)]
    alive: crate::loom::cell::UnsafeCell<()>,
}

#[cfg(loom)]
impl Drop for Waiter {
    fn drop(&mut self) {
        self.alive.with_mut(|_| ());
    }
}

/// Why a blocked operation woke up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A partner completed entry `case`.
    Selected(usize),
    /// The channel of entry `case` closed.
    Closed(usize),
    /// The deadline passed and the owner withdrew.
    TimedOut,
}

impl Waiter {
    /// A waiter for one blocking operation: decidable at once.
    pub(crate) fn new() -> Self {
        Self::with_state(WAITING)
    }

    /// A waiter for a select, which registers its cases before anybody may
    /// decide it ([`Waiter::finish_registration`]).
    pub(crate) fn registering() -> Self {
        Self::with_state(REGISTERING)
    }

    fn with_state(state: usize) -> Self {
        Waiter {
            state: AtomicUsize::new(state),
            done: AtomicUsize::new(PENDING),
            parker: Parker::new(),
            #[cfg(not(loom))]
            progress: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(loom)]
            rank: {
                // (Not a loom atomic: no model branches on it.)
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            #[cfg(loom)]
            alive: crate::loom::cell::UnsafeCell::new(()),
        }
    }

    /// A partner's or closer's access to this waiter, as loom sees it (see
    /// `alive`). Nothing outside loom.
    #[inline(always)]
    fn touch(&self) {
        #[cfg(loom)]
        self.alive.with(|_| ());
    }

    /// Decides the waiter for a partner or a closer ([`decision`]). On
    /// success the caller must finish with [`Waiter::wake`]. A registering
    /// waiter cannot be decided: the caller skips the cell, and the waiter
    /// learns (`LOST`) that it must register that case again. A `patient`
    /// caller first waits a moment for the registration to end, if its
    /// thread's rank is below the waiter's (see the module docs); closers
    /// and callers holding a lock are not patient.
    #[inline]
    pub(crate) fn try_decide(&self, decision: usize, patient: bool) -> bool {
        self.touch();
        // Acquire: the owner's writes to its slots (a sent value) are
        // visible; the outcome itself is published through `done`.
        match self
            .state
            .compare_exchange(WAITING, decision, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(now) => self.try_decide_from(now, decision, patient),
        }
    }

    /// [`Waiter::try_decide`] once the waiter was found in state `current`,
    /// not `WAITING`: a select registering, or a waiter already decided or
    /// gone. Out of line, off the hand-off path.
    #[cold]
    #[inline(never)]
    fn try_decide_from(&self, mut current: usize, decision: usize, patient: bool) -> bool {
        let mut waited = false;
        loop {
            let next = match current {
                WAITING => decision,
                // Not once it is marked LOST: its owner must then re-check
                // its cells, the one we hold among them, before it can
                // finish registering, so waiting only delays it.
                REGISTERING if patient && !waited && self.outranks_me() => {
                    waited = true;
                    current = self.await_registration();
                    continue;
                }
                REGISTERING | REGISTERING_LOST => REGISTERING_LOST,
                _ => return false,
            };
            // Acquire (deciding): as in `try_decide`. Release (marking
            // LOST): our claim of the cell happens before the owner re-reads
            // it, so it sees at least CLAIMED. The mark is written even when
            // the bit is already set, so the owner's Acquire read
            // synchronizes with every partner that skipped it.
            match self
                .state
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return current == WAITING,
                // The owner may have finished registering meanwhile: then
                // decide it after all.
                Err(now) => current = now,
            }
        }
    }

    /// This waiter's place in the order that keeps registering selects
    /// from waiting for each other in a cycle: its address (unique among
    /// live waiters; under loom, its creation number).
    #[inline]
    fn rank(&self) -> usize {
        #[cfg(loom)]
        return self.rank;
        #[cfg(not(loom))]
        return self as *const Waiter as usize;
    }

    /// Whether the current thread may wait for this waiter to register:
    /// it is not registering a select, or registering one of lower rank.
    #[cold]
    fn outranks_me(&self) -> bool {
        self.rank() > MY_RANK.with(Cell::get)
    }

    /// Marks the current thread as registering this (select's) waiter
    /// until the returned guard drops. Should a select ever register inside
    /// another's registration (no code path does today), the thread keeps
    /// the higher rank, so it waits only for waiters above both.
    pub(crate) fn registering_here(&self) -> RegisteringHere {
        RegisteringHere {
            before: MY_RANK.with(|rank| rank.replace(rank.get().max(self.rank()))),
        }
    }

    /// Waits a moment for a registering select to finish registering (or
    /// be marked LOST by another partner); returns the state it read last.
    /// Relaxed: the caller acts on it only through its CAS, whose Acquire
    /// pairs with `finish_registration`. Only a delay the protocol does not
    /// depend on, so loom reads once.
    #[cold]
    fn await_registration(&self) -> usize {
        #[cfg(not(loom))]
        if yielding::spinning_helps() {
            self.spin_while_registering();
        }
        self.state.load(Ordering::Relaxed)
    }

    /// Pause-spins while the waiter is registering and its owner keeps
    /// publishing entries: at most [`REGISTRATION_WAIT_NANOS`], and no more
    /// than [`REGISTRATION_STALL_NANOS`] since the last entry.
    #[cfg(not(loom))]
    fn spin_while_registering(&self) {
        let step = crate::pause::pauses_for(CHECK_EVERY_NANOS);
        let mut seen = self.progress.load(Ordering::Relaxed);
        let mut quiet = 0;
        for _ in 0..REGISTRATION_WAIT_NANOS / CHECK_EVERY_NANOS {
            if self.state.load(Ordering::Relaxed) != REGISTERING {
                return;
            }
            for _ in 0..step {
                std::hint::spin_loop();
            }
            let now = self.progress.load(Ordering::Relaxed);
            if now / NEW_ROUND != seen / NEW_ROUND {
                // A lost round: the owner re-checks its cells, and may
                // wait for the one we hold.
                return;
            }
            if now != seen {
                (seen, quiet) = (now, 0);
            } else {
                quiet += CHECK_EVERY_NANOS;
                if quiet >= REGISTRATION_STALL_NANOS {
                    return;
                }
            }
        }
    }

    /// The owner of a registering waiter published one more entry: a
    /// partner waiting for the registration to end sees it progress
    /// ([`Waiter::try_decide`]). Only the owner writes the count.
    #[inline]
    pub(crate) fn note_progress(&self) {
        self.note_progress_by(1);
    }

    #[inline]
    fn note_progress_by(&self, step: usize) {
        #[cfg(not(loom))]
        self.progress.store(
            self.progress.load(Ordering::Relaxed).wrapping_add(step),
            Ordering::Relaxed,
        );
        #[cfg(loom)]
        let _ = step;
    }

    /// The owner of a registering waiter completed `case` itself (it found
    /// the case ready while registering). Nobody else can decide a
    /// registering waiter, so this cannot fail.
    pub(crate) fn decide_own(&self, case: usize, closed: bool) {
        debug_assert!(matches!(
            self.state.load(Ordering::Relaxed),
            REGISTERING | REGISTERING_LOST
        ));
        self.state.store(decision(case, closed), Ordering::Relaxed);
    }

    /// Whether the waiter is a select still registering its cases.
    pub(crate) fn is_registering(&self) -> bool {
        matches!(
            self.state.load(Ordering::Relaxed),
            REGISTERING | REGISTERING_LOST
        )
    }

    /// Ends registration: from now on partners may decide the waiter.
    /// `false` if a partner skipped one of its cells meanwhile: the state is
    /// back to plain `REGISTERING`, and the owner must re-check its cells
    /// (waiting out any that are `CLAIMED`) and try again.
    pub(crate) fn finish_registration(&self) -> bool {
        // Release: pairs with a partner's Acquire in `try_decide`.
        match self.state.compare_exchange(
            REGISTERING,
            WAITING,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => true,
            Err(lost) => {
                debug_assert_eq!(lost, REGISTERING_LOST);
                // A partner waiting for us to finish must stop: our
                // re-check may wait for the cell it holds.
                self.note_progress_by(NEW_ROUND);
                // A swap, not a store: it reads the last mark, and Acquire
                // makes every skipping partner's claim visible, so the
                // re-check of our cells cannot read a stale entry word.
                self.state.swap(REGISTERING, Ordering::Acquire);
                false
            }
        }
    }

    /// The owner withdraws. `false`: someone decided first, so the owner
    /// must [`Waiter::wait_finished`] before it may return.
    #[inline]
    pub(crate) fn try_abort(&self) -> bool {
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// The decider is done with the waiter (slot written or read): lets the
    /// owner return, and unparks it if it parked. The waiter may be gone
    /// after the swap.
    #[inline]
    pub(crate) fn wake(&self) {
        self.touch();
        let handle: UnparkHandle = self.parker.handle(self.key());
        // Release: the slot transfer happens before the owner reads it. A
        // swap, not a store: it tells us whether the owner parked.
        if self.done.swap(FINISHED, Ordering::Release) == PARKED {
            handle.unpark();
        }
    }

    fn key(&self) -> usize {
        &self.done as *const AtomicUsize as usize
    }

    fn is_finished(&self) -> bool {
        // Acquire: pairs with the Release in `wake`.
        self.done.spin_load(Ordering::Acquire) == FINISHED
    }

    /// Announces that the owner is about to park. `false`: the decider
    /// finished first (nothing to park for).
    fn announce_park(&self) -> bool {
        // Acquire on failure: the decider's slot transfer is visible.
        match self
            .done
            .compare_exchange(PENDING, PARKED, Ordering::Relaxed, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == PARKED,
        }
    }

    /// Parks until decided and finished, or until `deadline`. A timeout
    /// tries to abort; when a decider got there first, waits for it.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Outcome {
        if spin_in_cell(|| self.is_finished()) || yield_until(deadline, || self.is_finished()) {
            return self.outcome();
        }
        loop {
            if !self.announce_park() {
                return self.outcome();
            }
            // loom has no clock: its parker models the timeout instead.
            if !cfg!(loom) && deadline.is_some_and(|d| Instant::now() >= d) {
                return self.time_out();
            }
            let in_time = self.parker.park(
                self.key(),
                || self.done.load(Ordering::Relaxed) == PARKED,
                deadline,
            );
            if self.is_finished() {
                return self.outcome();
            }
            if !in_time {
                return self.time_out();
            }
        }
    }

    /// The deadline passed: withdraw, unless a decider got there first.
    fn time_out(&self) -> Outcome {
        if self.try_abort() {
            return Outcome::TimedOut;
        }
        self.wait_finished();
        self.outcome()
    }

    /// Waits, without a deadline, for the decider to finish.
    pub(crate) fn wait_finished(&self) {
        // The decider is between its state CAS and its `wake`: a few
        // instructions unless it was preempted there.
        if spin_until(None, || self.is_finished()) {
            return;
        }
        while self.announce_park() {
            self.parker.park(
                self.key(),
                || self.done.load(Ordering::Relaxed) == PARKED,
                None,
            );
        }
    }

    fn outcome(&self) -> Outcome {
        match self.state.load(Ordering::Relaxed) {
            s if s >= DECIDED && (s - DECIDED) & 1 == 1 => Outcome::Closed((s - DECIDED) >> 1),
            s if s >= DECIDED => Outcome::Selected((s - DECIDED) >> 1),
            s => unreachable!("waiter finished in state {s}"),
        }
    }
}

/// One registration of a waiter in one cell.
#[derive(Debug)]
#[repr(align(8))]
pub(crate) struct Entry {
    pub(crate) waiter: *const Waiter,
    pub(crate) case: usize,
    /// `*mut MaybeUninit<T>` for the cell's `T`: where a parked sender keeps
    /// its value and where a parked receiver gets one.
    pub(crate) slot: *mut (),
}

/// A blocked operation's own entry (case 0), its waiter and its slot for a
/// `T`, in one struct aligned to a cache line: the partner reads the entry,
/// decides the waiter, moves the message through the slot and wakes the
/// waiter, and with a message of up to 16 bytes all of that is one line.
/// (Laid out by the frame, the entry and the waiter shared a line in some
/// builds and not in others: the rendezvous ping-pong on 2 cores, one pair
/// in short runs of fresh threads, took 0.78-0.86 us per round trip in one
/// build and 0.87-0.89 us in the next, whose change moved only the frame's
/// layout; with the three on one line, 0.67-0.71 us.)
#[repr(C, align(64))]
pub(crate) struct Parked<T> {
    entry: Entry,
    waiter: Waiter,
    slot: MaybeUninit<T>,
}

// A message of up to 16 bytes shares the line with its entry and waiter.
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Parked<[u64; 2]>>() == 64);

impl<T> Parked<T> {
    pub(crate) fn new() -> Self {
        Parked {
            entry: Entry {
                waiter: std::ptr::null(),
                case: 0,
                slot: std::ptr::null_mut(),
            },
            waiter: Waiter::new(),
            slot: MaybeUninit::uninit(),
        }
    }

    /// The entry, pointing at the waiter and the slot where they lie now
    /// (the struct is borrowed, so it stays there while the entry is used).
    pub(crate) fn entry(&mut self) -> &Entry {
        let slot = self.slot.as_mut_ptr() as *mut ();
        self.entry_with_slot(slot)
    }

    /// [`Parked::entry`] with a slot elsewhere (a permit's, none; a
    /// zero-sized message's, the caller's).
    pub(crate) fn entry_with_slot(&mut self, slot: *mut ()) -> &Entry {
        self.entry.waiter = &self.waiter;
        self.entry.slot = slot;
        &self.entry
    }
}

impl Entry {
    /// The waiter, for its owner (who keeps it alive while the entry is).
    pub(crate) fn waiter(&self) -> &Waiter {
        // SAFETY: an entry never outlives its waiter: both belong to the
        // blocked operation's frame, the waiter declared first.
        unsafe { &*self.waiter }
    }
}

/// Fails an `entry` waiting in a wait list because its channel closed:
/// decides its waiter for the entry's case as closed and wakes it. A waiter
/// that is still registering (a select) is only marked `LOST` and finds the
/// close when it looks again; one that gave up or was decided elsewhere is
/// left alone (it takes its entry out itself).
///
/// # Safety
/// `entry` was in a list whose lock the caller holds (and has taken it
/// out), so its owner cannot return before this call ends: an owner takes
/// its entry out under that lock, and one decided here waits for the wake.
pub(crate) unsafe fn close_listed(entry: *const Entry) {
    // SAFETY: per the contract, the entry is alive.
    let entry = unsafe { &*entry };
    let waiter = entry.waiter();
    if waiter.try_decide(decision(entry.case, true), false) {
        waiter.wake();
    }
}

/// How long a partner waits at most for a select to finish registering
/// before it marks it `LOST` ([`Waiter::try_decide`]). A registration takes
/// an index on every case's channel, and each take may lose a race and
/// wait a microsecond (`loom::RaceBackoff`), so on many cores it takes
/// several: a partner that gave up sooner made the select register again,
/// which made the next partner give up, round after round. Measured on 16
/// cores (Intel Xeon), 8 selects receiving on three rendezvous channels
/// against 8 selects sending on them (Go's `select_sync_contended`), per
/// message: waiting 15 pauses (0.25 us there), 190 lost rounds and 127 us;
/// 3 us, 4-7 rounds and 4-6 us; 10 us, 0.3 rounds and 1.2 us
/// (crossbeam-channel 3.3 us in the same runs). The wait holds the cell
/// `CLAIMED`, so it stays bounded: the select, re-checking its cells after
/// a lost round, may be waiting for that very cell.
#[cfg(not(loom))]
const REGISTRATION_WAIT_NANOS: u32 = 10_000;

/// A partner stops waiting sooner if the select has published no entry
/// for this long ([`Waiter::note_progress`]): its thread was preempted
/// (with more threads than cores, spinning on it only delays it), or it
/// waits for the cell the partner holds (which a lost round also shows:
/// `NEW_ROUND`). An entry whose index race was lost can take as long
/// (`loom::RaceBackoff`'s first wait, 128 pauses: 2.1 us on the Intel
/// Xeon), so a partner then gives up on a select that was progressing.
/// Rare enough, measured there: a plain 10 us wait made 0.1-0.3 lost
/// rounds per message, and the wait with these bounds took the same time
/// per message.
#[cfg(not(loom))]
const REGISTRATION_STALL_NANOS: u32 = 2_000;

/// What a lost round adds to `Waiter::progress` (each entry adds 1): a
/// partner waiting for the registration stops when it sees a new round
/// begin. (Not one that began between the state it read and its first
/// read of `progress`: that partner waits out the stall bound instead. On
/// a 32-bit target 65 536 entries of one select carry into the round half,
/// which only ends a wait early.)
const NEW_ROUND: usize = 1 << (usize::BITS / 2);

/// How often a partner waiting for a registration checks it.
#[cfg(not(loom))]
const CHECK_EVERY_NANOS: u32 = 100;

/// Pause-spin rounds before yielding: round `i` spins `2^i` times, 15
/// pauses in all. Longer pause-spinning measured slower here in every
/// blocking benchmark (7 rounds: ping-pong 1.6 us against 0.85-0.9 us):
/// a yield with nothing else to run returns in ~0.3 us and polls as well.
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 4;

/// How long a blocked thread yields before it parks. A park/unpark round
/// trip costs 10-30 us here (NOTES.md), and a parked partner that is woken
/// answers only after that long: a budget longer than one round trip keeps
/// a ping-pong from parking on every hand-off once one side has parked. The
/// budget is wall time, not a count, so it cannot become a yield loop that
/// starves others (crossbeam-channel#821): with threads to run, each yield
/// gives the CPU away for microseconds and the budget runs out in a few.
#[cfg(not(loom))]
const YIELD_FOR: std::time::Duration = std::time::Duration::from_micros(50);

/// Before an operation commits to waiting in a queue: if `ready()` is
/// false, waits for it as [`spin_until`] does, holding nothing. Only a
/// delay, which the protocol does not depend on, so loom skips it (its
/// loads would only multiply the models' interleavings).
#[inline]
pub(crate) fn linger(deadline: Option<Instant>, ready: impl Fn() -> bool) {
    if !cfg!(loom) && !ready() {
        spin_until(deadline, ready);
    }
}

/// Waits for `done()` without parking: spins, then yields, for a bounded
/// time (and never past `deadline`). Returns `done()`. Under loom it only
/// checks once: spinning adds nothing to a model but interleavings.
#[inline]
pub(crate) fn spin_until(deadline: Option<Instant>, done: impl Fn() -> bool) -> bool {
    if cfg!(loom) {
        return done();
    }
    spin(&done) || yield_until(deadline, done)
}

/// The first phase of [`spin_until`]: pause-spins a few rounds (a fraction
/// of a microsecond), checking `done()` after each. Under loom, and on a
/// thread that may run on only one CPU: one check.
#[inline]
pub(crate) fn spin(done: impl Fn() -> bool) -> bool {
    #[cfg(loom)]
    {
        done()
    }
    #[cfg(not(loom))]
    {
        if !crate::yielding::spinning_helps() {
            return done();
        }
        (0..SPIN_ROUNDS).any(|round| {
            for _ in 0..1u32 << round {
                std::hint::spin_loop();
            }
            done()
        })
    }
}

/// [`spin`] for a waiter parked in a cell, unless this thread's recent
/// spins there found no partner (`yielding::spin_in_cell_pays`); then only
/// one check. Under loom: one check.
#[inline]
fn spin_in_cell(done: impl Fn() -> bool) -> bool {
    #[cfg(loom)]
    {
        done()
    }
    #[cfg(not(loom))]
    {
        if !yielding::spin_in_cell_pays() {
            return done();
        }
        let won = spin(&done);
        yielding::spun_in_cell(won);
        won
    }
}

/// The second phase of [`spin_until`]: yields until `done()`, for at most
/// `YIELD_FOR` and never past `deadline`. Under loom: one check.
pub(crate) fn yield_until(deadline: Option<Instant>, done: impl Fn() -> bool) -> bool {
    #[cfg(loom)]
    {
        let _ = deadline;
        done()
    }
    #[cfg(not(loom))]
    {
        let Some(phase) = yielding::Phase::begin() else {
            return done(); // yields go to other processes now: park instead
        };
        // The first yield goes unmeasured: one yield usually does (a
        // ping-pong partner on the same CPU), and then this phase reads no
        // clock at all (one read per hand-off was 50 of the 1230
        // instructions of a one-CPU rendezvous round trip). A slow first
        // yield is noticed at the next one, if the wait goes on.
        std::thread::yield_now();
        if done() {
            return true;
        }
        let start = Instant::now();
        let budget_end = start + YIELD_FOR;
        let until = deadline.map_or(budget_end, |d| d.min(budget_end));
        let mut before = start;
        while before < until {
            std::thread::yield_now();
            if done() {
                return true;
            }
            let now = Instant::now();
            if now - before >= yielding::SLOW_YIELD {
                phase.slow_yield(now);
                return false;
            }
            before = now;
        }
        false
    }
}

// (Not under loom: these use no model.)
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The rank rule that keeps registering selects from waiting for each
    /// other: a thread not registering may wait for any select; one
    /// registering waits only for selects of higher rank, never for its
    /// own; the rank is the thread's again once the guard drops, and a
    /// nested registration keeps the higher one.
    #[test]
    fn only_a_lower_rank_waits() {
        let (a, b) = (Waiter::registering(), Waiter::registering());
        let (low, high) = if a.rank() < b.rank() {
            (&a, &b)
        } else {
            (&b, &a)
        };
        assert!(low.outranks_me() && high.outranks_me());
        {
            let _guard = low.registering_here();
            assert!(high.outranks_me());
            assert!(!low.outranks_me(), "a select waits for itself");
            {
                let _inner = high.registering_here();
                assert!(!low.outranks_me() && !high.outranks_me());
            }
            assert!(high.outranks_me());
        }
        {
            let _guard = high.registering_here();
            assert!(!low.outranks_me(), "two selects could wait for each other");
        }
        assert!(low.outranks_me() && high.outranks_me());
    }

    /// A partner that meets a select still registering, patient or not,
    /// cannot decide it: it marks it LOST, and the select's move to
    /// WAITING then fails once. A waiter that finished registering is
    /// decided; one already decided is not decided again.
    #[test]
    fn a_registering_select_is_marked_lost_not_decided() {
        for patient in [false, true] {
            let w = Waiter::registering();
            assert!(!w.try_decide(decision(0, false), patient));
            assert!(
                !w.try_decide(decision(1, false), patient),
                "LOST is not WAITING"
            );
            assert!(!w.finish_registration(), "the LOST mark was dropped");
            assert!(w.finish_registration());
            assert!(w.try_decide(decision(1, false), patient));
            assert!(!w.try_decide(decision(0, false), patient));
            w.wake();
            assert_eq!(w.wait(None), Outcome::Selected(1));
        }
    }
}
