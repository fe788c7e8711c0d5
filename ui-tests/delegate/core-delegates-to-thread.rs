use lumina::CoreDelegates;

fn main() {
    // The core delegates belong to the game thread: another thread reaches them through
    // `main_thread::enqueue`.
    let core: &'static CoreDelegates = CoreDelegates::get();
    std::thread::spawn(move || core.on_settings_saved().is_bound());
}
