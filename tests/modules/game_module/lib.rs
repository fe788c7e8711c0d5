//! The fixture game module, in two versions (packages `game_module_v1` and `game_module_v2`
//! share this file). Its start-up subscribes to every kind of delegate the engine has, in every
//! way; its shut-down subscribes nothing away: the engine's unload must remove all of it.

use engine_api::{Hit, engine};
use lumina::core_delegates::{SettingsClass, WorldId};
use lumina::event::{AppTickEvent, Event};
use lumina::{CoreDelegates, main_thread};
use std::cell::Cell;
use std::rc::Rc;

const VERSION: &str = env!("CARGO_PKG_NAME");

fn tag() -> &'static str {
    &VERSION[VERSION.len() - 2..]
}

/// A capture whose `Drop` prints: the engine must drop it before unmapping the library.
struct Capture(&'static str);

impl Drop for Capture {
    fn drop(&mut self) {
        println!("{}: capture of {} dropped", tag(), self.0);
    }
}

/// A module object bound as a member and as an input handler.
struct Game {
    travelled: Cell<u32>,
}

impl Game {
    fn travelled(&self, old: WorldId, new: WorldId) {
        self.travelled.set(self.travelled.get() + 1);
        println!(
            "{}: travelled {} ({})",
            tag(),
            self.travelled.get(),
            old != new
        );
    }
}

impl lumina::event::EventHandler for Game {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        if let Some(tick) = event.downcast_ref::<AppTickEvent>() {
            println!("{}: input handler got AppTick {}", tag(), tick.delta_time);
        }
        false
    }
}

fn saved(class: &SettingsClass) {
    println!("{}: settings saved: {class}", tag());
}

lumina::gameplay_tags! {
    /// The module's own tags: its start-up registers them, so the engine finds them by name in
    /// the one registry of the process (MB1, GB1).
    mod tags {
        Module.Loot.Found: u32,
    }
}

fn start_up() {
    println!("{}: start-up", tag());
    tags::register().expect("the engine declares no module tag with another payload type");
    let core = CoreDelegates::get();
    let game = Rc::new(Game {
        travelled: Cell::new(0),
    });
    // The tick lambda keeps the module's object alive: only the engine's unload ends both.
    let keep = Rc::clone(&game);
    let capture = Capture("the tick lambda");
    let tick = engine().on_tick.add_lambda(move |frame| {
        let _ = (&capture, &keep);
        println!("{}: tick {frame}", tag());
    });
    // A prioritized subscription (B3) is the module's like any other (MB4).
    let _ = engine()
        .on_tick
        .subscribe()
        .priority(-1)
        .add_static(|frame| println!("{}: static tick {frame}", tag()));
    let _ = core.on_settings_saved().add_static(saved);
    let _ = core.on_world_travelled().add_member(&game, Game::travelled);
    let _ = engine()
        .input
        .register_event_handler(&game, lumina::event::InputLayer::Default);
    let _ = engine()
        .on_hit
        .add_lambda(|hit: &Hit| println!("{}: hit for {}", tag(), hit.damage));
    let _ = engine().on_hit.add_member(&game, |_, hit: &Hit| {
        println!("{}: member hit {}", tag(), hit.damage)
    });
    let _ = core
        .on_pre_engine_shutdown()
        .add_lambda(|| println!("{}: engine shutting down", tag()));
    // The one engine (MB1): the handle counter, and the queue the game thread drains.
    println!("{}: tick subscription is {tick:?}", tag());
    std::thread::spawn(|| {
        main_thread::enqueue(|| {
            println!(
                "{}: queued from a worker thread, ran on the game thread",
                tag()
            )
        });
    })
    .join()
    .unwrap();
}

fn shut_down() {
    // Removes nothing: the engine's unload must find every subscription itself.
    println!("{}: shut-down", tag());
}

lumina::game_module!(start_up, shut_down);
