//! A fan-out / fan-in pipeline with bounded back-pressure:
//!
//! ```text
//! generator --bounded(8)--> N parsers --bounded(8)--> 1 aggregator
//! ```
//!
//! The generator formats records as text lines, the parsers (default 4) parse
//! them back, the aggregator sums them. Every stage ends when its input is
//! closed and drained: the generator's sender is dropped when it is done, and
//! the parsers' senders are dropped as each parser finishes. The program
//! checks the total against the closed form and that no queue ever held more
//! than its capacity.
//!
//! ```text
//! cargo run --release --example pipeline -- [parsers (default 4)] [records (default 200000)]
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

const CAP: usize = 8;

/// One parsed record.
struct Record {
    id: u64,
    value: u64,
}

fn parse(line: &str) -> Record {
    // "id=<n> value=<m>"
    let mut id = None;
    let mut value = None;
    for field in line.split(' ') {
        let (k, v) = field.split_once('=').expect("key=value");
        let v: u64 = v.parse().expect("a number");
        match k {
            "id" => id = Some(v),
            "value" => value = Some(v),
            other => panic!("unknown field {other}"),
        }
    }
    Record {
        id: id.expect("id"),
        value: value.expect("value"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let parsers: usize = args.next().map_or(4, |a| a.parse().expect("parsers"));
    let records: u64 = args.next().map_or(200_000, |a| a.parse().expect("records"));
    assert!(parsers > 0);

    let start = Instant::now();
    let (line_tx, line_rx) = scalechan::bounded::<String>(CAP);
    let (rec_tx, rec_rx) = scalechan::bounded::<Record>(CAP);
    // Highest len() seen on each queue (sampled by its producers).
    let max_lines = Arc::new(AtomicUsize::new(0));
    let max_recs = Arc::new(AtomicUsize::new(0));

    let generator = {
        let max_lines = Arc::clone(&max_lines);
        thread::spawn(move || {
            for id in 0..records {
                let line = format!("id={id} value={}", id * 3 + 1);
                line_tx.send(line).expect("parsers gone");
                max_lines.fetch_max(line_tx.len(), Ordering::Relaxed);
            }
            // Dropping line_tx (the only sender) closes the line channel.
        })
    };

    let parser_threads: Vec<_> = (0..parsers)
        .map(|_| {
            let line_rx = line_rx.clone();
            let rec_tx = rec_tx.clone();
            let max_recs = Arc::clone(&max_recs);
            thread::spawn(move || {
                let mut n = 0u64;
                for line in &line_rx {
                    rec_tx.send(parse(&line)).expect("aggregator gone");
                    max_recs.fetch_max(rec_tx.len(), Ordering::Relaxed);
                    n += 1;
                }
                n
            })
        })
        .collect();
    // Only the parsers hold senders now: the record channel closes when the
    // last parser finishes.
    drop(line_rx);
    drop(rec_tx);

    let aggregator = thread::spawn(move || {
        let (mut count, mut sum, mut id_sum) = (0u64, 0u64, 0u64);
        for r in rec_rx {
            count += 1;
            sum += r.value;
            id_sum += r.id;
        }
        (count, sum, id_sum)
    });

    generator.join().expect("generator panicked");
    let per_parser: Vec<u64> = parser_threads
        .into_iter()
        .map(|t| t.join().expect("parser panicked"))
        .collect();
    let (count, sum, id_sum) = aggregator.join().expect("aggregator panicked");
    let wall = start.elapsed();

    let expected_id_sum = records * records.saturating_sub(1) / 2;
    let expected_sum = 3 * expected_id_sum + records;
    println!(
        "generator -> {parsers} parsers -> aggregator, bounded({CAP}) between stages: \
         {records} records in {:.1} ms ({:.0} records/s)",
        wall.as_secs_f64() * 1e3,
        records as f64 / wall.as_secs_f64()
    );
    println!("records per parser: {per_parser:?}");
    println!(
        "max len seen: lines {}, records {} (capacity {CAP})",
        max_lines.load(Ordering::Relaxed),
        max_recs.load(Ordering::Relaxed)
    );
    println!("aggregated: count {count}, sum of values {sum} (expected {expected_sum})");

    assert_eq!(count, records, "records lost or duplicated");
    assert_eq!(per_parser.iter().sum::<u64>(), records);
    assert_eq!(id_sum, expected_id_sum, "wrong set of ids");
    assert_eq!(sum, expected_sum, "wrong total");
    assert!(max_lines.load(Ordering::Relaxed) <= CAP);
    assert!(max_recs.load(Ordering::Relaxed) <= CAP);
    println!("OK");
}
