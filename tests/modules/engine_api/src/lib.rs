//! The fixture engine's API for game modules, beyond the core delegates: a tick delegate, a
//! script delegate and an event processor, all owned by the engine on the game thread. A Rust
//! `dylib`, so that the engine and its modules share it like they share the runtime.

/// The runtime, for libraries that link this one and not `lumina` itself: one Rust `dylib`
/// holds lumina's facade, so a second one that linked it too could not be linked with this one.
pub use lumina;

use lumina::bus::MessageBus;
use lumina::event::InputViewportRegistry;
use lumina::{
    Delegate, EventProcessor, MulticastDelegate, ScriptDelegate, gameplay_tags, script_delegate,
};
use std::cell::{OnceCell, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};

/// What the engine's physics reports.
#[script_delegate]
pub struct Hit {
    /// Damage dealt.
    pub damage: f32,
}

/// The engine's objects, created on first use on the game thread and never moved.
pub struct Engine {
    /// Fired every frame with the frame number.
    pub on_tick: MulticastDelegate<dyn Fn(u32)>,
    /// Fired when something is hit.
    pub on_hit: ScriptDelegate<Hit>,
    /// The input chain.
    pub input: EventProcessor,
    /// The gameplay message bus.
    pub bus: MessageBus<u32>,
    /// The viewports of the editor (not registered with `input`: the engine routes to them).
    pub viewports: InputViewportRegistry,
    /// A single-cast delegate the engine stores and calls: what a module binds to answer the
    /// engine's score queries.
    pub score_query: RefCell<Delegate<dyn Fn(u32) -> u32>>,
}

gameplay_tags! {
    /// The engine's own message tags.
    pub mod bus_tags {
        /// Sent every frame with its number.
        Engine.Frame: u32,
        /// Calls posted for the engine to run when it delivers them.
        Engine.Call: Box<dyn Fn()>,
        /// The current state, as a call (retained).
        #[retained]
        Engine.State: Box<dyn Fn()>,
        /// A second retained state, which the engine overwrites after a module set it.
        #[retained]
        Engine.Mirror: Box<dyn Fn()>,
    }
}

/// How many payloads of a module's types were dropped.
static PAYLOADS_DROPPED: AtomicU32 = AtomicU32::new(0);

/// Called by the `Drop` of a module's payload types: counts and traces the drop.
pub fn payload_dropped(kind: &str, number: u32) {
    PAYLOADS_DROPPED.fetch_add(1, Ordering::SeqCst);
    println!("engine_api: module payload {kind} {number} dropped");
}

/// How many payloads of a module's types were dropped so far.
pub fn payloads_dropped() -> u32 {
    PAYLOADS_DROPPED.load(Ordering::SeqCst)
}

thread_local! {
    static ENGINE: OnceCell<&'static Engine> = const { OnceCell::new() };
}

/// The engine's objects (game thread).
pub fn engine() -> &'static Engine {
    ENGINE.with(|engine| {
        *engine.get_or_init(|| {
            Box::leak(Box::new(Engine {
                on_tick: MulticastDelegate::new(),
                on_hit: ScriptDelegate::new(),
                input: EventProcessor::new(),
                bus: MessageBus::new(),
                viewports: InputViewportRegistry::new(),
                score_query: RefCell::new(Delegate::new()),
            }))
        })
    })
}

thread_local! {
    static PLAN: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

/// What the `reentrant_module` fixture does, and from where: `"<point>-<operation>"` (see that
/// module), set by the engine before it loads the module.
pub fn set_plan(plan: &'static str) {
    PLAN.set(plan);
}

/// The plan the engine set (game thread).
pub fn plan() -> &'static str {
    PLAN.get()
}

/// A tick callback whose code is the engine's (this library's), for a module to subscribe: the
/// subscription outlives the module's unload, its bind site lies in the module (R5).
pub fn engine_callback() -> std::rc::Rc<dyn Fn(u32)> {
    std::rc::Rc::new(|frame| println!("engine_api: engine callback, frame {frame}"))
}

/// Subscribes `tick` to `on_tick`: the engine's instantiation of
/// `add_lambda::<Box<dyn Fn(u32)>>`, which a module that subscribes a boxed closure shares in
/// debug builds (its vtable then lies in this library).
pub fn add_boxed_tick(tick: Box<dyn Fn(u32)>) -> lumina::DelegateHandle {
    engine().on_tick.add_lambda(tick)
}

thread_local! {
    static NAMES: std::cell::RefCell<Vec<&'static str>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps `name` for the engine (a `&'static str` a module handed out).
pub fn keep_name(name: &'static str) {
    NAMES.with_borrow_mut(|names| names.push(name));
}

/// The names kept so far (game thread).
pub fn kept_names() -> Vec<&'static str> {
    NAMES.with_borrow(Clone::clone)
}

/// Queues `task`: the engine's instantiation of `enqueue::<Box<dyn FnOnce() + Send>>`, which a
/// module that queues a boxed closure shares in debug builds.
pub fn enqueue_boxed(task: Box<dyn FnOnce() + Send>) {
    lumina::main_thread::enqueue(task);
}

/// Spawns `task`: the engine's instantiation of `spawn_local::<Pin<Box<dyn Future>>>`, which a
/// module that spawns a boxed future shares in debug builds.
pub fn spawn_boxed(
    task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
) -> lumina::coroutine::TaskHandle {
    lumina::coroutine::spawn_local(task)
}
