//! Loom models of select. Each runs with the preemption bound named in its
//! `model(name, bound, ..)` call. Under loom a select tries and registers its
//! cases in source order (the random order would differ between the
//! executions loom replays), and a timed wait expires at a point the
//! scheduler picks.

use crate::{assert_closed_is_final, drain_and_check_one_slot, full, model};
use loom::thread;
use scalechan::{bounded, select, unbounded, Select, SendTimeoutError, TryRecvError};
use std::time::Duration;

/// Bound 3. A select receiving on two channels against two senders: it
/// takes exactly one message; the other stays in its channel.
#[test]
fn select_recv_two_vs_two_senders() {
    model("select_recv_two_vs_two_senders", 3, || {
        let (tx1, rx1) = unbounded();
        let (tx2, rx2) = unbounded();
        let s1 = thread::spawn(move || tx1.send(1).unwrap());
        let s2 = thread::spawn(move || tx2.send(2).unwrap());
        let got = select! {
            recv(rx1) -> m => m.unwrap(),
            recv(rx2) -> m => m.unwrap(),
        };
        s1.join().unwrap();
        s2.join().unwrap();
        let (mine, other) = if got == 1 { (&rx1, &rx2) } else { (&rx2, &rx1) };
        assert_eq!(mine.try_recv(), Err(TryRecvError::Closed));
        assert_eq!(other.try_recv(), Ok(3 - got));
    });
}

/// Bound 3. A waiting select's try pass takes the message at the cursor
/// before it looks for emptiness (`try_recv_at_cursor_first`), racing a
/// plain receiver and a third message's sender on a `bounded(2)` that
/// holds two: each receiver gets exactly one, in order, and the third is
/// left.
#[test]
fn select_try_pass_races_receiver() {
    model("select_try_pass_races_receiver", 3, || {
        let (tx, rx) = bounded(2);
        let (_keep, other) = unbounded::<i32>();
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let rx2 = rx.clone();
        let s = thread::spawn(move || tx.send(3).unwrap());
        let r = thread::spawn(move || rx2.recv().unwrap());
        let got = select! {
            recv(rx) -> m => m.unwrap(),
            recv(other) -> _ => unreachable!(),
        };
        let plain = r.join().unwrap();
        s.join().unwrap();
        let mut both = [got, plain];
        both.sort();
        assert_eq!(both, [1, 2]);
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

/// Bound 3. A blocked select against a sender that sends, then closes: the
/// select gets the message (never `Closed` with a message pending), and a
/// second select sees the close.
#[test]
fn select_vs_send_then_close() {
    model("select_vs_send_then_close", 3, || {
        let (tx, rx) = bounded(1);
        let (_keep, other) = unbounded::<i32>();
        let s = thread::spawn(move || {
            tx.send(1).unwrap();
            drop(tx);
        });
        let first = select! {
            recv(rx) -> m => m,
            recv(other) -> _ => unreachable!(),
        };
        assert_eq!(first, Ok(1));
        let second = select! {
            recv(rx) -> m => m,
            recv(other) -> _ => unreachable!(),
        };
        assert!(second.is_err());
        s.join().unwrap();
    });
}

/// Bound 3. A select's send case on a rendezvous channel against a parked
/// (or arriving) receiver: the value is handed over exactly once.
#[test]
fn select_send_vs_receiver() {
    model("select_send_vs_receiver", 3, || {
        let (tx, rx) = bounded(0);
        let (_keep, other) = unbounded::<i32>();
        let r = thread::spawn(move || rx.recv().unwrap());
        select! {
            send(tx, 9) -> res => res.unwrap(),
            recv(other) -> _ => unreachable!(),
        }
        assert_eq!(r.join().unwrap(), 9);
    });
}

/// Bound 3. A select with a timeout races a rendezvous sender that also
/// times out: either both completed (the select got the value) or neither
/// did (the sender has its value back). Nothing is lost or duplicated.
#[test]
fn select_timeout_races_sender() {
    model("select_timeout_races_sender", 3, || {
        let (tx, rx) = bounded(0);
        let _open = tx.clone(); // the sender's exit must not close the channel
        let s = thread::spawn(move || tx.send_timeout(4, Duration::from_millis(1)));
        let got = Select::new()
            .recv(&rx, |m| m.unwrap())
            .wait_timeout(Duration::from_millis(1));
        match (got, s.join().unwrap()) {
            (Some(v), Ok(())) => assert_eq!(v, 4),
            (None, Err(SendTimeoutError::Timeout(v))) => assert_eq!(v, 4),
            other => panic!("inconsistent outcome {other:?}"),
        }
    });
}

/// Bound 3. The same with an unbounded channel: a message the select gave
/// up on stays in the channel.
#[test]
fn select_timeout_races_buffered_send() {
    model("select_timeout_races_buffered_send", 3, || {
        let (tx, rx) = unbounded();
        let s = thread::spawn(move || tx.send(6).unwrap());
        let got = Select::new()
            .recv(&rx, |m| m.unwrap())
            .wait_timeout(Duration::from_millis(1));
        s.join().unwrap();
        match got {
            Some(v) => {
                assert_eq!(v, 6);
                assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
            }
            None => assert_eq!(rx.try_recv(), Ok(6)),
        }
    });
}

/// Bound 3. A select sending on a rendezvous channel against a select
/// receiving on it (each with a second case that never fires): they meet,
/// whichever registers first, with no deadlock.
#[test]
fn select_vs_select_rendezvous() {
    model("select_vs_select_rendezvous", 3, || {
        let (tx, rx) = bounded(0);
        let (_k1, idle1) = unbounded::<i32>();
        let (_k2, idle2) = unbounded::<i32>();
        let s = thread::spawn(move || {
            select! {
                send(tx, 8) -> res => res.unwrap(),
                recv(idle1) -> _ => unreachable!(),
            }
        });
        let got = select! {
            recv(rx) -> m => m.unwrap(),
            recv(idle2) -> _ => unreachable!(),
        };
        assert_eq!(got, 8);
        s.join().unwrap();
    });
}

/// Bound 3. Go's `select_sync_contended` shape, shrunk: a select sending
/// on two rendezvous channels against a select receiving on both. They
/// register at the same time and each meets the other registering; the
/// one of lower rank (under loom, the waiter created first) may wait for
/// the other's registration to end and then decide it, the other marks it
/// `LOST` and skips. One value moves, on one channel, and neither select is
/// left parked. Loom reads the waited-for state once instead of spinning,
/// so this checks the decisions after a wait, not the wait's length (an
/// unbounded wait runs past loom's branch limit here); the rank rule
/// itself is checked by `waiter`'s unit tests.
#[test]
fn selects_registering_at_once_meet() {
    model("selects_registering_at_once_meet", 3, || {
        let (tx1, rx1) = bounded::<i32>(0);
        let (tx2, rx2) = bounded::<i32>(0);
        let s = thread::spawn(move || {
            select! {
                send(tx1, 1) -> res => { res.unwrap(); 1 },
                send(tx2, 2) -> res => { res.unwrap(); 2 },
            }
        });
        let got = select! {
            recv(rx1) -> m => m.unwrap(),
            recv(rx2) -> m => m.unwrap(),
        };
        assert_eq!(got, s.join().unwrap());
    });
}

/// Bound 3. Two selects, each with a send and a receive case on one
/// rendezvous channel (crossbeam's `matching`): they pair with each other
/// and never with themselves. Exercises duplex entries.
#[test]
fn duplex_selects_match() {
    model("duplex_selects_match", 3, || {
        let (tx, rx) = bounded::<usize>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let other = thread::spawn(move || {
            select! {
                recv(rx2) -> v => Some(v.unwrap()),
                send(tx2, 1) -> r => { r.unwrap(); None }
            }
        });
        let mine = select! {
            recv(rx) -> v => Some(v.unwrap()),
            send(tx, 0) -> r => { r.unwrap(); None }
        };
        match (mine, other.join().unwrap()) {
            (Some(1), None) | (None, Some(0)) => {}
            outcome => panic!("selects did not pair: {outcome:?}"),
        }
    });
}

/// Bound 2. A duplex must stay within reach of the operations that come
/// after it. Here a receiver and a sender each take index 0 of a
/// rendezvous channel and time out before meeting, while a select with a
/// send and a receive case parks as a duplex at index 1 (both counters were
/// 1). If the two timed-out operations handed index 0 back (as a give-back
/// does on the other kinds), both counters would fall back to 0 below the
/// duplex, and the receive that follows would park at 0 with no sender ever
/// coming: the deadlock found in `matching_with_leftover`.
#[test]
fn duplex_stays_reachable_after_timeouts() {
    model("duplex_stays_reachable_after_timeouts", 2, || {
        let (tx, rx) = bounded::<i32>(0);
        let tx1 = tx.clone();
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let sender = thread::spawn(move || tx1.send_timeout(1, Duration::from_millis(1)).is_ok());
        let pair = thread::spawn(move || {
            select! {
                recv(rx2) -> v => Some(v.unwrap()),
                send(tx2, 2) -> r => { r.unwrap(); None }
            }
        });
        let got = rx.recv_timeout(Duration::from_millis(1)).ok();
        let sent = sender.join().unwrap();
        // Whom the pair met, if anyone: the receiver took its 2, or the
        // sender's 1 went to the pair rather than to the receiver.
        let pair_served = got == Some(2) || (sent && got != Some(1));
        if !pair_served {
            // The pair still waits: a plain receive must reach it.
            assert_eq!(rx.recv(), Ok(2));
        }
        match pair.join().unwrap() {
            Some(v) => assert_eq!((v, sent, got), (1, true, None)),
            None => assert!(got == Some(2) || !pair_served),
        }
    });
}

/// Bound 2. A select's duplex (receive and send cases on one rendezvous
/// channel) parked in cell 0; a send takes index 0 and meets it only after
/// a close, which has failed the duplex's send half and left the cell
/// `EMPTY`. The send fails, and must still settle its index: a receive
/// that takes index 0 afterwards (below `closed_at`) reports `Closed`
/// rather than park for good (found in review: returning at once from the
/// `EMPTY` cell deadlocked here).
#[test]
fn send_fails_a_duplex_after_close_then_recv() {
    model("send_fails_a_duplex_after_close_then_recv", 2, || {
        let (tx, rx) = bounded::<i32>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let pair = thread::spawn(move || {
            select! {
                recv(rx2) -> v => v.ok(),
                send(tx2, 2) -> r => { assert!(r.is_err()); None }
            }
        });
        let tx3 = tx.clone();
        let sender = thread::spawn(move || tx3.send(1).is_ok());
        let closer = thread::spawn(move || {
            tx.close();
        });
        let got = pair.join().unwrap();
        let sent = sender.join().unwrap();
        closer.join().unwrap();
        assert_eq!(
            sent,
            got == Some(1),
            "the send succeeded exactly when the pair got it"
        );
        assert_eq!(rx.recv(), Err(scalechan::RecvError));
    });
}

/// Bound 3. A blocked select (receive on a rendezvous channel, send on a
/// bounded one) against a close of both: it wakes with one failed case,
/// and the send case's value comes back if chosen.
#[test]
fn select_vs_close() {
    model("select_vs_close", 3, || {
        let (tx, rx) = bounded::<i32>(0);
        let (tx2, rx2) = bounded::<i32>(1);
        tx2.send(0).unwrap(); // full: the send case blocks
        let c = thread::spawn(move || {
            rx.close();
            rx2.close();
        });
        let r = select! {
            send(tx, 1) -> res => res.unwrap_err().into_inner(),
            send(tx2, 2) -> res => res.unwrap_err().into_inner(),
        };
        assert!(r == 1 || r == 2);
        c.join().unwrap();
    });
}

/// Bound 3. A select's send case waiting for a permit of a full bounded
/// channel against a receiver: the permit the receive frees goes to the
/// select, which deposits its value; nothing is lost or sent twice.
#[test]
fn select_bounded_send_woken_by_recv() {
    model("select_bounded_send_woken_by_recv", 3, || {
        let (tx, rx) = bounded(1);
        tx.send(1).unwrap();
        let (_keep, idle) = unbounded::<i32>();
        let r = thread::spawn(move || (rx.recv().unwrap(), rx.recv().unwrap()));
        select! {
            send(tx, 2) -> res => res.unwrap(),
            recv(idle) -> _ => unreachable!(),
        }
        assert_eq!(r.join().unwrap(), (1, 2));
    });
}

/// Bound 3. The same with a lazily returned permit (bounded(2): a batch of
/// 2 under loom): the one receive that frees a slot must reach the select
/// registered in the permit queue, though its permit is short of a batch.
#[test]
fn select_bounded_send_gets_lazy_permit() {
    model("select_bounded_send_gets_lazy_permit", 3, || {
        let (tx, rx) = bounded(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let (_keep, idle) = unbounded::<i32>();
        let r = thread::spawn(move || {
            assert_eq!(rx.recv(), Ok(1));
            rx
        });
        select! {
            send(tx, 3) -> res => res.unwrap(),
            recv(idle) -> _ => unreachable!(),
        }
        let rx = r.join().unwrap();
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.recv(), Ok(3));
    });
}

/// Bound 2. A select's send case queued for a permit of a full bounded(1)
/// loses to its receive case (a message from another thread) while a
/// receive frees a permit: the cancelled send case takes its debt back or
/// leaves a skip for the releaser. Its value is sent exactly when the
/// select chose it, and the channel then has exactly one free slot.
#[test]
fn select_send_case_takes_its_debt_back() {
    model("select_send_case_takes_its_debt_back", 2, || {
        let (tx, rx) = full(1);
        let (other_tx, other) = unbounded::<i32>();
        let o = thread::spawn(move || other_tx.send(7).unwrap());
        let r = thread::spawn(move || {
            assert_eq!(rx.recv(), Ok(0));
            rx
        });
        let sent = select! {
            send(tx, 1) -> res => { res.unwrap(); true },
            recv(other) -> m => { assert_eq!(m, Ok(7)); false },
        };
        o.join().unwrap();
        let rx = r.join().unwrap();
        let left = drain_and_check_one_slot(&tx, &rx);
        assert_eq!(left, if sent { vec![1] } else { vec![] });
    });
}

/// A select with a send and a receive case on an idle rendezvous channel
/// parks as a duplex in the cell both counts point at, where no index
/// leads; `poll` (a `try_recv` or a `try_send` in a loop that yields)
/// must still meet it. Before non-blocking operations read the channel's
/// duplex count, the poll spun for good (loom: too many branches).
fn duplex_met_by_polling(name: &str, bound: usize, by_send: bool) {
    model(name, bound, move || {
        let (tx, rx) = bounded::<i32>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let pair = thread::spawn(move || {
            select! {
                recv(rx2) -> v => Some(v.unwrap()),
                send(tx2, 2) -> r => { r.unwrap(); None }
            }
        });
        loop {
            let met = if by_send {
                tx.try_send(1).is_ok()
            } else {
                rx.try_recv().map(|v| assert_eq!(v, 2)).is_ok()
            };
            if met {
                break;
            }
            thread::yield_now();
        }
        let want = if by_send { Some(1) } else { None };
        assert_eq!(pair.join().unwrap(), want);
    });
}

/// Bound 3. See `duplex_met_by_polling`.
#[test]
fn duplex_met_by_try_recv() {
    duplex_met_by_polling("duplex_met_by_try_recv", 3, false);
}

/// Bound 3. See `duplex_met_by_polling`.
#[test]
fn duplex_met_by_try_send() {
    duplex_met_by_polling("duplex_met_by_try_send", 3, true);
}

/// Bound 2. A select's receive case registers on an unbounded channel, then
/// loses to its other case and is cancelled, while a send and a close race:
/// a `try_recv` that says "closed and drained" is final, and a message is
/// received exactly when its send returned `Ok` (before the closer marked
/// the receive count, the cancelled case could hand its index back after a
/// `try_recv` had read it; found in review). Bound 3 runs past loom's
/// branch limit: a sender spins on the cell the cancel holds.
#[test]
fn cancelled_recv_case_keeps_closed_final() {
    model("cancelled_recv_case_keeps_closed_final", 2, || {
        let (tx, rx) = unbounded::<i32>();
        let (otx, orx) = unbounded::<i32>();
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let sel = thread::spawn(move || {
            select! {
                recv(rx2) -> v => v.ok(),
                recv(orx) -> _ => None,
            }
        });
        let s = thread::spawn(move || tx2.send(5).is_ok());
        // (Fails if the select already chose `rx2` and dropped `orx`.)
        let _ = otx.send(1);
        tx.close();
        let first = rx.try_recv();
        let selected = sel.join().unwrap();
        let sent = s.join().unwrap();
        assert_closed_is_final(first, rx.try_recv(), selected.is_some(), sent);
    });
}

/// Bound 2. Two rounds of a select loop (a receive with a timeout) on a
/// rendezvous channel behind a receiver blocked until a send: the second
/// round may take over the first round's skip (`adopt_skip` through a
/// registering case), racing the send. The message reaches exactly one
/// receiver, and the counts still line up afterwards.
#[test]
fn select_loop_takes_over_a_skip_on_rendezvous() {
    model("select_loop_takes_over_a_skip_on_rendezvous", 2, || {
        let (tx, rx) = bounded::<i32>(0);
        let rx2 = rx.clone();
        let blocked = thread::spawn(move || rx2.recv().unwrap());
        let tx2 = tx.clone();
        let s = thread::spawn(move || tx2.send(1).unwrap());
        let mut got = vec![];
        for _ in 0..2 {
            select! {
                recv(rx) -> v => got.push(v.unwrap()),
                default(Duration::from_millis(1)) => {}
            }
        }
        s.join().unwrap();
        if got.contains(&1) {
            tx.send(2).unwrap();
        }
        got.push(blocked.join().unwrap());
        got.sort_unstable();
        assert_eq!(got, if got.len() == 2 { vec![1, 2] } else { vec![1] });
        let t = thread::spawn(move || rx.recv().unwrap());
        tx.send(3).unwrap();
        assert_eq!(t.join().unwrap(), 3);
    });
}
