//! # lumina
//!
//! The Lumina game engine's notification system. Four mechanisms, not interchangeable:
//!
//! 1. **Delegates**: single-cast [`Delegate`] and multicast [`MulticastDelegate`] callbacks with
//!    [`DelegateHandle`]s, whose broadcast stays correct while subscribers add, remove, clear and
//!    re-broadcast from inside it.
//! 2. **Script delegates**: reflected events that Rust and a managed C# runtime both bind to
//!    ([`ScriptDelegate`]).
//! 3. **Input events**: event types dispatched through a prioritized handler chain
//!    ([`EventProcessor`]).
//! 4. **The gameplay message bus**: tag-addressed messages between gameplay entities
//!    ([`MessageBus`], tags declared by [`gameplay_tags!`]).
//!
//! Start with the [`guide`]: how to choose between the mechanisms, the game thread and the
//! main-thread queue, script delegates and the C# host, input routing, how to see lumina's
//! diagnostics (install a `tracing` subscriber), and the classic failure modes with what lumina
//! does instead. The rule ids cited everywhere (M3, C2, SD4, ...) are defined in [`rules`].
//!
//! Game code depends on this crate only; every macro works through it. With the cargo features
//! `winit` and `gilrs` (off by default), `platform` feeds the input events from real windows and
//! gamepads.
//!
//! ```
//! use lumina::MulticastDelegate;
//!
//! let on_tick: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
//! let handle = on_tick.add_lambda(|dt| println!("tick {dt}"));
//! on_tick.broadcast(0.016);
//! on_tick.remove(handle);
//! ```

// On docs.rs (`--cfg docsrs`, nightly): each item says which cargo feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// What game code uses every day, in one import: `use lumina::prelude::*;`.
///
/// The delegates and their declaring macros, handles, scoped guards and bind-only views, what a
/// subscription listing shows, the queued sender and the main-thread queue, the core delegates,
/// script delegates and their macros, the input events' traits, processor and macro (the traits
/// are needed in scope for methods such as `static_type()` and `downcast_ref`) with `Key` and
/// `KeyPressedEvent`, the message bus with `Tag` and `gameplay_tags!`, and the coroutines' entry
/// points (`spawn_local`, `frames`). Everything else stays in its module
/// (`lumina::event::Modifiers`, `lumina::module`, ...).
///
/// ```
/// use lumina::prelude::*;
///
/// declare_multicast_delegate!(pub OnScore(points: u32));
///
/// #[event_class(KeyPressed)]
/// pub struct Jump;
///
/// let on_score = OnScore::new();
/// let handle: DelegateHandle = on_score.add_lambda(|points| println!("score {points}"));
/// let listed: Vec<Subscription> = on_score.subscriptions();
/// assert_eq!(listed[0].owner, OwnerState::NoOwner);
/// on_score.broadcast(10);
/// on_score.remove(handle);
/// assert_eq!(Jump::static_type(), EventType::KeyPressed);
///
/// // The bus, tags, keys and coroutines come with it too.
/// let bus: MessageBus<u32> = MessageBus::new();
/// assert_eq!(bus.posted(), 0);
/// let key_event = KeyPressedEvent::new(Key::E, lumina::event::Modifiers::NONE);
/// assert_eq!(KeyPressedEvent::static_type(), EventType::KeyPressed);
/// assert_eq!(key_event.key, Key::E);
/// assert!(Tag::find("Prelude.Unknown").is_err());
/// main_thread::designate_game_thread();
/// let task = spawn_local(async {
///     frames(1).await; // the next frame
///     frames(1).await;
/// });
/// for _frame in 0..3 {
///     main_thread::process_queue();
/// }
/// assert_eq!(task.status(), coroutine::TaskStatus::Finished);
/// ```
pub mod prelude {
    pub use crate::gameplay_tags;
    pub use crate::{
        CoreDelegates, Delegate, DelegateHandle, MulticastDelegate, QueuedSender, Registration,
        ScopedSubscription, ScriptComponent, ScriptDelegate, declare_delegate,
        declare_multicast_delegate, event_class, main_thread, script_delegate,
    };
    pub use lumina_runtime::bind_site::{OwnerState, Subscription};
    pub use lumina_runtime::bus::{MessageBus, Tag};
    pub use lumina_runtime::coroutine::{self, frames, spawn_local};
    pub use lumina_runtime::event::{
        Event, EventCategory, EventClass, EventHandler, EventProcessor, EventType, InputLayer, Key,
        KeyPressedEvent,
    };
}

// The README's tour: its code blocks are compiled and run as doctests, so the front page's code
// stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeTour;

#[doc = include_str!("guide.md")]
pub mod guide {}

#[doc = include_str!("rules.md")]
pub mod rules {}

#[doc = include_str!("addresses.md")]
pub mod addresses {}

pub use lumina_runtime::*;

// With `dynamic_linking`, the runtime is linked through the one shared `lumina-notify-dylib` (MB1), the
// way bevy's `dynamic_linking` links `bevy_dylib`.
#[cfg(feature = "dynamic_linking")]
#[allow(unused_imports)]
use lumina_dylib as _;

pub use lumina_macros::event_class;
pub use lumina_macros::{ScriptComponent, script_delegate};

#[doc(hidden)]
pub use lumina_runtime::__private;

/// Declares a named multicast delegate type: any number of subscribers, called in the order
/// they were added (rules M1-M12 of the runtime's [`MulticastDelegate`], which it wraps).
///
/// Three forms: no parameters, parameters (names optional, references allowed), and a return
/// type. Attributes and doc comments pass through to the type; the visibility is optional.
///
/// ```
/// use lumina::declare_multicast_delegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// pub struct Window {
///     pub title: String,
/// }
///
/// declare_multicast_delegate!(
///     /// Fired once the project is loaded.
///     pub ProjectLoaded
/// );
/// declare_multicast_delegate!(pub WindowResize(window: &Window, size: (u32, u32)));
/// declare_multicast_delegate!(pub Query(value: i32) -> bool);
///
/// let on_loaded = ProjectLoaded::new();
/// let _log = on_loaded.add_lambda(|| println!("project loaded"));
/// on_loaded.broadcast_and_clear();
/// assert!(!on_loaded.is_bound());
///
/// // Closures taking references need no annotations.
/// let on_resize = WindowResize::default();
/// let last = Rc::new(Cell::new((0, 0)));
/// let sink = Rc::clone(&last);
/// let handle = on_resize.add_lambda(move |window, size| {
///     println!("{} is now {size:?}", window.title);
///     sink.set(size);
/// });
/// on_resize.broadcast(&Window { title: "main".into() }, (1280, 720));
/// assert_eq!(last.get(), (1280, 720));
/// assert!(on_resize.remove(handle));
///
/// // With a return type, `broadcast_collect` returns every result in call order.
/// let query = Query::new();
/// let _positive = query.add_lambda(|value| value > 0);
/// let _even = query.add_static(|value| value % 2 == 0);
/// assert_eq!(query.broadcast_collect(3), vec![true, false]);
/// ```
///
/// Member bindings hold their object weakly:
///
/// ```
/// use lumina::declare_multicast_delegate;
/// use std::rc::Rc;
///
/// declare_multicast_delegate!(OnScore(u32));
///
/// struct Hud;
/// impl Hud {
///     fn show(&self, score: u32) {
///         println!("score {score}");
///     }
/// }
///
/// let on_score = OnScore::new();
/// let hud = Rc::new(Hud);
/// let _binding = on_score.add_member(&hud, Hud::show);
/// assert!(on_score.is_bound_to(&hud));
/// drop(hud);
/// assert_eq!(on_score.len(), 0); // never runs again
/// on_score.broadcast(10);
/// ```
///
/// Subscriptions may carry a priority (B3): higher priorities run first, equal ones in the order
/// added, and the plain `add_*` methods are priority 0. The owner of a delegate can keep it
/// private and hand out its `registration()`, a bind-only view named `<Name>Registration` that
/// subscribes and unsubscribes but cannot broadcast or clear (B2):
///
/// ```
/// use lumina::declare_multicast_delegate;
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// declare_multicast_delegate!(pub Died(cause: &str));
///
/// #[derive(Default)]
/// pub struct Player {
///     on_died: Died, // private: only the player broadcasts
/// }
///
/// impl Player {
///     pub fn on_died(&self) -> DiedRegistration<'_> {
///         self.on_died.registration()
///     }
///
///     pub fn die(&self, cause: &str) {
///         self.on_died.broadcast(cause);
///     }
/// }
///
/// let player = Player::default();
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let (hud, save) = (Rc::clone(&log), Rc::clone(&log));
/// let _hud = player.on_died().add_lambda(move |cause| hud.borrow_mut().push(format!("hud: {cause}")));
/// // Saving must happen before anything else reacts.
/// let _save = player
///     .on_died()
///     .subscribe()
///     .priority(10)
///     .add_lambda(move |_| save.borrow_mut().push("save".to_owned()));
/// player.die("lava");
/// assert_eq!(*log.borrow(), ["save", "hud: lava"]);
/// // player.on_died().broadcast("cheat"); // error: no method named `broadcast` found
/// ```
///
/// A delegate whose parameter types are all owned (no reference or lifetime in them) can also be
/// broadcast from other threads through a
/// [`QueuedSender`] (B4), which runs the broadcast on
/// the game thread.
///
/// The generated type has `new` (a `const fn`), `add_lambda`, `add_static`, `add_member`,
/// `subscribe()` (the builder of options: priority, once, muted, self-aware), `registration`,
/// `remove`, `remove_all`, `is_bound_to`, `clear`,
/// `broadcast`, `broadcast_and_clear`, `broadcast_collect` (with a return type), `is_bound`,
/// `len`, `is_empty`, and implements `Default` and `Debug`. An owned parameter type must be
/// `Clone` (it is cloned for every subscriber but the last); a type that is not is a compile
/// error at that parameter. The type is neither `Send` nor `Sync`.
///
/// Its `next()` (X5) is a future of the next broadcast's arguments as owned values: the future
/// outlives the broadcast, so a reference parameter becomes the owned value its `ToOwned` gives
/// (`&str` a `String`, `&[T]` a `Vec<T>`, `&T` a clone of `T`).
///
/// ```
/// use lumina::declare_multicast_delegate;
/// use lumina::{NextBroadcast, coroutine, main_thread};
/// use std::rc::Rc;
///
/// declare_multicast_delegate!(pub OnChat(player: u32, text: &str));
///
/// main_thread::designate_game_thread();
/// let on_chat = Rc::new(OnChat::new());
/// let next: NextBroadcast<(u32, String)> = on_chat.next(); // `&str` arrives as a `String`
/// let task = coroutine::spawn_local(async move {
///     let (player, text): (u32, String) = next.await.unwrap();
///     assert_eq!((player, text.as_str()), (7, "gg"));
/// });
/// on_chat.broadcast(7, "gg");
/// main_thread::process_queue();
/// assert_eq!(task.status(), coroutine::TaskStatus::Finished);
/// ```
///
/// **The thread-safe form** (TS1): `sync` before the name declares a `Send + Sync` delegate over
/// [`SyncMulticastDelegate`]: subscribe, remove and broadcast from any thread. Its parameters
/// are owned (each subscriber, on any thread, gets its own clone), it returns nothing and takes
/// up to four parameters; a borrowed parameter or a return type is one compile error at that
/// token. The type has `new` and `broadcast` and dereferences to the runtime's delegate for the
/// rest (`add_lambda`, `add_member` with an `Arc` owner, `add_queued`, `subscribe()`,
/// `registration()`, `remove`, `scoped`, `block`, `subscriptions`, ...).
///
/// ```
/// use lumina::declare_multicast_delegate;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// declare_multicast_delegate!(
///     /// An asset finished loading, announced by the loader's thread.
///     pub sync AssetLoaded(path: String, bytes: u64)
/// );
///
/// let on_loaded = Arc::new(AssetLoaded::new());
/// let total = Arc::new(AtomicU64::new(0));
/// let sink = Arc::clone(&total);
/// let _audio = on_loaded.subscribe().priority(1).add_lambda(move |path, bytes| {
///     println!("{path} is in");
///     sink.fetch_add(bytes, Ordering::Relaxed);
/// });
/// let loader = {
///     let on_loaded = Arc::clone(&on_loaded);
///     std::thread::spawn(move || on_loaded.broadcast("forest.ogg".into(), 4096))
/// };
/// loader.join().unwrap();
/// assert_eq!(total.load(Ordering::Relaxed), 4096);
/// ```
pub use lumina_macros::declare_multicast_delegate;

/// Declares a named single-cast delegate type: one callable or nothing (rules S1-S3 of the
/// runtime's [`Delegate`], which it wraps).
///
/// The forms are those of [`declare_multicast_delegate!`].
///
/// ```
/// use lumina::declare_delegate;
/// use std::rc::Rc;
///
/// declare_delegate!(pub Predicate(value: i32) -> bool);
/// declare_delegate!(pub Notify());
///
/// let is_positive = Predicate::create_lambda(|value| value > 0);
/// assert!(is_positive.execute(5));
/// assert_eq!(is_positive.execute_if_bound(-1), Some(false));
///
/// let mut notify = Notify::create_static(|| println!("notified"));
/// notify.execute();
/// notify.unbind();
/// assert_eq!(notify.execute_if_bound(), None); // `execute` would panic, naming `Notify`
///
/// struct Door {
///     locked: bool,
/// }
/// let door = Rc::new(Door { locked: true });
/// let can_open = Predicate::create_member(&door, |door, _key| !door.locked);
/// assert_eq!(can_open.execute_if_bound(7), Some(false));
/// drop(door);
/// assert!(!can_open.is_bound());
/// ```
///
/// The generated type has `new` (a `const fn`, unbound), `create_lambda`, `create_static`,
/// `create_member`, `is_bound`, `is_bound_to`, `unbind`, `execute` (panics when unbound, naming
/// the type) and `execute_if_bound` (returns `Option<R>`), and implements `Clone`, `Default` and
/// `Debug`.
pub use lumina_macros::declare_delegate;

/// Declares gameplay tags for the message bus ([`bus`]), each with the payload type its messages
/// carry (rules GB1, GB2).
///
/// Tags nest: `Combat { Damage: Damage { Critical: Damage } }` declares `Combat` (no payload),
/// `Combat.Damage` and `Combat.Damage.Critical`, both carrying `Damage`; a dotted name
/// (`Match.State: MatchState`) declares its parents too. Each tag becomes a typed `static`
/// named after its path (`COMBAT_DAMAGE_CRITICAL`), so a misspelled tag is a compile error with
/// rustc's "a static with a similar name exists", and a payload of the wrong type is a type
/// error. `#[retained]` keeps the tag's last message for listeners added later (GB6);
/// `#[script]` lets managed scripts listen and send on the tag through the C ABI (GB8) and needs a
/// reflected `#[script_delegate]` payload (or none): any other payload type is an error on that
/// type. Doc comments pass through.
///
/// Written as `vis mod name { ... }`, the statics go into that module (which sees the
/// enclosing module's items, so payload types need no path); written bare, they are declared in
/// place, private.
///
/// The module also gets two functions (lowercase, so no tag constant collides with them):
/// - `register() -> Result<(), TagConflict>` registers every tag of the set in the process's tag
///   registry, with its payload type, retention and script layout, so data files, scripts and
///   the C ABI find it by name before Rust code uses it (a key registers its own tag on first
///   use, which is too late for them). Call it at start-up: the engine for its sets, a game
///   module for its own when it loads (one registry per process). Calling it again costs one
///   atomic load per tag. A tag another set declares with another payload type is the
///   [`TagConflict`](bus::TagConflict) it returns; the first declaration stands and the set's
///   other tags are registered.
/// - `all() -> &'static [&'static dyn DeclaredTag]` lists the set's keys, parents first
///   ([`DeclaredTag`](bus::DeclaredTag): name, payload type name, flags, `register`).
///
/// The bare form has neither; register its keys with [`TagKey::register`](bus::TagKey::register).
///
/// ```
/// use lumina::bus::MessageBus;
/// use lumina::gameplay_tags;
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// #[derive(Debug, PartialEq)]
/// pub enum MatchState {
///     Warmup,
///     Playing,
/// }
///
/// pub struct Damage {
///     pub amount: u32,
/// }
///
/// gameplay_tags! {
///     pub mod tags {
///         /// Everything that happens in a fight.
///         Combat {
///             Damage: Damage {
///                 Critical: Damage,
///             },
///             Heal: u32,
///         },
///         #[retained]
///         Match.State: MatchState,
///     }
/// }
///
/// fn main() {
///     // Start-up: every tag of the set is found by name from now on.
///     tags::register().unwrap();
///     let critical = lumina::bus::Tag::find("Combat.Damage.Critical").unwrap();
///     assert_eq!(critical, tags::COMBAT_DAMAGE_CRITICAL.tag());
///     assert_eq!(tags::all().len(), 6); // with the implicit parent `Match`
///     let bus: MessageBus<u32> = MessageBus::new();
///     bus.send(&tags::MATCH_STATE, MatchState::Playing);
///     // Added later, a listener of a retained tag hears its last message at once.
///     let seen = Rc::new(RefCell::new(Vec::new()));
///     let sink = Rc::clone(&seen);
///     let _scoreboard = bus.listen(&tags::MATCH_STATE, move |state, _| sink.borrow_mut().push(format!("{state:?}")));
///     assert_eq!(*seen.borrow(), ["Playing"]);
///     assert_eq!(tags::COMBAT_DAMAGE_CRITICAL.tag().parent(), Some(tags::COMBAT_DAMAGE.tag()));
/// }
/// ```
pub use lumina_macros::gameplay_tags;
