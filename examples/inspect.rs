//! See who hears what (V1): boots the engine loop's world (the `engine_loop` example's modules on
//! the core delegates), adds a named delegate of the game, a script delegate, a thread-safe
//! delegate, a gameplay bus (with a pending `next()` future) and the input side (a processor, the
//! editor chrome, a game viewport and a self-aware splash viewport), hands all of it to an
//! `Inspector` and writes the picture: every kind of source the inspector draws.
//!
//! Run with `cargo run --example inspect --features svg [-- <folder>]`: it writes
//! `notifications.dot` and `notifications.svg` to the folder (the current one by default). Each
//! subscriber is labelled with where it subscribed (file:line), its priority, and whether it is
//! muted, one-shot, self-aware, a pending future or a member binding whose owner lives.
//! `docs/notifications.svg`, the picture the README shows, is this example's output
//! (`tests/inspect.rs` checks it is current; `LUMINA_BLESS=1` rewrites it).

use std::path::PathBuf;
use std::rc::Rc;

use lumina::bus::{MessageBus, TagKey};
use lumina::core_delegates::CoreDelegates;
use lumina::event::{
    EventProcessor, InputLayer, InputViewportRegistry, KeyboardEvent, MouseEvent, Rect, category,
};
use lumina::inspect::Inspector;
use lumina::{ScriptDelegate, SyncMulticastDelegate, declare_multicast_delegate, script_delegate};

/// The engine loop of `examples/engine_loop.rs`: its modules subscribe to the core delegates.
#[allow(dead_code)]
#[path = "engine_loop.rs"]
mod engine_loop;

static COMBAT_DAMAGE: TagKey<u32> = TagKey::new("Combat.Damage", false);
static MATCH_STATE: TagKey<&'static str> = TagKey::new("Match.State", true);

declare_multicast_delegate!(
    /// The game's own named delegate: the score changed.
    OnScoreChanged(score: u32)
);

/// What a script delegate carries to Rust and C# listeners alike.
#[script_delegate]
pub struct Damaged {
    /// Hit points lost.
    pub amount: f32,
}

fn main() {
    let folder = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_owned()));
    let engine = engine_loop::Engine::boot();

    // Gameplay: the HUD hears damage, a squad hears every combat message of entity 7, the
    // announcer calls the first hit only, the scoreboard follows the match.
    let bus: MessageBus<u32> = MessageBus::new();
    let _hud = bus.listen(&COMBAT_DAMAGE, |damage, _| println!("[hud] -{damage}"));
    let _squad = bus
        .subscribe()
        .partial()
        .entity(7)
        .listen(COMBAT_DAMAGE.tag().parent().expect("Combat"), |_| {});
    let _announcer = bus
        .subscribe()
        .once()
        .partial()
        .listen(&COMBAT_DAMAGE, |_| println!("[announcer] first blood"));
    let _scoreboard = bus.listen(&MATCH_STATE, |state, _| println!("[scoreboard] {state}"));
    // A coroutine waiting for the match's next state: a `next()` future, drawn dashed.
    let _next_state = bus.next(&MATCH_STATE);

    // The game's delegates: the HUD and the achievements hear the score (the HUD first); the
    // player's health component tells Rust and C# it was damaged; the asset streamer tells any
    // thread a level loaded, and the game thread through the queue.
    let on_score = OnScoreChanged::new();
    let _score_hud = on_score
        .subscribe()
        .priority(10)
        .add_lambda(|score| println!("[hud] score {score}"));
    let _achievements = on_score
        .subscribe()
        .self_aware()
        .add_lambda(|_, score| println!("[achievements] {score}"));
    let on_damaged: ScriptDelegate<Damaged> = ScriptDelegate::new();
    let _health_bar = on_damaged.add_lambda(|hit| println!("[health bar] -{}", hit.amount));
    let on_level_loaded: SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> =
        SyncMulticastDelegate::new();
    let _streamer = on_level_loaded.add_lambda(|level| println!("[streamer] level {level}"));
    let _queued = on_level_loaded.add_queued(|level| println!("[game thread] level {level}"));

    // Input: the editor chrome under a game viewport; the chrome's shortcuts are muted while
    // playing.
    let processor = EventProcessor::new();
    let viewports = Rc::new(InputViewportRegistry::new());
    assert!(viewports.register(&processor));
    let _game_view = viewports.add_viewport_handler::<category::Keyboard>(
        Rect::new(0.0, 0.0, 1280.0, 720.0),
        |_: KeyboardEvent<'_>| true,
    );
    let chrome = processor
        .add_handler::<category::Mouse>(InputLayer::EditorChrome, |_: MouseEvent<'_>| false);
    let shortcuts = processor
        .add_handler::<category::Keyboard>(InputLayer::EditorChrome, |_: KeyboardEvent<'_>| false);
    processor.block(shortcuts.handle());
    // A splash screen over the game view that goes away on its first click (self-aware).
    let _splash = viewports
        .subscribe()
        .self_aware()
        .add_viewport_handler::<category::Mouse>(
            Rect::new(320.0, 180.0, 640.0, 360.0),
            |this, _: MouseEvent<'_>| this.remove(),
        );

    let mut inspector = Inspector::new();
    inspector
        .add("core", CoreDelegates::get())
        .add("on_score_changed", &on_score.subscriptions())
        .add("on_damaged", &on_damaged)
        .add("on_level_loaded", &on_level_loaded)
        .add("gameplay bus", &bus)
        .add("input", &processor)
        .add("viewports", &viewports);
    let graph = inspector.finish();

    std::fs::create_dir_all(&folder).expect("create the output folder");
    let dot = folder.join("notifications.dot");
    std::fs::write(&dot, graph.to_dot()).expect("write notifications.dot");
    let svg = folder.join("notifications.svg");
    std::fs::write(&svg, graph.to_svg()).expect("write notifications.svg");
    let subscribers: usize = graph
        .sources
        .iter()
        .map(|source| source.subscribers.len())
        .sum();
    println!(
        "[inspect] {} sources, {subscribers} subscribers: wrote {} and {}",
        graph.sources.len(),
        dot.display(),
        svg.display()
    );
    drop((engine, chrome, shortcuts));
}
