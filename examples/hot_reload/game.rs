//! The game module of the hot-reload example (rule MB5): a `cdylib` that the engine example
//! (`examples/hot_reload/main.rs`) builds, loads, rebuilds and reloads. Its version is baked in
//! at build time from `HOT_RELOAD_GAME_VERSION`, so a rebuild with another value is a new version.

use lumina::CoreDelegates;
use std::path::Path;

const VERSION: &str = match option_env!("HOT_RELOAD_GAME_VERSION") {
    Some(version) => version,
    None => "1",
};

fn start_up() {
    println!("game v{VERSION}: start-up");
    let _ = CoreDelegates::get()
        .on_content_file_modified()
        .add_lambda(|path: &Path| println!("game v{VERSION}: reloading asset {}", path.display()));
}

fn shut_down() {
    println!("game v{VERSION}: shut-down (its subscription is removed by the engine)");
}

lumina::game_module!(start_up, shut_down);
