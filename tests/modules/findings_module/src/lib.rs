//! A game module written from the guide that stores its code where a record by code address
//! cannot see it (issue 30's five findings). Its unload must remove what it subscribed, queued,
//! posted and retained (MB4, MB6: what it stores while its own code runs is its own), and what
//! it handed out as `&'static` stays readable: its library stays mapped (MB6).

use engine_api::{bus_tags, engine, keep_name};
use lumina::core_delegates::{LifecycleSignal, SettingsClass};
use lumina::{CoreDelegates, event_class};

/// A settings class of the module's: its name lies in the module's read-only data (finding 5).
static MODULE_SETTINGS: SettingsClass = SettingsClass::new("FindingsSettings", "Game");

/// An event of the module's own: its class name lies in the module's data too.
#[event_class]
struct FindingsReady {
    round: u32,
}

thread_local! {
    /// A lifecycle signal of the module's, named in its data.
    static READY: LifecycleSignal = const { LifecycleSignal::new("FindingsModule::on_ready") };
}

fn start_up() {
    let bus = &engine().bus;
    // 1. Closures of a library the module links, subscribed and queued from there.
    let _ = module_helper::subscribe_saved();
    module_helper::enqueue_task();
    // 2. `add_lambda::<Box<dyn Fn(u32)>>` is the engine API's instantiation (shared generics):
    //    the subscription's outer vtable lies in `engine_api`, not here.
    let _ = engine()
        .on_tick
        .add_lambda(Box::new(|frame| println!("findings: boxed tick {frame}")) as Box<dyn Fn(u32)>);
    //    The same for a boxed task and a boxed coroutine (`enqueue` and `spawn_local` generic).
    lumina::main_thread::enqueue(
        Box::new(|| println!("findings: boxed task ran")) as Box<dyn FnOnce() + Send>
    );
    let _ = lumina::coroutine::spawn_local(Box::pin(async {
        for _ in 0..10 {
            println!("findings: boxed coroutine polled");
            lumina::coroutine::frames(1).await;
        }
    })
        as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>);
    // 3. Posted into the queue the engine's post created.
    bus.post(
        &bus_tags::ENGINE_CALL,
        Box::new(|| println!("findings: posted call ran")) as Box<dyn Fn()>,
    );
    // 4. Replaces the engine's retained message in place; and retains one the engine replaces.
    bus.send(
        &bus_tags::ENGINE_STATE,
        Box::new(|| println!("findings: retained state")) as Box<dyn Fn()>,
    );
    bus.send(
        &bus_tags::ENGINE_MIRROR,
        Box::new(|| println!("findings: mirror state")) as Box<dyn Fn()>,
    );
    // 5. Names in the module's data, handed to the engine as `&'static str`.
    CoreDelegates::get()
        .on_settings_saved()
        .broadcast(&MODULE_SETTINGS);
    let ready = FindingsReady { round: 1 };
    println!("findings: ready, round {}", ready.round);
    let _ = engine().input.dispatch(ready);
    READY.with(|ready| keep_name(ready.name()));
    println!("findings: started");
}

fn shut_down() {
    println!("findings: shut-down");
}

lumina::game_module!(start_up, shut_down);
