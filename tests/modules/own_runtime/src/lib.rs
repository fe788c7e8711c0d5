//! A game module with its own copy of the lumina runtime (MB2): its first touch of engine state
//! must say so, and the engine's loader must refuse it.

fn start_up() {
    let _ = lumina::CoreDelegates::get()
        .on_module_unloaded()
        .add_lambda(|| println!("own runtime: never"));
}

fn shut_down() {}

lumina::game_module!(start_up, shut_down);
