use scalechan::*;
use std::thread;
use std::time::Duration;

#[test]
fn smoke_all_kinds() {
    for cap in [None, Some(0), Some(1), Some(3)] {
        let (tx, rx) = match cap {
            None => unbounded(),
            Some(c) => bounded(c),
        };
        let n = if cfg!(miri) { 200 } else { 20_000u64 };
        let h = thread::spawn(move || {
            for i in 0..n {
                tx.send(i).unwrap();
            }
        });
        let mut exp = 0;
        for v in rx.iter() {
            assert_eq!(v, exp);
            exp += 1;
        }
        assert_eq!(exp, n);
        h.join().unwrap();
    }
}

#[test]
fn timeouts() {
    let (tx, rx) = bounded::<i32>(0);
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(10)),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(
        tx.send_timeout(1, Duration::from_millis(10)),
        Err(SendTimeoutError::Timeout(1))
    );
    let h = thread::spawn(move || rx.recv());
    thread::sleep(Duration::from_millis(20));
    tx.send(5).unwrap();
    assert_eq!(h.join().unwrap(), Ok(5));
}
