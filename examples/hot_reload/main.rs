//! Hot reload of a game module (rules MB1-MB6), end to end: the engine builds the game module
//! (`examples/hot_reload/game.rs`, a `cdylib` example) with cargo, loads it, runs frames, rebuilds
//! it as version 2 while running, notices the new file, reloads it, and from then on only the new
//! version's subscriber runs; then it unloads it. Unloaded versions stay mapped (rule MB6: an
//! unload takes back behaviour, not memory); the engine prints what it keeps, and how many
//! bytes.
//!
//! ```sh
//! cargo run --example hot_reload --features dynamic_linking
//! ```
//!
//! Engine and module share one runtime: both are built with the `dynamic_linking` feature, which
//! links the runtime as the shared library `liblumina_dylib.so` (rule MB1). No `RUSTFLAGS` are
//! needed (the guide's "Game modules and hot reload" says why): rustc links std dynamically as soon as
//! a crate depends on a Rust `dylib`. Setting `RUSTFLAGS="-C prefer-dynamic"` also works, as long
//! as engine and module get the same flags (this example passes its own environment on to the
//! cargo that builds the module), but it rebuilds everything else in the target directory.

use lumina::{CoreDelegates, main_thread, module};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the game module as `version` with the same cargo, features and flags as this engine.
fn build_game(version: u32) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // From the workspace root, like the guide's command that built this engine: cargo then
    // selects the same packages with the same features, so the module links the very
    // `liblumina_dylib.so` this engine loaded (from `examples/`, the feature set of the shared
    // dependencies could differ, and the runtime library would be rebuilt under the engine).
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the examples package lies in the workspace");
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--quiet",
            "--example",
            "hot_reload_game",
            "--features",
            "dynamic_linking",
        ])
        .env("HOT_RELOAD_GAME_VERSION", version.to_string())
        .status()
        .expect("could not run cargo to build the game module");
    assert!(status.success(), "building the game module failed");
    // Next to this example's executable.
    let engine = std::env::current_exe().expect("the engine's path");
    engine.with_file_name("libhot_reload_game.so")
}

fn frame(number: u32) {
    println!("engine: frame {number}");
    CoreDelegates::get()
        .on_content_file_modified()
        .broadcast(Path::new("maps/arena.map"));
}

fn main() {
    main_thread::designate_game_thread();
    let core = CoreDelegates::get();
    let _ = core
        .on_module_loaded()
        .add_lambda(|info| println!("engine: loaded {info}"));
    let _ = core
        .on_module_unloaded()
        .add_lambda(|| println!("engine: a module was unloaded"));

    let path = build_game(1);
    let mut game = module::load(&path).unwrap_or_else(|error| panic!("{error}"));
    frame(1);

    // The game is rebuilt while the engine runs (here by the engine itself; usually by the
    // developer in another terminal). The engine polls the file once per frame.
    let rebuilt = build_game(2);
    assert_eq!(rebuilt, path);
    let mut number = 2;
    while !module::source_changed(game) {
        frame(number);
        number += 1;
    }
    println!("engine: the game module changed on disk: reloading");
    game = module::reload(game).unwrap_or_else(|error| panic!("{error}"));
    frame(number);

    let info = module::unload(game).unwrap_or_else(|error| panic!("{error}"));
    println!("engine: unloaded {info}");
    frame(number + 1);
    match module::unload(game) {
        Ok(_) => unreachable!("a module unloads once"),
        Err(error) => println!("engine: unloading it again: {error}"),
    }
    // MB6: both versions' libraries stay mapped for the process's life, so nothing the records
    // missed can ever run unmapped code. What that costs:
    let kept = module::unloaded();
    let bytes: usize = kept.iter().map(|version| version.bytes).sum();
    println!(
        "engine: kept mapped: {} unloaded version(s), {} KiB",
        kept.len(),
        bytes / 1024
    );
    for version in &kept {
        println!(
            "engine:   {} ({}): {} KiB, still referenced: {}",
            version.info,
            version.id,
            version.bytes / 1024,
            module::subscription_count(version.id)
        );
    }
}
