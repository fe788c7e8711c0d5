//! The quick benchmark report of the performance targets (`lumina::rules`): one table, in well under a minute.
//!
//! ```text
//! cargo run --release --example bench_report --features bench         # without Boost
//! cargo run --release --example bench_report --features boost-bench   # with Boost.Signals2
//! cargo run --release --example bench_report --features bench -- --scaling [TEXT]
//! ```
//!
//! The last section is the scaling one (rule N4, `bench_report/scaling.rs`): every operation
//! whose cost the rule bounds, at 1 000 and 16 000 of the state it works on, with a verdict per
//! row (at most 2x from the small size to the large); `-- --scaling` prints it alone (in about
//! 5 s), `-- --scaling TEXT` only its rows whose name contains TEXT.
//!
//! For each benchmark it prints the time per subscriber call of every system, the ratio to the
//! floor measured in the same run (a raw `Vec<Box<dyn Fn>>` loop), and heap allocations per
//! operation, counted by the tests' counting global allocator (`tests/support/counting_alloc.rs`).
//! Systems are measured round-robin, so the ratios compare runs made under the same load (the
//! machine may be shared), in several passes spread over the run: a pass's figure is the median
//! over its rounds, and each cell is the best pass (the usual best-of-k estimate: load from the
//! machine's other users only ever adds time, and it slows a system that executes more
//! instructions more than the floor). The range of the per-pass ratios shows how noisy the run
//! was. The last lines check the targets.

#[path = "../benches/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::System;

/// The scaling section (rule N4).
#[path = "bench_report/scaling.rs"]
mod scaling;

/// The tests' counting `#[global_allocator]` (per-thread count), shared with this report.
#[path = "../tests/support/counting_alloc.rs"]
mod counting_alloc;

/// Heap allocations made by `f`: Rust's on this thread, plus C++'s (`operator new`, counted by
/// the shim) when the Boost shim is linked.
fn allocations_in<R>(f: impl FnOnce() -> R) -> (u64, R) {
    #[cfg(lumina_boost_shim)]
    let cpp = common::boost::lumina_boost_allocations;
    #[cfg(not(lumina_boost_shim))]
    let cpp = || 0;
    let cpp_before = cpp();
    let (rust, result) = counting_alloc::allocations_in(f);
    (rust + (cpp() - cpp_before), result)
}

/// Allocations per call of `op`, averaged over `times` calls (after one warm-up call).
fn allocations_per(times: u64, mut op: impl FnMut()) -> f64 {
    op();
    let (count, ()) = allocations_in(|| {
        for _ in 0..times {
            op();
        }
    });
    count as f64 / times as f64
}

/// Passes over all benchmarks, spread over the run: each cell is the best pass (see `main`).
const PASSES: usize = 9;
/// Round-robin rounds per benchmark in one pass; a pass's figure is the median over them.
const ROUNDS: usize = 15;
/// Target duration of one timed sample.
const SAMPLE: Duration = Duration::from_micros(300);

/// One system in one benchmark: how to run the operation many times, and how many subscriber
/// calls one operation makes.
struct Case<'a> {
    system: &'static str,
    n: String,
    calls_per_op: f64,
    /// Runs the operation the given number of times, in a loop compiled for this operation (no
    /// dynamic call per operation, which would add the same cost to every system and dilute
    /// the ratios).
    run: Box<dyn FnMut(u64) + 'a>,
    allocs: String,
}

impl<'a> Case<'a> {
    fn new(
        system: &'static str,
        n: impl ToString,
        calls_per_op: usize,
        mut op: impl FnMut() + 'a,
    ) -> Self {
        let allocs = format!("{:.2}", allocations_per(200, &mut op));
        let mut case = Case::measured_only(system, n, calls_per_op, op);
        case.allocs = allocs;
        case
    }

    /// A case whose allocations are not counted here (the caller may fill them in).
    fn measured_only(
        system: &'static str,
        n: impl ToString,
        calls_per_op: usize,
        mut op: impl FnMut() + 'a,
    ) -> Self {
        Case {
            system,
            n: n.to_string(),
            calls_per_op: calls_per_op as f64,
            run: Box::new(move |times| {
                for _ in 0..times {
                    op();
                }
            }),
            allocs: String::new(),
        }
    }
}

/// A row of the table.
struct Row {
    benchmark: &'static str,
    system: String,
    n: String,
    ns_per_call: Option<f64>,
    ratio: Option<f64>,
    /// Lowest and highest of the per-pass ratios.
    ratio_spread: Option<(f64, f64)>,
    allocs: String,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// One benchmark: its systems (the first is the floor of the ratios), measured round-robin in
/// every pass.
struct Group<'a> {
    benchmark: &'static str,
    cases: Vec<Case<'a>>,
    rounds: usize,
    /// Operations per timed sample, per case.
    iterations: Vec<u64>,
    /// Per case, per pass: the median ns per subscriber call over the pass's rounds.
    pass_ns: Vec<Vec<f64>>,
    /// Per case, per pass: the median over the pass's rounds of the ratio to the floor's sample
    /// of the same round.
    pass_ratios: Vec<Vec<f64>>,
}

/// What the report measures, in table order: benchmarks, and rows that could not be measured.
enum Planned<'a> {
    Group(Group<'a>),
    Skipped(Row),
}

/// A benchmark of `cases` with the default number of rounds per pass.
fn measure<'a>(benchmark: &'static str, cases: Vec<Case<'a>>) -> Planned<'a> {
    measure_rounds(benchmark, cases, ROUNDS)
}

/// [`measure`] with a given number of rounds per pass. Calibrates each case now: how many
/// operations make one sample of about `SAMPLE`.
fn measure_rounds<'a>(
    benchmark: &'static str,
    mut cases: Vec<Case<'a>>,
    rounds: usize,
) -> Planned<'a> {
    let iterations = cases
        .iter_mut()
        .map(|case| {
            let mut iterations = 1u64;
            loop {
                let start = Instant::now();
                (case.run)(iterations);
                let elapsed = start.elapsed();
                if elapsed >= SAMPLE / 4 || iterations >= 1 << 30 {
                    let per_op = elapsed.as_secs_f64() / iterations as f64;
                    break ((SAMPLE.as_secs_f64() / per_op) as u64).max(1);
                }
                iterations *= 4;
            }
        })
        .collect();
    let count = cases.len();
    Planned::Group(Group {
        benchmark,
        cases,
        rounds,
        iterations,
        pass_ns: vec![Vec::new(); count],
        pass_ratios: vec![Vec::new(); count],
    })
}

impl Group<'_> {
    /// One pass: `rounds` rounds, each timing one sample of every case in turn, so a burst of
    /// load from the machine's other users hits the floor and the systems alike.
    fn run_pass(&mut self) {
        let mut samples = vec![Vec::with_capacity(self.rounds); self.cases.len()];
        for _ in 0..self.rounds {
            for ((case, &iterations), samples) in self
                .cases
                .iter_mut()
                .zip(&self.iterations)
                .zip(&mut samples)
            {
                let start = Instant::now();
                (case.run)(iterations);
                let ns = start.elapsed().as_secs_f64() * 1e9;
                samples.push(ns / (iterations as f64 * case.calls_per_op));
            }
        }
        let floor = samples[0].clone();
        for (index, samples) in samples.iter_mut().enumerate() {
            let mut ratios: Vec<f64> = samples.iter().zip(&floor).map(|(s, f)| s / f).collect();
            self.pass_ratios[index].push(median(&mut ratios));
            self.pass_ns[index].push(median(samples));
        }
    }

    /// The rows: per system its best pass (the lowest per-pass median), the ratio of the bests,
    /// and the range of the per-pass ratios.
    fn rows(&self) -> Vec<Row> {
        let floor_best = min(&self.pass_ns[0]);
        self.cases
            .iter()
            .zip(self.pass_ns.iter().zip(&self.pass_ratios))
            .map(|(case, (ns, ratios))| Row {
                benchmark: self.benchmark,
                system: case.system.to_owned(),
                n: case.n.clone(),
                ns_per_call: Some(min(ns)),
                ratio: Some(min(ns) / floor_best),
                ratio_spread: Some((min(ratios), max(ratios))),
                allocs: case.allocs.clone(),
            })
            .collect()
    }
}

fn skipped(
    benchmark: &'static str,
    system: &str,
    n: impl ToString,
    reason: &str,
) -> Planned<'static> {
    Planned::Skipped(Row {
        benchmark,
        system: system.to_owned(),
        n: n.to_string(),
        ns_per_call: None,
        ratio: None,
        ratio_spread: None,
        allocs: format!("skipped: {reason}"),
    })
}

/// One broadcast case for system `S` with `n` subscribers; checks every subscriber ran.
fn broadcast_case<S: System + 'static>(n: usize) -> Case<'static> {
    let system = S::with_subscribers(n);
    common::take_sink();
    system.broadcast(1);
    assert_eq!(
        common::take_sink(),
        n as u64,
        "{} did not call every subscriber",
        S::NAME
    );
    // N = 0: the time of one broadcast.
    Case::new(S::NAME, n, n.max(1), move || system.broadcast(black_box(1)))
}

fn nested_case<S: System + 'static>() -> Case<'static> {
    let calls = common::NESTED_WIDTH * common::NESTED_DEPTH as usize;
    let system = S::with_subscribers(common::NESTED_WIDTH);
    common::take_sink();
    system.broadcast(1);
    assert_eq!(
        common::take_sink(),
        calls as u64,
        "{} nested calls",
        S::NAME
    );
    let n = format!("{}x{}", common::NESTED_WIDTH, common::NESTED_DEPTH);
    Case::new(S::NAME, n, calls, move || system.broadcast(black_box(1)))
}

fn broadcasts() -> Vec<Planned<'static>> {
    let mut rows = Vec::new();
    for n in [0, 1, 4, 16, 1024] {
        #[cfg_attr(not(lumina_boost_shim), allow(unused_mut))]
        let mut cases = vec![
            broadcast_case::<common::Floor>(n),
            broadcast_case::<common::Lumina>(n),
            broadcast_case::<common::LuminaSync>(n),
            broadcast_case::<common::Signals2>(n),
        ];
        #[cfg(lumina_boost_shim)]
        cases.push(broadcast_case::<common::boost::BoostSignals2>(n));
        rows.push(measure("broadcast", cases));
        if let Some(reason) = common::boost_skipped() {
            rows.push(skipped("broadcast", "Boost.Signals2 (C++)", n, reason));
        }
    }
    rows.push(measure(
        "nested broadcast",
        vec![
            nested_case::<common::NestedFloor>(),
            nested_case::<common::NestedLumina>(),
            nested_case::<common::NestedSignals2>(),
        ],
    ));
    rows
}

/// One tick case (N2: declared delegate, `Copy` argument, thread-local accumulator) for system
/// `S` with `n` subscribers; checks every subscriber ran.
fn tick_case<S: common::tick::TickSystem + 'static>(n: usize) -> Case<'static> {
    let system = S::with_subscribers(n);
    common::tick::take();
    system.broadcast(3);
    assert_eq!(
        common::tick::take(),
        common::tick::expected(n, 3),
        "{} did not call every subscriber",
        S::NAME
    );
    Case::new(S::NAME, n, n.max(1), move || system.broadcast(black_box(3)))
}

/// The tick shape beside the atomic-sink one: declared and generic delegates against the floor.
fn ticks() -> Vec<Planned<'static>> {
    [0, 1, 4, 16, 1024]
        .into_iter()
        .map(|n| {
            measure(
                "tick (Copy, TLS)",
                vec![
                    tick_case::<common::tick::Floor>(n),
                    tick_case::<common::tick::Declared>(n),
                    tick_case::<common::tick::Generic>(n),
                ],
            )
        })
        .collect()
}

/// One dispatch case for system `D` with `n` handlers; checks every handler ran.
fn dispatch_case<D: common::dispatch::Dispatch + 'static>(n: usize) -> Case<'static> {
    let system = D::with_handlers(n);
    common::take_sink();
    assert!(!system.dispatch(), "{}: no handler consumes", D::NAME);
    assert_eq!(
        common::take_sink(),
        n as u64,
        "{} skipped a handler",
        D::NAME
    );
    Case::new(D::NAME, n, n, move || {
        black_box(system.dispatch());
    })
}

fn dispatches() -> Vec<Planned<'static>> {
    let mut rows = Vec::new();
    for n in [1, 8, 64] {
        rows.push(measure(
            "dispatch",
            vec![
                dispatch_case::<common::dispatch::Floor>(n),
                dispatch_case::<common::dispatch::Lumina>(n),
                dispatch_case::<common::dispatch::WeakFloor>(n),
                dispatch_case::<common::dispatch::LuminaDowncast>(n),
                dispatch_case::<common::dispatch::LuminaTyped>(n),
            ],
        ));
    }
    rows
}

/// Script delegate broadcast: native listeners against their floor, managed (`extern "C"`)
/// listeners against theirs.
fn script_delegates() -> Vec<Planned<'static>> {
    use common::script::{Managed, ManagedFloor, Native, NativeFloor};
    let mut rows = Vec::new();
    for n in [1, 16, 1024] {
        rows.push(measure(
            "script native",
            vec![
                broadcast_case::<NativeFloor>(n),
                broadcast_case::<Native>(n),
            ],
        ));
        rows.push(measure(
            "script managed",
            vec![
                broadcast_case::<ManagedFloor>(n),
                broadcast_case::<Managed>(n),
            ],
        ));
    }
    rows
}

fn single_cast() -> Vec<Planned<'static>> {
    let floor = common::single_floor();
    let delegate = common::single_lumina();
    vec![measure(
        "single-cast execute",
        vec![
            Case::new(common::Floor::NAME, 1, 1, move || floor(black_box(1))),
            Case::new("lumina Delegate::execute", 1, 1, move || {
                delegate.execute(black_box(1))
            }),
        ],
    )]
}

/// Add + remove churn: time per subscriber (one add and one remove) at each size against the
/// churn floor (a `BTreeMap`, O(n log n)) in the same rounds: a ratio that stays flat as n grows
/// 100x means lumina's churn is O(n log n) too. Allocations per add and per remove at 10 000.
fn churn() -> Vec<Planned<'static>> {
    let mut rows = Vec::new();
    for n in [1_000, 10_000, 100_000] {
        let order = common::removal_order(n);
        let floor_order = order.clone();
        let mut cases = vec![
            Case::measured_only("floor BTreeMap<u64, Box>", n, n, move || {
                common::churn_floor(&floor_order)
            }),
            Case::measured_only(common::Lumina::NAME, n, n, move || {
                common::churn_lumina(&order)
            }),
        ];
        if n == 10_000 {
            let order = common::removal_order(n);
            let (adds, (delegate, handles)) = allocations_in(|| common::lumina_add(n));
            let (removes, ()) =
                allocations_in(|| common::lumina_remove(&delegate, &handles, &order));
            let (adds, removes) = (adds as f64 / n as f64, removes as f64 / n as f64);
            cases[1].allocs = format!("{adds:.2}/add, {removes:.2}/remove");
        }
        rows.push(measure_rounds("add+remove churn", cases, 1));
    }
    rows
}

/// The message bus (GB9): a send to N exact listeners against a raw
/// `HashMap<u32, Vec<Box<dyn Fn>>>` lookup and loop; a partial-match send on a tag of depth 3
/// (one partial listener on each level) against three such lookups and loops
/// (`common::bus`, the systems `bench_one` counts too).
fn message_bus() -> Vec<Planned<'static>> {
    use common::System;
    use common::bus;
    let mut rows = Vec::new();
    for n in [1, 16, 1024] {
        let floor = bus::Floor::with_subscribers(n);
        let lumina = bus::Bus::with_subscribers(n);
        common::take_sink();
        lumina.broadcast(1);
        floor.broadcast(1);
        assert_eq!(common::take_sink(), 2 * n as u64, "every listener ran");
        rows.push(measure(
            "bus send exact",
            vec![
                Case::new(bus::Floor::NAME, n, n, move || {
                    floor.broadcast(black_box(1))
                }),
                Case::new(bus::Bus::NAME, n, n, move || lumina.broadcast(black_box(1))),
            ],
        ));
    }
    let floor = bus::PartialFloor::with_subscribers(3);
    let lumina = bus::Partial::with_subscribers(3);
    common::take_sink();
    lumina.broadcast(1);
    assert_eq!(common::take_sink(), 3, "one partial listener per level");
    rows.push(measure(
        "bus send partial",
        vec![
            Case::new(bus::PartialFloor::NAME, "3 lvl", 3, move || {
                floor.broadcast(black_box(1))
            }),
            Case::new(bus::Partial::NAME, "3 lvl", 3, move || {
                lumina.broadcast(black_box(1))
            }),
        ],
    ));
    rows
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<20} {:<30} {:>7} {:>10} {:>8} {:>13}  allocs/op",
        "benchmark", "system", "N", "ns/call", "ratio", "ratio range"
    );
    println!("{}", "-".repeat(104));
    for row in rows {
        let ns = row
            .ns_per_call
            .map_or("-".to_owned(), |ns| format!("{ns:.2}"));
        let ratio = row.ratio.map_or("-".to_owned(), |r| format!("{r:.2}x"));
        let spread = row
            .ratio_spread
            .map_or(String::new(), |(lo, hi)| format!("{lo:.2}-{hi:.2}"));
        println!(
            "{:<20} {:<30} {:>7} {:>10} {:>8} {:>13}  {}",
            row.benchmark, row.system, row.n, ns, ratio, spread, row.allocs
        );
    }
}

/// Prints whether each target of the performance targets (`lumina::rules`) holds in this run;
/// ratios with three decimals, so a verdict at the limit reads as the value it judged.
fn print_targets(rows: &[Row]) {
    let find = |benchmark: &str, system: &str, n: &str| {
        rows.iter()
            .find(|row| row.benchmark == benchmark && row.system.starts_with(system) && row.n == n)
    };
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!();
    if let Some(empty) = find("broadcast", "lumina", "0") {
        let empty_ratio = empty.ratio.unwrap_or(f64::NAN);
        println!(
            "target broadcast N=0     <= 1.0x floor: {empty_ratio:.3}x {}   0 allocs: {} {}",
            verdict(empty_ratio <= 1.0),
            empty.allocs,
            verdict(empty.allocs == "0.00"),
        );
    }
    // The raised targets (N2): 1.5x at N = 1, 1.3x at 4, 1.0x at 16 and 1024, 1.0x empty.
    for (n, limit) in [("1", 1.5), ("4", 1.3), ("16", 1.0), ("1024", 1.0)] {
        let (Some(lumina), Some(signals2)) = (
            find("broadcast", "lumina", n),
            find("broadcast", "signals2", n),
        ) else {
            continue;
        };
        let ratio = lumina.ratio.unwrap_or(f64::NAN);
        let speedup =
            signals2.ns_per_call.unwrap_or(f64::NAN) / lumina.ns_per_call.unwrap_or(f64::NAN);
        println!(
            "target broadcast N={n:<5} <= {limit:.1}x floor: {ratio:.3}x {}   >= 3x faster than signals2: {speedup:.1}x {}   0 allocs: {} {}",
            verdict(ratio <= limit),
            verdict(speedup >= 3.0),
            lumina.allocs,
            verdict(lumina.allocs == "0.00"),
        );
    }
    // TS6: the thread-safe delegate on one thread, against the game-thread delegate (3x at
    // N = 1, 1.3x at 16 and 1024) and faster than signals2 at every N.
    for (n, limit) in [("1", 3.0), ("16", 1.3), ("1024", 1.3)] {
        let (Some(sync), Some(lumina), Some(signals2)) = (
            find("broadcast", "SyncMulticastDelegate", n),
            find("broadcast", "lumina", n),
            find("broadcast", "signals2", n),
        ) else {
            continue;
        };
        let per_call = |row: &Row| row.ns_per_call.unwrap_or(f64::NAN);
        let ratio = per_call(sync) / per_call(lumina);
        let speedup = per_call(signals2) / per_call(sync);
        // Boost.Signals2 (thread-safe by default) when its shim is built (`boost-bench`).
        let boost = find("broadcast", "Boost.Signals2", n)
            .filter(|row| row.ns_per_call.is_some())
            .map(|row| {
                let speedup = per_call(row) / per_call(sync);
                format!(
                    "   faster than Boost.Signals2: {speedup:.1}x {}",
                    verdict(speedup > 1.0)
                )
            })
            .unwrap_or_default();
        println!(
            "target thread-safe N={n:<5} <= {limit:.1}x game-thread delegate: {ratio:.3}x {}   faster than signals2: {speedup:.1}x {}{boost}   0 allocs: {} {}",
            verdict(ratio <= limit),
            verdict(speedup > 1.0),
            sync.allocs,
            verdict(sync.allocs == "0.00"),
        );
    }
    // N2's shape, against the raised targets: 1.0x at N = 16 and 1024, 1.3x at 4, 1.5x at 1,
    // 1.0x empty.
    for system in ["lumina declared", "lumina generic"] {
        for (n, limit) in [
            ("0", 1.0),
            ("1", 1.5),
            ("4", 1.3),
            ("16", 1.0),
            ("1024", 1.0),
        ] {
            if let Some(row) = find("tick (Copy, TLS)", system, n) {
                let ratio = row.ratio.unwrap_or(f64::NAN);
                println!(
                    "target tick {:<9} N={n:<5} <= {limit:.1}x floor: {ratio:.3}x {}   0 allocs: {} {}",
                    if system == "lumina declared" {
                        "declared"
                    } else {
                        "generic"
                    },
                    verdict(ratio <= limit),
                    row.allocs,
                    verdict(row.allocs == "0.00"),
                );
            }
        }
    }
    for n in ["1", "16", "1024"] {
        if let Some(lumina) = find("bus send exact", "lumina", n) {
            let ratio = lumina.ratio.unwrap_or(f64::NAN);
            println!(
                "target bus send  N={n:<5} <= 1.5x floor: {ratio:.3}x {}   0 allocs: {} {}",
                verdict(ratio <= 1.5),
                lumina.allocs,
                verdict(lumina.allocs == "0.00"),
            );
        }
    }
    if let Some(lumina) = find("bus send partial", "lumina", "3 lvl") {
        let ratio = lumina.ratio.unwrap_or(f64::NAN);
        println!(
            "target bus partial depth 3 vs 3 lookups: {ratio:.3}x (<= 1.0x {})   0 allocs: {} {}",
            verdict(ratio <= 1.0),
            lumina.allocs,
            verdict(lumina.allocs == "0.00"),
        );
    }
    // Raised (N2): 1.3x at one handler, 1.0x at 8 and 64.
    for (n, limit) in [("1", 1.3), ("8", 1.0), ("64", 1.0)] {
        if let Some(lumina) = find("dispatch", "lumina", n) {
            let ratio = lumina.ratio.unwrap_or(f64::NAN);
            println!(
                "target dispatch  N={n:<5} <= {limit:.1}x floor: {ratio:.3}x {}   0 allocs: {} {}",
                verdict(ratio <= limit),
                lumina.allocs,
                verdict(lumina.allocs == "0.00"),
            );
        }
    }
    for n in ["1", "8", "64"] {
        let typed = find("dispatch", "lumina typed", n);
        let downcast = find("dispatch", "lumina dyn handler + downcast", n);
        if let (Some(typed), Some(downcast)) = (typed, downcast) {
            let ratio =
                typed.ns_per_call.unwrap_or(f64::NAN) / downcast.ns_per_call.unwrap_or(f64::NAN);
            println!(
                "target typed dispatch N={n:<3} <= 1.1x today's downcasting handlers: {ratio:.3}x {}   0 allocs: {} {}",
                verdict(ratio <= 1.1),
                typed.allocs,
                verdict(typed.allocs == "0.00"),
            );
        }
    }
    let churn = |system: &str| -> Vec<f64> {
        rows.iter()
            .filter(|row| row.benchmark == "add+remove churn" && row.system.starts_with(system))
            .filter_map(|row| row.ns_per_call)
            .collect()
    };
    if let ([lumina_small, .., lumina_large], [floor_small, .., floor_large]) =
        (churn("lumina").as_slice(), churn("floor").as_slice())
    {
        // Per subscriber, O(n log n) churn costs O(log n): from 1k to 100k subscribers log2 n
        // grows 1.7x, and the memory hierarchy adds more (100k entries do not fit in cache; the
        // BTreeMap floor shows how much on this machine). Removal by a linear scan would grow
        // it at least 100x: the verdict is that it stays far below that (at most 25x).
        let growth = lumina_large / lumina_small;
        let floor_growth = floor_large / floor_small;
        println!(
            "target churn O(n log n): ns per subscriber grows {growth:.1}x from n=1000 to n=100000 \
             (BTreeMap floor {floor_growth:.1}x; a linear removal would be >= 100x; limit 25x) {}",
            verdict(growth <= 25.0)
        );
    }
}

/// Heap bytes per subscriber: a delegate with 10 000 closures that each capture one `Rc`.
fn heap_per_subscriber() -> f64 {
    const N: usize = 10_000;
    let shared = std::rc::Rc::new(std::cell::Cell::new(0_i32));
    let (bytes, delegate) = counting_alloc::live_bytes_in(|| {
        let delegate: lumina::MulticastDelegate<dyn Fn(i32)> = lumina::MulticastDelegate::new();
        for _ in 0..N {
            let shared = std::rc::Rc::clone(&shared);
            let _ = delegate.add_lambda(move |x| shared.set(shared.get() + x));
        }
        delegate
    });
    delegate.broadcast(1);
    assert_eq!(shared.get(), N as i32);
    bytes as f64 / N as f64
}

/// The memory rows of the performance targets (`lumina::rules`): sizes of the public delegate types, next to the
/// peers' (from their sources), and heap bytes per subscriber; with their targets.
fn print_memory() {
    use std::mem::size_of;
    lumina::declare_multicast_delegate!(Declared(value: u32));
    lumina::declare_delegate!(DeclaredSingle(value: u32) -> bool);
    #[lumina::script_delegate]
    #[derive(Clone, Copy)]
    struct Payload {
        value: u32,
    }
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let rows: [(&str, usize, usize); 6] = [
        (
            "MulticastDelegate<dyn Fn(u32)>",
            size_of::<lumina::MulticastDelegate<dyn Fn(u32)>>(),
            16,
        ),
        (
            "declare_multicast_delegate! type",
            size_of::<Declared>(),
            16,
        ),
        (
            "Delegate<dyn Fn(u32) -> bool>",
            size_of::<lumina::Delegate<dyn Fn(u32) -> bool>>(),
            16,
        ),
        ("declare_delegate! type", size_of::<DeclaredSingle>(), 16),
        (
            "ScriptDelegate<P>",
            size_of::<lumina::ScriptDelegate<Payload>>(),
            24,
        ),
        ("EventProcessor", size_of::<lumina::EventProcessor>(), 16),
    ];
    println!(
        "
size_of (bytes; UE's FMulticastDelegateBase is 24, EnTT's sigh 24):"
    );
    for (name, size, target) in rows {
        println!(
            "  {name:<36} {size:>3}   target <= {target:>2} {}",
            verdict(size <= target)
        );
    }
    let heap = heap_per_subscriber();
    println!(
        "heap per subscriber (closure capturing one Rc, after 10 000 adds): {heap:.1} bytes   \
         target <= 64 {}",
        verdict(heap <= 64.0)
    );
}

/// TS6's two-thread figure: broadcasts per second of one delegate with 16 subscribers, two
/// threads broadcasting it at once against one thread alone (the machine has 2 cores; 2.0x is
/// perfect scaling). The subscribers add to a thread-local counter, so only the delegate itself
/// is shared. Each round measures, one after the other, the thread-safe delegate and the same
/// work shared by nobody (each thread broadcasting a game-thread delegate of its own with 16
/// such subscribers): this host's two virtual CPUs do not always give two threads of this kind
/// of loop twice the throughput (seen: 1.3x to 2.0x from one second to the next), and the
/// reference says which ceiling a round had. Median of 7 rounds, each run about 50 ms long.
fn print_two_threads() {
    use lumina::{MulticastDelegate, SyncMulticastDelegate};
    use std::cell::Cell;
    use std::sync::{Arc, Barrier};
    thread_local! {
        static SUM: Cell<u64> = const { Cell::new(0) };
    }
    const BROADCASTS: u64 = 2_000_000;
    const ROUNDS: usize = 7;
    let add = |x: u64| SUM.with(|sum| sum.set(sum.get().wrapping_add(black_box(x))));
    let delegate: Arc<SyncMulticastDelegate<dyn Fn(u64) + Send + Sync>> =
        Arc::new(SyncMulticastDelegate::new());
    for _ in 0..16 {
        let _ = delegate.add_lambda(add);
    }
    // Broadcasts per second of `threads` threads that each run `work` (BROADCASTS broadcasts)
    // once the barrier lets them all go.
    let throughput = |threads: usize, work: &(dyn Fn() + Send + Sync + 'static)| {
        let barrier = Barrier::new(threads + 1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        work();
                        black_box(SUM.with(Cell::get));
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            for worker in workers {
                worker.join().expect("a broadcasting thread panicked");
            }
            (threads as u64 * BROADCASTS) as f64 / start.elapsed().as_secs_f64()
        })
    };
    let shared: Box<dyn Fn() + Send + Sync> = Box::new({
        let delegate = Arc::clone(&delegate);
        move || {
            for i in 0..BROADCASTS {
                delegate.broadcast(i);
            }
        }
    });
    let own: Box<dyn Fn() + Send + Sync> = Box::new(move || {
        let delegate = MulticastDelegate::<dyn Fn(u64)>::new();
        for _ in 0..16 {
            let _ = delegate.add_lambda(add);
        }
        for i in 0..BROADCASTS {
            delegate.broadcast(i);
        }
    });
    let (mut ratios, mut ceilings): (Vec<f64>, Vec<f64>) = (0..ROUNDS)
        .map(|_| {
            let ratio = throughput(2, &*shared) / throughput(1, &*shared);
            let ceiling = throughput(2, &*own) / throughput(1, &*own);
            (ratio, ceiling)
        })
        .unzip();
    let ratio = median(&mut ratios);
    let ceiling = median(&mut ceilings);
    println!(
        "reference two threads each broadcasting a game-thread delegate of its own (shares nothing), against one: {ceiling:.2}x (this machine's ceiling for this loop)"
    );
    println!(
        "target thread-safe two threads N=16 >= 1.8x one thread's broadcasts/s: {ratio:.2}x {}",
        if ratio >= 1.8 { "PASS" } else { "FAIL" }
    );
}

/// The thread-safe delegate's add + remove with 16 subscribers present (copy-on-write: each is
/// O(n), plus the writer's barrier): ns per pair, plain and self-aware, median of 3 runs.
fn print_sync_add_remove() {
    use lumina::SyncMulticastDelegate;
    const PAIRS: u32 = 20_000;
    let delegate: SyncMulticastDelegate<dyn Fn(u64) + Send + Sync> = SyncMulticastDelegate::new();
    for _ in 0..16 {
        let _ = delegate.add_lambda(|x| {
            black_box(x);
        });
    }
    let time = |self_aware: bool| {
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..PAIRS {
                    let handle = if self_aware {
                        delegate.subscribe().self_aware().add_lambda(|_, x| {
                            black_box(x);
                        })
                    } else {
                        delegate.add_lambda(|x| {
                            black_box(x);
                        })
                    };
                    delegate.remove(black_box(handle));
                }
                start.elapsed().as_nanos() as f64 / f64::from(PAIRS)
            })
            .collect();
        median(&mut runs)
    };
    let (plain, aware) = (time(false), time(true));
    println!(
        "thread-safe add + remove, 16 present: {plain:.0} ns per pair (add_lambda), {aware:.0} ns (self-aware)"
    );
}

fn main() {
    let start = Instant::now();
    // `-- --scaling [TEXT]`: only the scaling section (N4), or its rows whose name has TEXT.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--scaling") {
        scaling::print_scaling(args.get(at + 1).map(String::as_str));
        return;
    }
    // `-- --threads`: only what TS6 measures: the broadcast rows (the thread-safe delegate on
    // one thread beside the floor, the game-thread delegate and the peers), their targets, and
    // the two-thread line with its reference.
    let threads = args.iter().any(|arg| arg == "--threads");
    // `-- --bus`: only the message bus rows (GB9), for a quick look.
    let mut plan = Vec::new();
    if threads {
        plan.extend(broadcasts());
    } else if !std::env::args().any(|arg| arg == "--bus") {
        plan.extend(broadcasts());
        plan.extend(ticks());
        plan.extend(dispatches());
        plan.extend(script_delegates());
        plan.extend(single_cast());
        plan.extend(churn());
    }
    if !threads {
        plan.extend(message_bus());
    }
    // Passes over everything, so each benchmark is sampled at several moments of the run: a
    // stretch of load from the machine's other users (which slows a system that executes more
    // instructions more than the floor) then spoils only some passes.
    for _ in 0..PASSES {
        for planned in &mut plan {
            if let Planned::Group(group) = planned {
                group.run_pass();
            }
        }
    }
    let rows: Vec<Row> = plan
        .into_iter()
        .flat_map(|planned| match planned {
            Planned::Group(group) => group.rows(),
            Planned::Skipped(row) => vec![row],
        })
        .collect();
    print_table(&rows);
    println!(
        "\nns/call: per subscriber call, the best of {PASSES} passes spread over the run (each \
         pass: the median of {ROUNDS} round-robin rounds). ratio: best to the floor's best (the \
         floor row above it). ratio range: lowest-highest per-pass ratio (each the median of its \
         rounds' ratios to the floor's sample of the same round). churn: ns per subscriber \
         added and removed, one round per pass."
    );
    if let Some(reason) = common::boost_skipped() {
        println!("Boost.Signals2 rows skipped: {reason}");
    }
    print_targets(&rows);
    print_two_threads();
    if threads {
        print_sync_add_remove();
        return;
    }
    print_memory();
    scaling::print_scaling(None);
    println!("\nreport took {:.1} s", start.elapsed().as_secs_f64());
}
