//! Runs one system of the benchmark report for a given number of operations and nothing else:
//! the driver for counting instructions with callgrind, a figure that the other users of a
//! shared machine cannot move (BENCHMARKS.md, "Instructions per call").
//!
//! ```text
//! cargo run --release --example bench_one --features bench -- <system> <n> <operations>
//! ```
//!
//! `<system>` is one of `floor`, `lumina`, `sync` (the thread-safe delegate), `signals2`
//! (broadcast to `n` subscribers),
//! `tick-floor`, `tick-declared`, `tick-generic` (N2's shape: a `Copy` argument added into a
//! thread-local cell, through a raw loop, a declared delegate, a generic delegate),
//! `dispatch-floor`, `dispatch-weak-floor`, `dispatch-lumina`, `dispatch-self-aware` (dispatch
//! through `n` handlers; the last with self-aware handlers, X6, none blocked, X4),
//! `bus-floor`, `bus` (a message bus send to `n` exact listeners against a `HashMap` lookup and
//! loop), `bus-partial-floor`, `bus-partial` (a send on a tag of depth 3 with `n / 3` partial
//! listeners on each level against three lookups and loops; `n` a multiple of 3),
//! `single-floor`, `single` (a single-cast call: a boxed closure against `Delegate::execute`,
//! `n` times per operation).
//! Instructions per subscriber call are then
//! `(Ir(operations) - Ir(0)) / (operations * n)`, with `Ir` the total callgrind reports:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/bench_one lumina 16 0
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/bench_one lumina 16 2000
//! ```
//!
//! Without arguments it runs every system once with 16 subscribers and checks each ran them all.

#[path = "../benches/common/mod.rs"]
mod common;

use std::hint::black_box;

use common::System;
use common::dispatch::Dispatch;

const SYSTEMS: [&str; 21] = [
    "floor",
    "lumina",
    "sync",
    "signals2",
    "tick-floor",
    "tick-declared",
    "tick-generic",
    "dispatch-floor",
    "dispatch-weak-floor",
    "dispatch-lumina",
    "dispatch-self-aware",
    "script-native-floor",
    "script-native",
    "script-managed-floor",
    "script-managed",
    "bus-floor",
    "bus",
    "bus-partial-floor",
    "bus-partial",
    "single-floor",
    "single",
];

/// Builds the system, then broadcasts `operations` times; returns the subscriber calls made.
fn broadcast<S: System>(n: usize, operations: u64) -> u64 {
    let system = S::with_subscribers(n);
    common::take_sink();
    for _ in 0..operations {
        system.broadcast(black_box(1));
    }
    common::take_sink()
}

/// Builds a tick system (N2's shape), then broadcasts `operations` times; returns the
/// subscriber calls made (checked against the accumulator).
fn tick<S: common::tick::TickSystem>(n: usize, operations: u64) -> u64 {
    let system = S::with_subscribers(n);
    common::tick::take();
    for _ in 0..operations {
        system.broadcast(black_box(3));
    }
    // One multiplication, so the check adds no instructions per operation to the count.
    let expected = common::tick::expected(n, 3).wrapping_mul(operations);
    assert_eq!(
        common::tick::take(),
        expected,
        "a tick subscriber did not run"
    );
    n as u64 * operations
}

/// Builds the system, then dispatches `operations` times; returns the handler calls made.
fn dispatch<D: Dispatch>(n: usize, operations: u64) -> u64 {
    let system = D::with_handlers(n);
    common::take_sink();
    for _ in 0..operations {
        black_box(system.dispatch());
    }
    common::take_sink()
}

/// Builds a single-cast callable, then calls it `n` times per operation; returns the calls made.
fn single(n: usize, operations: u64, call: impl Fn(i32)) -> u64 {
    common::take_sink();
    for _ in 0..operations {
        for _ in 0..n {
            call(black_box(1));
        }
    }
    common::take_sink()
}

fn run(system: &str, n: usize, operations: u64) -> Result<u64, String> {
    Ok(match system {
        "floor" => broadcast::<common::Floor>(n, operations),
        "lumina" => broadcast::<common::Lumina>(n, operations),
        "sync" => broadcast::<common::LuminaSync>(n, operations),
        "signals2" => broadcast::<common::Signals2>(n, operations),
        "tick-floor" => tick::<common::tick::Floor>(n, operations),
        "tick-declared" => tick::<common::tick::Declared>(n, operations),
        "tick-generic" => tick::<common::tick::Generic>(n, operations),
        "dispatch-floor" => dispatch::<common::dispatch::Floor>(n, operations),
        "dispatch-weak-floor" => dispatch::<common::dispatch::WeakFloor>(n, operations),
        "dispatch-lumina" => dispatch::<common::dispatch::Lumina>(n, operations),
        "dispatch-self-aware" => dispatch::<common::dispatch::LuminaSelfAware>(n, operations),
        "script-native-floor" => broadcast::<common::script::NativeFloor>(n, operations),
        "script-native" => broadcast::<common::script::Native>(n, operations),
        "script-managed-floor" => broadcast::<common::script::ManagedFloor>(n, operations),
        "script-managed" => broadcast::<common::script::Managed>(n, operations),
        "bus-floor" => broadcast::<common::bus::Floor>(n, operations),
        "bus" => broadcast::<common::bus::Bus>(n, operations),
        "bus-partial-floor" => broadcast::<common::bus::PartialFloor>(n, operations),
        "bus-partial" => broadcast::<common::bus::Partial>(n, operations),
        "single-floor" => {
            let floor = common::single_floor();
            single(n, operations, floor)
        }
        "single" => {
            let delegate = common::single_lumina();
            single(n, operations, |x| delegate.execute(x))
        }
        other => {
            return Err(format!(
                "unknown system `{other}`; expected one of {SYSTEMS:?}"
            ));
        }
    })
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            for system in SYSTEMS {
                // 15: the partial bus systems spread their listeners over 3 levels.
                let n = if system.starts_with("bus-partial") {
                    15
                } else {
                    16
                };
                let calls = run(system, n, 1)?;
                assert_eq!(calls, n as u64, "{system} did not call every subscriber");
                println!("{system}: {n} calls");
            }
            Ok(())
        }
        [system, n, operations] => {
            let parse = |what: &str, text: &str| {
                text.parse::<u64>()
                    .map_err(|error| format!("{what} `{text}`: {error}"))
            };
            let n = parse("<n>", n)? as usize;
            let operations = parse("<operations>", operations)?;
            let calls = run(system, n, operations)?;
            assert_eq!(calls, n as u64 * operations, "{system} skipped a call");
            Ok(())
        }
        _ => Err(String::from("usage: bench_one [<system> <n> <operations>]")),
    }
}
