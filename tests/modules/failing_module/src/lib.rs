//! A game module whose start-up panics after subscribing: the engine's load must report the
//! panic, remove the subscription and unmap the library.

fn start_up() {
    let _ = engine_api::engine()
        .on_tick
        .add_lambda(|frame| println!("failing: tick {frame} (must never run)"));
    panic!("the level file is missing");
}

fn shut_down() {
    println!("failing: shut-down (must never run: start-up failed)");
}

lumina::game_module!(start_up, shut_down);
