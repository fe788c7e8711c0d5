//! Criterion benchmarks of the performance targets (`lumina::rules`): lumina against the floor (a raw
//! `Vec<Box<dyn Fn>>` loop), the `signals2` crate and, with `--features boost-bench`,
//! Boost.Signals2. Run with `cargo bench --bench delegates`; the quick table is
//! `cargo run --release --example bench_report --features bench`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{Floor, Lumina, NestedFloor, NestedLumina, NestedSignals2, Signals2, System};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Broadcast sizes of the performance targets (`lumina::rules`).
const SIZES: [usize; 3] = [1, 16, 1024];

fn bench_system<S: System>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    n: usize,
) {
    let system = S::with_subscribers(n);
    group.bench_with_input(BenchmarkId::new(S::NAME, n), &n, |b, _| {
        b.iter(|| system.broadcast(black_box(1)));
    });
}

fn broadcast(c: &mut Criterion) {
    let mut group = c.benchmark_group("broadcast");
    for n in SIZES {
        // Throughput in elements: criterion prints subscriber calls per second.
        group.throughput(Throughput::Elements(n as u64));
        bench_system::<Floor>(&mut group, n);
        bench_system::<Lumina>(&mut group, n);
        bench_system::<Signals2>(&mut group, n);
        #[cfg(lumina_boost_shim)]
        bench_system::<common::boost::BoostSignals2>(&mut group, n);
    }
    if let Some(reason) = common::boost_skipped() {
        eprintln!("Boost.Signals2 skipped: {reason}");
    }
    group.finish();
}

fn nested(c: &mut Criterion) {
    let mut group = c.benchmark_group("nested_broadcast");
    let n = common::NESTED_WIDTH;
    group.throughput(Throughput::Elements(
        (common::NESTED_WIDTH as u32 * common::NESTED_DEPTH) as u64,
    ));
    bench_system::<NestedFloor>(&mut group, n);
    bench_system::<NestedLumina>(&mut group, n);
    bench_system::<NestedSignals2>(&mut group, n);
    group.finish();
}

fn dispatch_system<D: common::dispatch::Dispatch>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    n: usize,
) {
    let system = D::with_handlers(n);
    group.bench_with_input(BenchmarkId::new(D::NAME, n), &n, |b, _| {
        b.iter(|| system.dispatch())
    });
}

fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch");
    for n in [1, 8, 64] {
        group.throughput(Throughput::Elements(n as u64));
        dispatch_system::<common::dispatch::Floor>(&mut group, n);
        dispatch_system::<common::dispatch::Lumina>(&mut group, n);
        dispatch_system::<common::dispatch::WeakFloor>(&mut group, n);
        dispatch_system::<common::dispatch::LuminaDowncast>(&mut group, n);
        dispatch_system::<common::dispatch::LuminaTyped>(&mut group, n);
    }
    group.finish();
}

fn script_delegate(c: &mut Criterion) {
    use common::script::{Managed, ManagedFloor, Native, NativeFloor};
    let mut group = c.benchmark_group("script_delegate_broadcast");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        bench_system::<NativeFloor>(&mut group, n);
        bench_system::<Native>(&mut group, n);
        bench_system::<ManagedFloor>(&mut group, n);
        bench_system::<Managed>(&mut group, n);
    }
    group.finish();
}

fn single_cast(c: &mut Criterion) {
    let mut group = c.benchmark_group("single_cast_execute");
    let floor = common::single_floor();
    group.bench_function(Floor::NAME, |b| b.iter(|| floor(black_box(1))));
    let delegate = common::single_lumina();
    group.bench_function("lumina Delegate::execute", |b| {
        b.iter(|| delegate.execute(black_box(1)))
    });
    group.finish();
}

fn churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove_churn");
    group.sample_size(10);
    // 10 000 is the target size; 1k and 100k show the scaling (O(n log n): time per subscriber
    // grows at most logarithmically).
    for n in [1_000, 10_000, 100_000] {
        let order = common::removal_order(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("lumina", n), &order, |b, order| {
            b.iter(|| common::churn_lumina(order))
        });
        // signals2 copies its slot set on every connect (O(n) each, seconds at 10 000): only 1k.
        if n <= 1_000 {
            group.bench_with_input(BenchmarkId::new("signals2", n), &order, |b, order| {
                b.iter(|| common::churn_signals2(order))
            });
        }
        #[cfg(lumina_boost_shim)]
        group.bench_with_input(BenchmarkId::new("Boost.Signals2", n), &order, |b, order| {
            b.iter(|| common::churn_boost(order))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    // Short runs: the machine is shared, and ratios within one run are what the targets compare.
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = broadcast, nested, dispatch, script_delegate, single_cast, churn
}
criterion_main!(benches);
