//! A trace of every broadcast (V2): boots the engine loop's world (the `engine_loop` example's
//! modules on the core delegates), runs a few frames with a world travel between them, and
//! records every broadcast and subscriber call with `tracing-chrome`.
//!
//! Run with `cargo run --example trace --features trace [-- <folder>]`: it writes `trace.json`
//! to the folder (the current one by default). Open it at <https://ui.perfetto.dev>: each
//! broadcast is a slice `broadcast` (its `source` argument names the delegate's type), each
//! subscriber call a slice under it whose `bind_site` argument is where it subscribed.

use std::path::PathBuf;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The engine loop of `examples/engine_loop.rs`: its modules subscribe to the core delegates.
#[allow(dead_code)]
#[path = "engine_loop.rs"]
mod engine_loop;

fn main() {
    let folder = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_owned()));
    std::fs::create_dir_all(&folder).expect("the output folder");
    let path = folder.join("trace.json");
    let (chrome, flush) = tracing_chrome::ChromeLayerBuilder::new()
        .file(&path)
        .include_args(true)
        .build();
    let recording = tracing_subscriber::registry().with(chrome).set_default();
    let engine = engine_loop::Engine::boot();
    engine.frame(|| {});
    engine.frame(|| engine.travel("Arena"));
    engine.frame(|| {});
    drop(engine);
    drop(recording);
    drop(flush);
    println!("wrote {}", path.display());
}
