//! Timer channels: after, tick, never; alone and in selects.

use scalechan::{after, never, select, tick, RecvTimeoutError, TryRecvError};
use std::thread;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

#[test]
fn after_delivers_once_and_stays_open() {
    let start = Instant::now();
    let rx = after(10 * MS);
    assert_eq!(rx.capacity(), Some(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    let at = rx.recv().unwrap();
    assert!(at >= start + 10 * MS);
    assert!(Instant::now() >= at);
    // Never again, and not closed.
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert!(!rx.is_closed());
    assert_eq!(rx.recv_timeout(5 * MS), Err(RecvTimeoutError::Timeout));
}

#[test]
fn after_is_shared_by_clones() {
    let rx = after(MS);
    let rx2 = rx.clone();
    assert!(rx.same_channel(&rx2));
    thread::sleep(3 * MS);
    assert_eq!(rx.len(), 1);
    let a = rx.try_recv().is_ok();
    let b = rx2.try_recv().is_ok();
    assert!(a ^ b, "exactly one receiver gets the single message");
    assert_eq!(rx.len(), 0);
}

#[test]
fn after_zero_is_ready_at_once() {
    let rx = after(Duration::ZERO);
    assert!(rx.try_recv().is_ok());
}

#[test]
fn after_huge_never_fires() {
    let rx = after(Duration::MAX);
    assert_eq!(rx.recv_timeout(2 * MS), Err(RecvTimeoutError::Timeout));
}

#[test]
fn tick_on_the_grid_without_backlog() {
    let period = 5 * MS;
    let start = Instant::now();
    let rx = tick(period);
    let first = rx.recv().unwrap();
    assert!(first >= start + period);
    // Fall far behind: at most one stale tick, then the next grid point.
    thread::sleep(12 * period);
    // Read before the receives, so a preemption after them cannot fail
    // the check below (it did under load, with `now()` read after).
    let woke = Instant::now();
    let stale = rx.recv().unwrap();
    let next = rx.recv().unwrap();
    // The stale tick is the first one missed, as Go's buffered tick was.
    assert_eq!(stale, first + period, "the stale tick is the first missed");
    assert!(next > stale);
    // A backlog would deliver `stale + period`, 11 periods before `woke`;
    // without one, `next` is a grid point less than a period before the
    // stale tick was taken, which was after `woke`.
    assert!(next >= woke - period, "the tick after a stale one is fresh");
    // Grid points are whole periods apart from the first.
    let k = (next - first).as_nanos() % period.as_nanos();
    assert!(k < 1000, "off grid by {k} ns"); // Instant arithmetic rounding
}

#[test]
#[should_panic(expected = "period must be greater than zero")]
fn tick_zero_panics() {
    let _ = tick(Duration::ZERO);
}

#[test]
fn close_stops_timers_and_wakes_receivers() {
    let rx = tick(Duration::from_secs(3600));
    let rx2 = rx.clone();
    let h = thread::spawn(move || rx2.recv());
    thread::sleep(10 * MS);
    assert!(rx.close());
    assert!(!rx.close());
    assert!(h.join().unwrap().is_err());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    let a = after(MS);
    a.close();
    thread::sleep(2 * MS);
    assert_eq!(a.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn never_never_delivers() {
    let rx = never::<String>();
    assert_eq!(rx.capacity(), Some(0));
    assert!(rx.is_empty());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx.recv_timeout(2 * MS), Err(RecvTimeoutError::Timeout));
    rx.close();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn select_loop_with_timeout_and_tick() {
    let (tx, rx) = scalechan::unbounded();
    let ticker = tick(2 * MS);
    let deadline = after(40 * MS);
    let h = thread::spawn(move || {
        for i in 0..5 {
            tx.send(i).unwrap();
            thread::sleep(MS);
        }
    });
    let (mut msgs, mut ticks) = (0, 0);
    loop {
        select! {
            recv(rx) -> m => if m.is_ok() { msgs += 1 },
            recv(ticker) -> _ => ticks += 1,
            recv(deadline) -> _ => break,
        }
    }
    h.join().unwrap();
    assert_eq!(msgs, 5);
    assert!(ticks >= 2, "ticks: {ticks}");
}

#[test]
fn close_wakes_a_select_parked_on_a_timer() {
    // A select waits for a timer by its delivery time, parked on its own
    // waiter: closing the timer must still wake it, with the timer's case
    // reporting the close (and a select on a closed timer sees it at once).
    let timers: [fn() -> scalechan::Receiver<Instant>; 3] = [
        never,
        || after(Duration::from_secs(3600)),
        || tick(Duration::from_secs(3600)),
    ];
    for make in timers {
        let timer = make();
        let (_tx, rx) = scalechan::bounded::<u8>(0);
        thread::scope(|s| {
            let waiting = s.spawn(|| {
                select! {
                    recv(rx) -> _ => panic!("nothing was sent"),
                    recv(timer) -> m => m,
                }
            });
            thread::sleep(Duration::from_millis(20));
            assert!(!waiting.is_finished(), "the select did not wait");
            assert!(timer.close());
            assert!(waiting.join().unwrap().is_err());
        });
        let at_once = select! {
            recv(rx) -> _ => panic!("nothing was sent"),
            recv(timer) -> m => m,
        };
        assert!(at_once.is_err());
    }
}
