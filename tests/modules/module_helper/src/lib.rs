//! A library of the findings module's own: the engine does not link it, the module's load maps
//! it. Its closures subscribe and queue themselves from here, so their code and the generic
//! code that stores them lie in this library, not in the module's (issue 30, finding 1).

use engine_api::lumina::{CoreDelegates, DelegateHandle, main_thread};

/// Subscribes a closure of this library to `on_settings_saved`.
pub fn subscribe_saved() -> DelegateHandle {
    CoreDelegates::get()
        .on_settings_saved()
        .add_lambda(|class| println!("module_helper: settings saved: {class}"))
}

/// Queues a closure of this library for the game thread.
pub fn enqueue_task() {
    main_thread::enqueue(|| println!("module_helper: queued task ran"));
}
