//! Turns criterion's saved results into docs/bench/REPORT.md and one PNG
//! plot per workload (docs/bench/<workload>.png).
//!
//! ```text
//! cargo bench                                     # or benches/quick.sh, which runs all of this
//! cargo run --release --example bench_memory -- docs/bench/memory.md
//! cargo run --release --example bench_report      # [-- <criterion dir> <out dir>]
//! ```
//!
//! It reads every `<criterion dir>/**/new/benchmark.json` (group, library,
//! thread count, messages per iteration) with the `estimates.json` beside
//! it (the median's point estimate, ns per iteration), so it reports
//! whatever is in the directory: clear it before a run (quick.sh does) so
//! that every figure comes from the same run. The criterion directory
//! defaults to `$CARGO_TARGET_DIR/criterion`, else `target/criterion`; the
//! output directory to `docs/bench`.
//!
//! Per workload (criterion group) the report has a table of time per
//! message for each library at each thread count, with the ratio to
//! crossbeam-channel (or, for the queue groups, to the crossbeam queue of
//! the same kind), and a log-log plot of throughput (messages per second)
//! against the thread count, one line per library. A `machine.txt` in the
//! criterion directory names the machine the results come from, when the
//! run was made on another (docs/bench/16-cores: a lent 16-core machine).
//! The plots need a TrueType font (text is drawn with ab_glyph, so no
//! system libraries): the first of a few usual paths that exists, or
//! `SCALECHAN_REPORT_FONT`.

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// One benchmark's result.
struct Point {
    library: String,
    threads: u32,
    /// Median ns per message (per operation for the queue groups).
    ns: f64,
}

/// One criterion group.
struct Workload {
    name: String,
    points: Vec<Point>,
}

impl Workload {
    /// Libraries in report order: the known ones first, in a fixed order,
    /// then any others by name.
    fn libraries(&self) -> Vec<String> {
        let mut libs: Vec<String> = Vec::new();
        for p in &self.points {
            if !libs.contains(&p.library) {
                libs.push(p.library.clone());
            }
        }
        libs.sort_by_key(|l| (lib_rank(l), l.clone()));
        libs
    }

    fn threads(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self.points.iter().map(|p| p.threads).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    fn ns(&self, library: &str, threads: u32) -> Option<f64> {
        self.points
            .iter()
            .find(|p| p.library == library && p.threads == threads)
            .map(|p| p.ns)
    }

    /// The library every ratio is taken against.
    fn reference(&self) -> Option<String> {
        let libs = self.libraries();
        libs.iter()
            .find(|l| *l == "crossbeam-channel")
            .or_else(|| libs.iter().find(|l| l.starts_with("crossbeam")))
            .cloned()
    }

    /// The library under test in this group (scalechan, Scq or Lscq).
    fn ours(&self) -> Option<String> {
        self.libraries()
            .into_iter()
            .find(|l| l == "scalechan" || l == "Scq" || l == "Lscq")
    }

    /// The fastest library at `threads`, with its time.
    fn fastest(&self, threads: u32) -> Option<(String, f64)> {
        self.points
            .iter()
            .filter(|p| p.threads == threads)
            .min_by(|a, b| a.ns.total_cmp(&b.ns))
            .map(|p| (p.library.clone(), p.ns))
    }
}

/// Fixed library order (and plot colour): ours first, then the peers.
const LIBS: [(&str, RGBColor); 11] = [
    ("scalechan", RGBColor(214, 39, 40)),
    ("crossbeam-channel", RGBColor(31, 119, 180)),
    ("flume", RGBColor(44, 160, 44)),
    ("kanal", RGBColor(255, 127, 14)),
    ("std mpsc", RGBColor(127, 127, 127)),
    ("Scq", RGBColor(214, 39, 40)),
    ("crossbeam ArrayQueue", RGBColor(31, 119, 180)),
    ("concurrent-queue bounded", RGBColor(148, 103, 189)),
    ("Lscq", RGBColor(214, 39, 40)),
    ("crossbeam SegQueue", RGBColor(31, 119, 180)),
    ("concurrent-queue unbounded", RGBColor(148, 103, 189)),
];

fn lib_rank(name: &str) -> usize {
    LIBS.iter()
        .position(|(n, _)| *n == name)
        .unwrap_or(LIBS.len())
}

fn lib_color(name: &str, fallback: usize) -> RGBColor {
    LIBS.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| *c)
        .unwrap_or_else(|| {
            let c = Palette99::pick(fallback).to_rgba();
            RGBColor(c.0, c.1, c.2)
        })
}

/// What each known workload does and what one "message" is there. Groups
/// not listed still get a table and a plot, without a description.
const DESCRIPTIONS: &[(&str, &str)] = &[
    ("chan_nonblocking", "Go's ChanNonblocking: P threads `try_recv` on one empty `bounded(0)`. Per call. std: `Mutex<Receiver>` at P > 1."),
    ("chan_closed", "Go's ChanClosed: as chan_nonblocking on a closed, empty `bounded(0)` (every call must report closed). Per call. std: `Mutex<Receiver>` at P > 1."),
    ("chan_uncontended", "Go's ChanUncontended: each of P threads owns a `bounded(100)` and sends 100, then receives 100. Per message."),
    ("chan_recv_timeout", "Not Go's: chan_uncontended with every receive a `recv_timeout` (60 s) that finds its message waiting. Per message."),
    ("chan_contended", "Go's ChanContended: P threads share one `bounded(100 P)`; each sends 100, then receives 100. Per message. std: `Mutex<Receiver>` at P > 1."),
    ("chan_sync", "Go's ChanSync: P pairs of threads, each pair ping-ponging over its own two `bounded(0)` (2P threads). Per message (a round trip is 2)."),
    ("chan_sync_one_cpu", "chan_sync with all 2P threads pinned to one CPU (Go's ChanSync at -cpu=1). Per message."),
    ("chan_sync_work", "Go's ChanSyncWork: chan_sync with 100 units of local work after every operation. Per message."),
    ("chan_prod_cons_0", "Go's ChanProdCons0: P producers and P consumers over one `bounded(0)` (2P threads). Per message. std: `Mutex<Receiver>` at P > 1."),
    ("chan_prod_cons_10", "Go's ChanProdCons10: as chan_prod_cons_0 over `bounded(10)`."),
    ("chan_prod_cons_100", "Go's ChanProdCons100: as chan_prod_cons_0 over `bounded(100)`."),
    ("chan_prod_cons_work_0", "Go's ChanProdConsWork0: chan_prod_cons_0 with 100 units of local work per message on both sides."),
    ("chan_prod_cons_work_10", "Go's ChanProdConsWork10: chan_prod_cons_10 with local work."),
    ("chan_prod_cons_work_100", "Go's ChanProdConsWork100: chan_prod_cons_100 with local work."),
    ("chan_sem", "Go's ChanSem: a `bounded::<()>(P)` as a semaphore; P threads each send (acquire) then receive (release). Per acquire/release. std: `Mutex<Receiver>` at P > 1."),
    ("chan_creation", "Go's ChanCreation: P threads each create a `bounded(1)`, send and receive one message, drop it. Per channel."),
    ("chan_popular", "Go's ChanPopular (a select benchmark): P workers each select a receive over one shared `bounded(0)` that never fires and their own `bounded(0)`, fed round-robin by the main thread; every parked select registers on the shared channel and withdraws. Per message. (Select libraries only.)"),
    ("select_uncontended/recv", "Go's SelectUncontended: one thread, two `bounded(1)`, one token: each op selects a receive over both and sends the token on the other. Per select."),
    ("select_uncontended/send", "The mirror image: each op selects a send over two `bounded(1)` (one has room), then a plain receive empties the other. Per select."),
    ("select_nonblock/single", "Go's SelectNonblock: four one-case selects with `default`, nothing ever ready (empty and full, rendezvous and `bounded(1)`). Per op of four selects."),
    ("select_nonblock/multi", "One select over the same four cases plus `default`. Per select."),
    ("select_contended", "Go's SelectAsyncContended: P threads, each with a token, share two `bounded(P)`; each op selects a receive over both and sends the token on the other. Per select."),
    ("select_sync_contended", "Go's SelectSyncContended: P receivers select over three shared `bounded(0)`; P helpers select a send over the three or a receive on `done` (2P threads). Per message. (No flume: its Selector can complete two send arms.)"),
    ("select_prodcons_0", "Go's SelectProdCons over `bounded(0)`: P producers select a send or a receive on a quit channel or an hour timer; P consumers select a receive or the same two. Per message. (flume at P = 1 only: its Selector can miss the close with more.)"),
    ("select_prodcons_1", "select_prodcons_0 over `bounded(1)`."),
    ("select_prodcons_10", "select_prodcons_0 over `bounded(10)`."),
    ("unbounded_mpmc", "Seed 004's throughput, its Unbounded: P producers and P consumers over `unbounded()`. Per message. std: `Mutex<Receiver>` at P > 1."),
    ("bounded_mpmc", "Seed 004's throughput, its Bounded1K: P producers and P consumers over `bounded(1024)`. Per message. std: `Mutex<Receiver>` at P > 1."),
    ("bounded/queue_pair", "Scq vs peers (capacity 4096): each of P threads pushes then pops. Per push+pop pair."),
    ("bounded/queue_enqueue_only", "Pushes only, in rounds of 4096 drained untimed. Per push."),
    ("bounded/queue_dequeue_empty", "Pops from an empty queue. Per pop."),
    ("bounded/queue_50e50d", "50% pushes, 50% pops at random. Per attempted operation."),
    ("bounded/queue_30e70d", "30% pushes, 70% pops. Per attempted operation."),
    ("bounded/queue_70e30d", "70% pushes, 30% pops. Per attempted operation."),
    ("unbounded/queue_pair", "Lscq vs peers: each of P threads pushes then pops. Per push+pop pair."),
    ("unbounded/queue_enqueue_only", "Pushes only, in rounds drained untimed. Per push."),
    ("unbounded/queue_dequeue_empty", "Pops from an empty queue. Per pop."),
    ("unbounded/queue_50e50d", "50% pushes, 50% pops at random. Per attempted operation."),
    ("unbounded/queue_30e70d", "30% pushes, 70% pops. Per attempted operation."),
    ("unbounded/queue_70e30d", "70% pushes, 30% pops. Per attempted operation."),
];

fn description(group: &str) -> Option<&'static str> {
    DESCRIPTIONS
        .iter()
        .find(|(g, _)| *g == group)
        .map(|(_, d)| *d)
}

/// Report order of a group: the order of [`DESCRIPTIONS`], unknown last.
fn group_rank(group: &str) -> usize {
    DESCRIPTIONS
        .iter()
        .position(|(g, _)| *g == group)
        .unwrap_or(DESCRIPTIONS.len())
}

/// Every `new/benchmark.json` under `dir`, depth first.
fn find_results(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") {
                let b = path.join("benchmark.json");
                if b.is_file() {
                    out.push(b);
                }
            } else {
                find_results(&path, out);
            }
        }
    }
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loads every result; also returns the oldest and newest modification
/// times of the estimates (the span of the run).
fn load(dir: &Path) -> (Vec<Workload>, Option<(SystemTime, SystemTime)>) {
    let mut files = Vec::new();
    find_results(dir, &mut files);
    let mut groups: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let mut span: Option<(SystemTime, SystemTime)> = None;
    for bench in files {
        let meta = read_json(&bench);
        let est_path = bench.with_file_name("estimates.json");
        let est = read_json(&est_path);
        let mut group = meta["group_id"].as_str().unwrap_or_default().to_string();
        let library = meta["function_id"].as_str().unwrap_or_default().to_string();
        // `<group>/<library>/<threads>` ids form a sweep; a single-threaded
        // group's variants (`select_nonblock/<library>/multi`) each become
        // a workload of their own, at P = 1.
        let value = meta["value_str"].as_str().unwrap_or_default();
        let threads = match value.parse() {
            Ok(threads) => threads,
            Err(_) if !value.is_empty() => {
                group = format!("{group}/{value}");
                1
            }
            Err(_) => {
                eprintln!("skipping {} (no thread count)", bench.display());
                continue;
            }
        };
        let per_iter = meta["throughput"]["Elements"].as_f64().unwrap_or(1.0);
        let median = est["median"]["point_estimate"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}: no median", est_path.display()));
        if let Ok(t) = fs::metadata(&est_path).and_then(|m| m.modified()) {
            span = Some(match span {
                None => (t, t),
                Some((a, b)) => (a.min(t), b.max(t)),
            });
        }
        groups.entry(group).or_default().push(Point {
            library,
            threads,
            ns: median / per_iter,
        });
    }
    let mut workloads: Vec<Workload> = groups
        .into_iter()
        .map(|(name, points)| Workload { name, points })
        .collect();
    workloads.sort_by_key(|w| (group_rank(&w.name), w.name.clone()));
    (workloads, span)
}

/// A time in ns with about three significant digits.
fn fmt_ns(ns: f64) -> String {
    if ns >= 100.0 {
        format!("{ns:.0}")
    } else if ns >= 10.0 {
        format!("{ns:.1}")
    } else {
        format!("{ns:.2}")
    }
}

/// A rate with an SI suffix (1.5M, 20k).
fn fmt_si(v: f64) -> String {
    let (div, suffix) = if v >= 1e9 {
        (1e9, "G")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / div;
    if x >= 10.0 || x.fract() == 0.0 {
        format!("{x:.0}{suffix}")
    } else {
        format!("{x:.1}{suffix}")
    }
}

/// UTC "YYYY-MM-DD HH:MM" of a time (civil-from-days on the Unix day count).
fn fmt_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Shift the epoch to 0000-03-01 so leap days end each 400-year era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// The machine, as the report names it.
fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!(", Linux {}", s.trim()))
        .unwrap_or_default();
    format!("{cpus} CPUs (`nproc`), \"{model}\"{kernel}")
}

/// Output of a command, trimmed, or "unknown".
fn command(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `name version` for the peers, from Cargo.lock.
fn peer_versions() -> String {
    let lock = fs::read_to_string("Cargo.lock").unwrap_or_default();
    let wanted = [
        "crossbeam-channel",
        "flume",
        "kanal",
        "crossbeam-queue",
        "concurrent-queue",
        "criterion",
    ];
    let mut found = Vec::new();
    let mut name = "";
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = n.trim_matches('"');
        } else if let Some(v) = line.strip_prefix("version = ") {
            if wanted.contains(&name) {
                found.push(format!("{name} {}", v.trim_matches('"')));
            }
        }
    }
    found.join(", ")
}

/// Registers a TrueType font as "sans-serif" for plotters; false if none.
fn load_font() -> bool {
    let mut candidates: Vec<String> = std::env::var("SCALECHAN_REPORT_FONT").into_iter().collect();
    candidates.extend(
        [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
            "/System/Library/Fonts/Supplemental/Arial.ttf",
            "C:\\Windows\\Fonts\\arial.ttf",
        ]
        .map(String::from),
    );
    for path in candidates {
        if let Ok(bytes) = fs::read(&path) {
            // plotters keeps the font for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    false
}

/// Throughput (messages/s) against threads, log-log, one line per library.
fn plot(w: &Workload, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let threads = w.threads();
    let libs = w.libraries();
    let series: Vec<(String, Vec<(f64, f64)>)> = libs
        .iter()
        .map(|lib| {
            let pts = threads
                .iter()
                .filter_map(|&t| w.ns(lib, t).map(|ns| (f64::from(t).log2(), 1e9 / ns)))
                .collect();
            (lib.clone(), pts)
        })
        .collect();
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y));
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    // x is log2 of the thread count on a linear axis, so that the ticks
    // fall exactly on the thread counts that were run.
    let (tmin, tmax) = (
        f64::from(*threads.first().ok_or("no points")?).log2(),
        f64::from(*threads.last().ok_or("no points")?).log2(),
    );

    let root = BitMapBackend::new(path, (1120, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    // The legend gets its own strip on the right, so it never hides a line.
    let (plot_area, legend_area) = root.split_horizontally(830);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(
            format!("{}: throughput vs threads", w.name),
            ("sans-serif", 26),
        )
        .margin(18)
        .x_label_area_size(55)
        .y_label_area_size(85)
        .build_cartesian_2d(
            (tmin - 0.25)..(tmax + 0.25),
            ((ymin / 1.6)..(ymax * 1.6))
                .log_scale()
                .with_key_points(nice_log_ticks(ymin / 1.6, ymax * 1.6)),
        )?;
    let x_fmt = |x: &f64| {
        // Label only the thread counts that were run.
        match threads
            .iter()
            .find(|&&t| (f64::from(t).log2() - x).abs() < 1e-6)
        {
            Some(t) => t.to_string(),
            None => String::new(),
        }
    };
    let y_fmt = |y: &f64| fmt_si(*y);
    chart
        .configure_mesh()
        .x_desc(if w.name.contains("queue") {
            "threads"
        } else {
            "threads P (Go's -cpu; producer/consumer and ping-pong shapes run 2P)"
        })
        .y_desc(if w.name.contains("queue") {
            "operations per second (log)"
        } else {
            "messages per second (log)"
        })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(WHITE.mix(0.0))
        .disable_x_mesh()
        .x_labels(((tmax - tmin) * 4.0) as usize + 2)
        .draw()?;
    // Vertical guides at the measured thread counts only (the log axis's
    // own grid has lines at 3, 5, 6, ... too).
    for &t in &threads {
        let x = f64::from(t).log2();
        chart.draw_series(LineSeries::new(
            [(x, ymin / 1.6), (x, ymax * 1.6)],
            BLACK.mix(0.15),
        ))?;
    }
    for (i, (lib, pts)) in series.iter().enumerate() {
        let color = lib_color(lib, i);
        let width = if Some(lib) == w.ours().as_ref() { 4 } else { 2 };
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(width)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        let y = 70 + 28 * i as i32;
        legend_area.draw(&PathElement::new(
            [(8, y), (38, y)],
            color.stroke_width(width),
        ))?;
        legend_area.draw(&Text::new(
            lib.clone(),
            (46, y - 9),
            ("sans-serif", 16).into_font(),
        ))?;
    }
    root.present()?;
    Ok(())
}

/// 1-2-5 ticks per decade within `lo..hi` (plotters' own log ticks leave
/// some decades unlabelled); only 1s per decade when the range is wide.
fn nice_log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let steps: &[f64] = if hi / lo > 1e4 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut ticks = Vec::new();
    let mut decade = 10f64.powi(lo.log10().floor() as i32);
    while decade <= hi {
        for &s in steps {
            let t = decade * s;
            if (lo..=hi).contains(&t) {
                ticks.push(t);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// File name for a workload's plot.
fn plot_name(group: &str) -> String {
    format!("{}.png", group.replace(['/', ' '], "_"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let criterion_dir = args.next().map(PathBuf::from).unwrap_or_else(|| {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
        Path::new(&target).join("criterion")
    });
    let out_dir = PathBuf::from(args.next().unwrap_or_else(|| "docs/bench".into()));
    fs::create_dir_all(&out_dir).expect("creating the output directory");

    let (workloads, span) = load(&criterion_dir);
    assert!(
        !workloads.is_empty(),
        "no criterion results under {}: run the benches first",
        criterion_dir.display()
    );
    let have_font = load_font();

    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# Benchmark report: scalechan vs its peers\n");
    let _ = writeln!(
        w,
        "Generated by `examples/bench_report.rs` from criterion's saved estimates; \
         regenerate with `benches/quick.sh` (quick mode) or `cargo bench` followed by \
         the two examples (see the script).\n"
    );
    // A run made elsewhere (the 16-core machine) names its machine in the
    // criterion directory; the report is then made here from its results.
    match fs::read_to_string(criterion_dir.join("machine.txt")) {
        Ok(lent) => {
            let _ = writeln!(
                w,
                "> **Machine:** {}. Nothing else ran on it, and every P up to 16 runs \
                 on cores of its own (the producer/consumer and ping-pong shapes, 2P \
                 threads, are oversubscribed at P=16 only): these rows show parallel \
                 scaling. The quick mode's samples are short, so single cells can be \
                 off by 20% or more; compare libraries within a table.\n",
                lent.trim()
            );
        }
        Err(_) => {
            let _ = writeln!(
                w,
                "> **Noisy numbers.** Machine: {}. This is a shared development machine: \
                 other engineers were compiling on it while these benchmarks ran, so \
                 single cells can be off by 2x or more, and with 2 cores every P above 1 \
                 (2P threads for the producer/consumer and ping-pong shapes) is \
                 oversubscribed on purpose: those cells measure behaviour under \
                 preemption (spinning versus parking), not parallel scaling. All medians \
                 and ratios below come from one run; compare libraries within a table, \
                 not with other runs.\n",
                machine()
            );
        }
    }
    let run_info = fs::read_to_string(criterion_dir.join("run-info.txt")).unwrap_or_default();
    let _ = writeln!(w, "- Run: {}", run_info.trim().replace('\n', "; "));
    if let Some((a, b)) = span {
        let _ = writeln!(
            w,
            "- Results written between {} and {}",
            fmt_utc(a),
            fmt_utc(b)
        );
    }
    let _ = writeln!(
        w,
        "- Report generated at commit {}; {}; peers: {}",
        command("git", &["rev-parse", "--short", "HEAD"]),
        command("rustc", &["--version"]),
        peer_versions()
    );
    let _ = writeln!(
        w,
        "- Cells: median time per message in ns (per operation for the queue groups), \
         and in parentheses the ratio to crossbeam-channel (queue groups: to the \
         crossbeam queue of the same kind); below 1.00 is faster than crossbeam. \
         **Bold**: fastest at that thread count. P is the thread count in the sense of \
         Go's `-cpu`; each workload says how many threads it runs.\n"
    );

    // Where ours is not the fastest.
    let _ = writeln!(
        w,
        "## Summary: where scalechan (Scq, Lscq) is not the fastest\n"
    );
    let mut wins = 0;
    let mut cells = 0;
    let mut rows = String::new();
    for wl in &workloads {
        let Some(ours) = wl.ours() else { continue };
        for t in wl.threads() {
            let (Some(mine), Some((best, best_ns))) = (wl.ns(&ours, t), wl.fastest(t)) else {
                continue;
            };
            cells += 1;
            if best == ours {
                wins += 1;
                continue;
            }
            let _ = writeln!(
                rows,
                "| {} | {} | {} | {} | {} | {:.2} |",
                wl.name,
                t,
                fmt_ns(mine),
                best,
                fmt_ns(best_ns),
                mine / best_ns
            );
        }
    }
    let _ = writeln!(
        w,
        "Ours is fastest in {wins} of {cells} (workload, P) cells. The others, with \
         our time over the fastest library's (above 1.00: slower by that factor):\n"
    );
    let _ = writeln!(
        w,
        "| workload | P | ours ns | fastest | its ns | ours / fastest |"
    );
    let _ = writeln!(w, "| --- | ---: | ---: | --- | ---: | ---: |");
    w.push_str(&rows);
    let _ = writeln!(w);

    // One section per workload.
    let _ = writeln!(w, "## Workloads\n");
    for wl in &workloads {
        let threads = wl.threads();
        let reference = wl.reference();
        let _ = writeln!(w, "### {}\n", wl.name);
        if let Some(d) = description(&wl.name) {
            let _ = writeln!(w, "{d}\n");
        }
        let _ = write!(w, "| library |");
        for t in &threads {
            let _ = write!(w, " P={t} |");
        }
        let _ = write!(w, "\n| --- |");
        for _ in &threads {
            let _ = write!(w, " ---: |");
        }
        let _ = writeln!(w);
        for lib in wl.libraries() {
            let _ = write!(w, "| {lib} |");
            for &t in &threads {
                match wl.ns(&lib, t) {
                    None => {
                        let _ = write!(w, " - |");
                    }
                    Some(ns) => {
                        let ratio = reference
                            .as_ref()
                            .and_then(|r| wl.ns(r, t))
                            .map(|r| format!(" ({:.2})", ns / r))
                            .unwrap_or_default();
                        let fastest = wl.fastest(t).is_some_and(|(f, _)| f == lib);
                        let cell = format!("{}{ratio}", fmt_ns(ns));
                        if fastest {
                            let _ = write!(w, " **{cell}** |");
                        } else {
                            let _ = write!(w, " {cell} |");
                        }
                    }
                }
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w);
        if have_font && threads.len() > 1 {
            let name = plot_name(&wl.name);
            match plot(wl, &out_dir.join(&name)) {
                Ok(()) => {
                    let _ = writeln!(w, "![{} throughput]({name})\n", wl.name);
                }
                Err(e) => eprintln!("plot {}: {e}", wl.name),
            }
        }
    }
    if !have_font {
        let _ = writeln!(
            w,
            "(No plots: no TrueType font found; set SCALECHAN_REPORT_FONT.)\n"
        );
    }

    let _ = writeln!(w, "## Memory\n");
    match fs::read_to_string(out_dir.join("memory.md")) {
        Ok(mem) => w.push_str(&mem),
        Err(_) => {
            let _ = writeln!(
                w,
                "Not measured in this run: `cargo run --release --example bench_memory -- {}/memory.md`.",
                out_dir.display()
            );
        }
    }

    let report = out_dir.join("REPORT.md");
    fs::write(&report, md).expect("writing the report");
    println!("wrote {}", report.display());
}
