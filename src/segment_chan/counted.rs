//! Zero-sized messages on a count (`crate::counting`) instead of cells.

use super::*;

/// A zero-sized message out of nothing.
///
/// # Safety
/// `T` is zero-sized, and a value of it was sent and forgotten (so `T` is
/// inhabited, and this one takes that one's place: each is made once).
#[inline]
pub(super) unsafe fn conjure<T>() -> T {
    debug_assert_eq!(std::mem::size_of::<T>(), 0);
    // SAFETY: a zero-sized read through a dangling, aligned pointer is
    // valid, and per the contract the value it makes is one that was sent.
    unsafe { std::ptr::NonNull::<T>::dangling().as_ptr().read() }
}

/// Completes a send of zero-sized `msg` that `moved` says how to finish.
#[inline]
fn finish_counted_send<T>(moved: Moved<'_>, msg: T) {
    match moved {
        Moved::Counted => std::mem::forget(msg),
        Moved::Handed { waiter, slot } => {
            // SAFETY: the decided receiver's slot is ours to fill.
            unsafe { (slot as *mut T).write(msg) };
            waiter.wake();
        }
    }
}

/// Completes a receive that `moved` says how to finish.
#[inline]
fn finish_counted_recv<T>(moved: Moved<'_>) -> T {
    match moved {
        // SAFETY: a `Counting` channel carries zero-sized `T`, and the
        // count we took stands for a message sent and forgotten.
        Moved::Counted => unsafe { conjure() },
        Moved::Handed { waiter, slot } => {
            // SAFETY: the decided sender's value is ours.
            let msg = unsafe { (slot as *mut T).read() };
            waiter.wake();
            msg
        }
    }
}

/// `Channel::send_from` for zero-sized messages.
///
/// # Safety
/// As [`Channel::send_from`].
pub(super) unsafe fn send_counted<T>(
    count: &Counting,
    msg: *mut T,
    mode: Mode<'_>,
) -> Result<(), SendStop> {
    // SAFETY (every `msg.read()`): the value at `msg` is the caller's, and
    // it is read once, on a path that returns `Ok` (it moved).
    match mode {
        Mode::Try => match count.send(Mode::Try) {
            Ok(moved) => {
                finish_counted_send(moved, unsafe { msg.read() });
                Ok(())
            }
            Err(RecvStop::Fail(fail)) => Err(SendStop::Fail(fail)),
            Err(_) => unreachable!("only Mode::Register registers"),
        },
        Mode::Park(deadline) => {
            match count.send(Mode::Try) {
                Ok(moved) => {
                    finish_counted_send(moved, unsafe { msg.read() });
                    return Ok(());
                }
                Err(RecvStop::Fail(Fail::WouldBlock)) => {}
                Err(RecvStop::Fail(fail)) => return Err(SendStop::Fail(fail)),
                Err(_) => unreachable!("only Mode::Register registers"),
            }
            match count.wait(true, msg as *mut (), deadline) {
                // A receiver took the value out of `msg`.
                Ok(None) => Ok(()),
                // Not handed to anyone: still ours, to finish with.
                Ok(Some(moved)) => {
                    finish_counted_send(moved, unsafe { msg.read() });
                    Ok(())
                }
                Err(fail) => Err(SendStop::Fail(fail)),
            }
        }
        // The value is already in the select's slot (`msg`); a receiver may
        // take it from there as soon as the entry is listed.
        Mode::Register { .. } => match count.send(mode) {
            // Not listed, so still ours.
            Ok(moved) => {
                finish_counted_send(moved, unsafe { msg.read() });
                Ok(())
            }
            Err(RecvStop::Fail(fail)) => Err(SendStop::Fail(fail)),
            Err(RecvStop::Registered(reg)) => Err(SendStop::Registered(reg)),
            Err(RecvStop::SelfMet) => unreachable!("no duplexes here"),
        },
    }
}

/// `Channel::recv_in` for zero-sized messages.
pub(super) fn recv_counted<T>(count: &Counting, mode: Mode<'_>) -> Result<T, RecvStop> {
    let Mode::Park(deadline) = mode else {
        return count.recv(mode).map(finish_counted_recv);
    };
    match count.recv(Mode::Try) {
        Ok(moved) => return Ok(finish_counted_recv(moved)),
        Err(RecvStop::Fail(Fail::WouldBlock)) => {}
        Err(stop) => return Err(stop),
    }
    let mut slot = MaybeUninit::<T>::uninit();
    match count.wait(false, slot.as_mut_ptr() as *mut (), deadline) {
        // SAFETY: the sender wrote our slot before waking us.
        Ok(None) => Ok(unsafe { slot.assume_init() }),
        Ok(Some(moved)) => Ok(finish_counted_recv(moved)),
        Err(fail) => Err(RecvStop::Fail(fail)),
    }
}
