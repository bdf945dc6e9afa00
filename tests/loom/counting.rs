//! Loom models of the channels of zero-sized messages (`counting.rs`: a
//! count and wait lists behind a mutex). Each runs with the preemption bound
//! named in its `model(name, bound, ..)` call. The message type counts its
//! drops, so every model also checks that each message sent is dropped
//! exactly once (made by a receiver, or handed back to its sender).

use crate::model;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use scalechan::{bounded, select, unbounded, RecvTimeoutError, SendTimeoutError, TryRecvError};
use std::time::Duration;

/// A zero-sized message whose drops are counted.
struct Permit;

loom::lazy_static! {
    static ref DROPS: AtomicUsize = AtomicUsize::new(0);
}

impl Drop for Permit {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

fn drops() -> usize {
    DROPS.load(Ordering::Relaxed)
}

/// Bound 3. A receiver on an empty `bounded(1)` parks (or not) while a
/// sender arrives: it gets the message whichever comes first (no lost
/// wake-up), and the channel is empty afterwards.
#[test]
fn zst_parked_recv_gets_send() {
    model("zst_parked_recv_gets_send", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        let r = thread::spawn(move || {
            drop(rx.recv().unwrap());
            rx
        });
        tx.send(Permit).unwrap();
        let rx = r.join().unwrap();
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
        assert_eq!(drops(), 1);
    });
}

/// Bound 3. A sender blocked on a full `bounded(1)` against a receiver:
/// the sender completes, exactly one message is left, and the slot the
/// receiver freed is not counted twice.
#[test]
fn zst_full_send_woken_by_recv() {
    model("zst_full_send_woken_by_recv", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        tx.send(Permit).unwrap();
        let s = thread::spawn(move || {
            tx.send(Permit).unwrap();
            tx
        });
        drop(rx.recv().unwrap());
        let tx = s.join().unwrap();
        assert_eq!(rx.len(), 1);
        assert!(tx.try_send(Permit).is_err());
        drop(rx.try_recv().unwrap());
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
        assert_eq!(drops(), 3);
    });
}

/// Bound 3. Close races a parked receiver and a send on an unbounded
/// channel: the receiver never sees `Closed` while a message sent before
/// the close is pending, and a send after the close fails with its message.
#[test]
fn zst_close_races_send_and_recv() {
    model("zst_close_races_send_and_recv", 3, || {
        let (tx, rx) = unbounded::<Permit>();
        let tx2 = tx.clone();
        let r = thread::spawn(move || {
            let got = rx.recv().is_ok();
            (got, rx)
        });
        let sent = tx2.send(Permit).is_ok();
        tx.close();
        let (got, rx) = r.join().unwrap();
        // Sent before the close: it reaches the receiver or stays.
        assert!(sent);
        let left = std::iter::from_fn(|| rx.try_recv().ok()).count();
        assert_eq!(got as usize + left, 1);
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Closed));
        assert!(tx.send(Permit).is_err());
        assert_eq!(drops(), 2);
    });
}

/// Bound 3. Close against a sender parked on a full channel and a receiver
/// parked on an empty one (two channels): both wake with `Closed`, the
/// sender with its message.
#[test]
fn zst_close_fails_parked_waiters() {
    model("zst_close_fails_parked_waiters", 3, || {
        let (full_tx, full_rx) = bounded::<Permit>(1);
        full_tx.send(Permit).unwrap();
        let (empty_tx, empty_rx) = bounded::<Permit>(1);
        let s = thread::spawn(move || full_tx.send(Permit).map_err(|e| e.into_inner()).err());
        let r = thread::spawn(move || empty_rx.recv().is_err());
        full_rx.close();
        empty_tx.close();
        let back = s.join().unwrap();
        assert!(
            back.is_some(),
            "the blocked send fails and hands its message back"
        );
        drop(back);
        assert!(r.join().unwrap());
        // The message buffered before the close is still there.
        drop(full_rx.try_recv().unwrap());
        assert_eq!(drops(), 2);
    });
}

/// Bound 3. `recv_timeout` gives up at an arbitrary point while a send
/// arrives: the message reaches the receiver or stays counted, never lost,
/// and the waiter leaves no entry behind (a later send does not block).
#[test]
fn zst_recv_timeout_races_send() {
    model("zst_recv_timeout_races_send", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        let r = thread::spawn(move || {
            let got = match rx.recv_timeout(Duration::from_millis(1)) {
                Ok(p) => {
                    drop(p);
                    true
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(e) => panic!("{e:?}"),
            };
            (got, rx)
        });
        tx.send(Permit).unwrap();
        let (got, rx) = r.join().unwrap();
        assert_eq!(rx.len(), !got as usize);
        drop(rx.try_recv());
        tx.send(Permit).unwrap();
        assert_eq!(rx.len(), 1);
    });
}

/// Bound 3. `send_timeout` on a full channel gives up at an arbitrary
/// point while a receive frees the slot: the message is buffered or handed
/// back, never both.
#[test]
fn zst_send_timeout_races_recv() {
    model("zst_send_timeout_races_recv", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        tx.send(Permit).unwrap();
        let s = thread::spawn(
            move || match tx.send_timeout(Permit, Duration::from_millis(1)) {
                Ok(()) => true,
                Err(SendTimeoutError::Timeout(p)) => {
                    drop(p);
                    false
                }
                Err(e) => panic!("{e:?}"),
            },
        );
        drop(rx.recv().unwrap());
        let sent = s.join().unwrap();
        assert_eq!(rx.len(), sent as usize);
        assert_eq!(drops(), 2 - sent as usize);
    });
}

/// Bound 2. A select receiving from a zero-sized channel and another one
/// against a sender: the sender may meet the select still registering
/// (its entry is dropped and the select registers again) or parked; the
/// select takes the message either way, exactly once.
#[test]
fn zst_select_recv_vs_send() {
    model("zst_select_recv_vs_send", 2, || {
        let (tx, rx) = bounded::<Permit>(1);
        let (_keep, idle) = unbounded::<i32>();
        let s = thread::spawn(move || tx.send(Permit).unwrap());
        let got = select! {
            recv(rx) -> p => p.is_ok(),
            recv(idle) -> _ => unreachable!(),
        };
        s.join().unwrap();
        assert!(got);
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Closed));
        assert_eq!(drops(), 1);
    });
}

/// Bound 2. A select's send case on a full zero-sized channel against a
/// receiver: the receiver's freed place goes to the select's message, which
/// is then buffered exactly once.
#[test]
fn zst_select_send_woken_by_recv() {
    model("zst_select_send_woken_by_recv", 2, || {
        let (tx, rx) = bounded::<Permit>(1);
        tx.send(Permit).unwrap();
        let (_keep, idle) = unbounded::<i32>();
        let s = thread::spawn(move || {
            select! {
                send(tx, Permit) -> r => r.is_ok(),
                recv(idle) -> _ => unreachable!(),
            }
        });
        drop(rx.recv().unwrap());
        assert!(s.join().unwrap());
        assert_eq!(rx.len(), 1);
        drop(rx.try_recv().unwrap());
        assert_eq!(drops(), 2);
    });
}

/// Bound 3. `try_recv` on an empty channel with a receiver parked, and
/// `try_send` on a full one with a sender parked, decide from one load
/// (no lock, no waiter disturbed): they report `Empty` and `Full`, and the
/// parked operations still complete.
#[test]
fn zst_try_ops_beside_waiters() {
    model("zst_try_ops_beside_waiters", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        let rx2 = rx.clone();
        let r = thread::spawn(move || drop(rx2.recv().unwrap()));
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
        tx.send(Permit).unwrap();
        r.join().unwrap();
        tx.send(Permit).unwrap();
        let tx2 = tx.clone();
        let s = thread::spawn(move || tx2.send(Permit).unwrap());
        assert!(tx.try_send(Permit).is_err());
        drop(rx.recv().unwrap());
        s.join().unwrap();
        assert_eq!(rx.len(), 1);
        drop(rx);
        assert_eq!(drops(), 4);
    });
}

/// Bound 2. A `close` that answers `false` (someone else closed first)
/// returns with the channel closed: `is_closed` holds and a send fails. The
/// answer came from the cell channel's bit while only the count's own flag
/// closes a zero-sized channel (found in review).
#[test]
fn zst_close_answer_is_final() {
    model("zst_close_answer_is_final", 2, || {
        let (tx, rx) = bounded::<()>(4);
        let tx2 = tx.clone();
        let t = thread::spawn(move || tx2.close());
        let mine = tx.close();
        if !mine {
            assert!(tx.is_closed(), "close() said closed, is_closed() did not");
            assert!(tx.try_send(()).is_err(), "a send after close() said closed");
        }
        let theirs = t.join().unwrap();
        assert!(mine != theirs, "exactly one close closes");
        drop(rx);
    });
}

/// Bound 3. A sender blocked on a full `bounded(1)` while another thread
/// closes it, and a receiver that drains only once it has seen the close:
/// the blocked send fails and hands its message back (SPEC: once closed,
/// every send fails, blocked senders included), so the receiver gets no
/// more than `len` said after the close. A receive on the slow path used
/// to let the listed sender's message take the place of the one it took,
/// closed or not, and the send returned `Ok` after the close (found in
/// review: `len` 1, then two messages received).
#[test]
fn zst_blocked_send_fails_once_closed() {
    model("zst_blocked_send_fails_once_closed", 3, || {
        let (tx, rx) = bounded::<Permit>(1);
        tx.send(Permit).unwrap();
        let sender = tx.clone();
        let s = thread::spawn(move || sender.send(Permit).is_ok());
        let c = thread::spawn(move || {
            tx.close();
        });
        let mut received = 0;
        if rx.is_closed() {
            let len = rx.len();
            received = std::iter::from_fn(|| rx.try_recv().ok()).count();
            assert!(
                received <= len,
                "len {len} after the close, then {received} received"
            );
        }
        c.join().unwrap();
        assert!(
            !s.join().unwrap(),
            "a blocked send completed after the close"
        );
        received += std::iter::from_fn(|| rx.try_recv().ok()).count();
        assert_eq!(received, 1, "the message sent before the close");
        drop(rx);
        assert_eq!(drops(), 2);
    });
}
