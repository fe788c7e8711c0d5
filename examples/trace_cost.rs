//! V2's cost per subscriber call: 16 subscribers that do nothing, broadcast 200,000 times with
//! `broadcast` and with `broadcast_fold`, best of 5 runs, in nanoseconds per subscriber call.
//!
//! ```text
//! cargo run --release -p lumina-bench --example trace_cost --features bench          # feature off
//! cargo run --release -p lumina-bench --example trace_cost --features bench,trace    # feature on
//! ```
//!
//! With lumina's `trace` feature it measures twice: with no `tracing` subscriber installed, and
//! with one that is enabled for every span and records nothing (what `tracing` itself costs a
//! subscriber that wants the spans, before it records anything).

use std::hint::black_box;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use lumina::MulticastDelegate;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Subscribers per delegate.
const N: usize = 16;
/// Broadcasts per run.
const BROADCASTS: u32 = 200_000;

/// A `tracing` subscriber enabled for everything that records nothing.
#[derive(Default)]
struct RecordsNothing(AtomicU64);

impl Subscriber for RecordsNothing {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1 + self.0.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The best of 5 runs of `BROADCASTS` calls of `broadcast`, in ns per subscriber call.
fn best(mut broadcast: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..BROADCASTS {
                broadcast();
            }
            start.elapsed().as_nanos() as f64 / (f64::from(BROADCASTS) * N as f64)
        })
        .fold(f64::INFINITY, f64::min)
}

/// Measures both forms and prints one line under `label`.
fn measure(label: &str) {
    let on_tick: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let _ticks: Vec<_> = (0..N)
        .map(|_| {
            on_tick.add_lambda(|value| {
                black_box(value);
            })
        })
        .collect();
    let can_open: MulticastDelegate<dyn Fn(u32) -> bool> = MulticastDelegate::new();
    let _asks: Vec<_> = (0..N)
        .map(|_| can_open.add_lambda(|door| black_box(door) < u32::MAX))
        .collect();
    let broadcast = best(|| on_tick.broadcast(black_box(1)));
    let fold = best(|| {
        black_box(can_open.broadcast_fold(black_box(1), true, |all, yes| {
            ControlFlow::Continue(all && yes)
        }));
    });
    println!(
        "{label}: broadcast {broadcast:.1} ns, broadcast_fold {fold:.1} ns per subscriber call"
    );
}

fn main() {
    if cfg!(feature = "trace") {
        measure("feature on, no subscriber");
        let _recording = tracing::subscriber::set_default(RecordsNothing::default());
        measure("feature on, a subscriber that is enabled and records nothing");
    } else {
        measure("feature off");
    }
}
