//! [`CoreDelegates`]: the engine-wide signals (rules C1-C3), and the small engine types their
//! signatures carry: [`ModuleInfo`], [`WorldId`], [`SettingsClass`].
//!
//! The set is reached with [`CoreDelegates::get`], from any crate of the process, on the game
//! thread (T1, see [`main_thread`]). Off the game thread every access panics
//! and names `main_thread::enqueue`: compute there, then enqueue a task that broadcasts on the
//! game thread.
//!
//! The three lifecycle signals ([`on_pre_engine_init`](CoreDelegates::on_pre_engine_init),
//! [`on_post_engine_init`](CoreDelegates::on_post_engine_init),
//! [`on_pre_engine_shutdown`](CoreDelegates::on_pre_engine_shutdown)) are one-shot
//! [`LifecycleSignal`]s: they fire once, then forget their subscribers. Subscribe to them from a
//! module's start-up, which runs before the engine fires them; a subscription made after one
//! fired never runs, but [`has_fired`](LifecycleSignal::has_fired) tells, and the late
//! subscription is reported through `tracing` naming the signal (C2).
//!
//! ```
//! use lumina::core_delegates::{CoreDelegates, SettingsClass, WorldId};
//! use lumina::main_thread;
//!
//! static AUDIO_SETTINGS: SettingsClass = SettingsClass::new("AudioSettings", "Engine");
//!
//! main_thread::designate_game_thread();
//! let core = CoreDelegates::get();
//!
//! // A module's start-up: subscribe before the engine fires the lifecycle signals.
//! let _ = core.on_post_engine_init().add_lambda(|| println!("engine is up"));
//! // Engine-lifetime subscriptions, visibly discarded.
//! let _ = core.on_settings_saved().add_lambda(|class| {
//!     if class == &AUDIO_SETTINGS {
//!         println!("rebuilding the audio mixer");
//!     }
//! });
//! let _ = core.on_world_travelled().add_lambda(|old, new| {
//!     println!("dropping what was cached for {old}, now in {new}");
//! });
//!
//! // The engine:
//! core.on_pre_engine_init().broadcast_and_clear();
//! core.on_post_engine_init().broadcast_and_clear();
//! core.on_settings_saved().broadcast(&AUDIO_SETTINGS);
//! core.on_world_travelled().broadcast(WorldId::new_unique(), WorldId::new_unique());
//! assert!(core.on_post_engine_init().has_fired());
//! ```

use std::any::Any;
use std::cell::{Cell, OnceCell};
use std::fmt;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::drops::Drops;
use crate::handle::DelegateHandle;
use crate::main_thread;
use crate::multicast::MulticastDelegate;
use crate::scoped::ThisSubscription;
use crate::subscribe::{Plain, SelfAware, Subscribe, TakesPlainFunction};
use lumina_macros::declare_multicast_delegate;

// ---------------------------------------------------------------------------------------------
// Engine types the signatures carry.
// ---------------------------------------------------------------------------------------------

/// Describes a module (a unit of engine or game code with a start-up and a shut-down), as passed
/// to [`CoreDelegates::on_module_loaded`].
///
/// ```
/// use lumina::core_delegates::ModuleInfo;
///
/// let renderer = ModuleInfo::new("Renderer");
/// assert_eq!(renderer.name, "Renderer");
/// assert_eq!(renderer.path, None); // linked into the executable
///
/// let game = ModuleInfo {
///     path: Some("bin/libarena_game.so".into()),
///     ..ModuleInfo::new("ArenaGame")
/// };
/// assert_eq!(game.path.unwrap().to_str(), Some("bin/libarena_game.so"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleInfo {
    /// The module's name, unique in the process.
    pub name: String,
    /// The shared library the module was loaded from, or `None` when it is linked into the
    /// executable.
    pub path: Option<PathBuf>,
}

impl ModuleInfo {
    /// A module linked into the executable, called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ModuleInfo {
            name: name.into(),
            path: None,
        }
    }
}

impl fmt::Display for ModuleInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The identity of a world, and nothing more.
///
/// [`CoreDelegates::on_world_travelled`] passes the old world after it was torn down: there is
/// nothing left to read from it, only something to compare with. A `WorldId` is exactly that: it
/// is `Copy`, `Eq` and `Hash`, so subscribers can find and drop what they cached for the old
/// world (entity handles, property tables), and it cannot be used to reach the world itself.
///
/// Ids come from one process-wide counter: two worlds never share one, even after one of them is
/// gone.
///
/// ```
/// use lumina::core_delegates::WorldId;
///
/// let arena = WorldId::new_unique();
/// let lobby = WorldId::new_unique();
/// assert_ne!(arena, lobby);
/// assert_eq!(arena, arena.clone());
/// println!("travelled from {arena} to {lobby}");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct WorldId(NonZeroU64);

impl WorldId {
    /// A fresh id, never equal to any other `WorldId` of the process.
    pub fn new_unique() -> WorldId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        WorldId(NonZeroU64::new(id).expect("lumina: WorldId counter overflowed"))
    }
}

impl fmt::Display for WorldId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "world#{}", self.0)
    }
}

/// Describes a developer-settings class: a group of settings persisted together (the input
/// action map, audio, ...), as passed to [`CoreDelegates::on_settings_saved`].
///
/// Declare each class once, as a `static`; subscribers compare the class they receive with the
/// ones they care about (`==` compares name and category). It is a descriptor (two names), so
/// it is `Copy`: a copy is the same class, and the future of
/// [`on_settings_saved`](CoreDelegates::on_settings_saved)'s next broadcast (X5) resolves with
/// one.
///
/// ```
/// use lumina::core_delegates::SettingsClass;
///
/// static INPUT_SETTINGS: SettingsClass = SettingsClass::new("InputSettings", "Engine");
/// static AUDIO_SETTINGS: SettingsClass = SettingsClass::new("AudioSettings", "Engine");
///
/// assert_eq!(INPUT_SETTINGS.name, "InputSettings");
/// assert_eq!(INPUT_SETTINGS.to_string(), "Engine.InputSettings");
/// assert_ne!(INPUT_SETTINGS, AUDIO_SETTINGS);
///
/// // A coroutine that waits for the next save (X5): the class arrives as a copy.
/// # let _game = lumina::main_thread::GameThreadScope::enter();
/// use lumina::{coroutine, main_thread, CoreDelegates};
///
/// let waiting = coroutine::spawn_local(async {
///     let saved = CoreDelegates::get().on_settings_saved().next().await;
///     assert_eq!(saved, Ok((AUDIO_SETTINGS,)));
/// });
/// main_thread::process_queue(); // it starts and waits
/// CoreDelegates::get().on_settings_saved().broadcast(&AUDIO_SETTINGS);
/// main_thread::process_queue();
/// assert_eq!(waiting.status(), coroutine::TaskStatus::Finished);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SettingsClass {
    /// The class name, e.g. `"InputSettings"`.
    pub name: &'static str,
    /// The editor category, e.g. `"Engine"`.
    pub category: &'static str,
}

impl SettingsClass {
    /// A settings class called `name`, shown under `category` in the editor.
    pub const fn new(name: &'static str, category: &'static str) -> Self {
        SettingsClass { name, category }
    }
}

impl fmt::Display for SettingsClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.category, self.name)
    }
}

// ---------------------------------------------------------------------------------------------
// One-shot lifecycle signals (C2).
// ---------------------------------------------------------------------------------------------

/// A one-shot signal: it fires once with [`broadcast_and_clear`](Self::broadcast_and_clear),
/// then forgets its subscribers (C2).
///
/// A subscription made after it fired (or while it fires) would never run. It is not silent:
/// the `add_*` methods report it through `tracing` (a `WARN` event naming the signal, with a
/// `signal` field), drop the callable and return the invalid handle, and
/// [`has_fired`](Self::has_fired) tells beforehand, so code that may come late can do its work
/// directly instead.
///
/// ```
/// use lumina::core_delegates::LifecycleSignal;
///
/// let on_ready = LifecycleSignal::new("on_ready");
/// let early = on_ready.add_lambda(|| println!("ready"));
/// assert!(early.is_valid());
/// on_ready.broadcast_and_clear();
/// assert!(on_ready.has_fired());
///
/// // Too late: reported through `tracing`, never runs.
/// let late = on_ready.add_lambda(|| unreachable!());
/// assert!(!late.is_valid());
/// assert!(!on_ready.is_bound());
/// ```
pub struct LifecycleSignal {
    name: &'static str,
    fired: Cell<bool>,
    delegate: MulticastDelegate<dyn Fn()>,
}

impl fmt::Debug for LifecycleSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LifecycleSignal")
            .field("name", &self.name)
            .field("fired", &self.fired.get())
            .field("len", &self.delegate.len())
            .finish()
    }
}

/// A removal key names its subscriptions (`.key(&rc)`, then `remove_all(&rc)`).
impl crate::subscribe::TakesKey for LifecycleSignal {}
impl crate::subscribe::TakesPriority for LifecycleSignal {}

impl<'a, M> Subscribe<'a, LifecycleSignal, M> {
    /// The signal's delegate's builder with these options, or `None` (reported, B5) once the
    /// signal has fired.
    #[track_caller]
    fn in_time(self) -> Option<Subscribe<'a, MulticastDelegate<dyn Fn()>, M>> {
        let (signal, _) = self.parts();
        (!signal.too_late()).then(|| self.retarget(&signal.delegate))
    }

    /// Finishes with a plain function: [`LifecycleSignal::add_static`] with the options. Not
    /// after `.self_aware()`.
    #[track_caller]
    pub fn add_static(self, f: fn()) -> DelegateHandle
    where
        M: TakesPlainFunction,
    {
        match self.in_time() {
            Some(builder) => builder.add_static(f),
            None => DelegateHandle::INVALID,
        }
    }
}

impl Subscribe<'_, LifecycleSignal, Plain> {
    /// Finishes with a closure: [`LifecycleSignal::add_lambda`] with the options.
    #[track_caller]
    pub fn add_lambda(self, f: impl Fn() + 'static) -> DelegateHandle {
        match self.in_time() {
            Some(builder) => builder.add_lambda(f),
            None => DelegateHandle::INVALID,
        }
    }

    /// Finishes with a method of `owner`, held weakly (M9): [`LifecycleSignal::add_member`]
    /// with the options.
    #[track_caller]
    pub fn add_member<T: Any>(
        self,
        owner: &Rc<T>,
        method: impl Fn(&T) + 'static,
    ) -> DelegateHandle {
        match self.in_time() {
            Some(builder) => builder.add_member(owner, method),
            None => DelegateHandle::INVALID,
        }
    }
}

impl Subscribe<'_, LifecycleSignal, SelfAware> {
    /// Finishes with a closure that receives its own subscription (X6).
    #[track_caller]
    pub fn add_lambda(self, f: impl Fn(&ThisSubscription) + 'static) -> DelegateHandle {
        match self.in_time() {
            Some(builder) => builder.add_lambda(f),
            None => DelegateHandle::INVALID,
        }
    }

    /// Finishes with a method of `owner` (held weakly, M9) that receives its own subscription
    /// after the owner (X6).
    #[track_caller]
    pub fn add_member<T: Any>(
        self,
        owner: &Rc<T>,
        method: impl Fn(&T, &ThisSubscription) + 'static,
    ) -> DelegateHandle {
        match self.in_time() {
            Some(builder) => builder.add_member(owner, method),
            None => DelegateHandle::INVALID,
        }
    }
}

impl LifecycleSignal {
    /// A signal that has not fired, called `name` in reports.
    pub const fn new(name: &'static str) -> Self {
        LifecycleSignal {
            name,
            fired: Cell::new(false),
            delegate: MulticastDelegate::new(),
        }
    }

    /// The name used in reports, e.g. `"CoreDelegates::on_post_engine_init"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Every subscription present, in the order they run, with where each was made (B5). O(n),
    /// allocates: for diagnostics and the [inspector](crate::inspect).
    ///
    /// ```
    /// use lumina::core_delegates::LifecycleSignal;
    ///
    /// let on_ready = LifecycleSignal::new("on_ready");
    /// let _handle = on_ready.add_lambda(|| {});
    /// assert_eq!(on_ready.subscriptions().len(), 1);
    /// ```
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        self.delegate.subscriptions()
    }

    /// Whether the signal has fired (it counts as fired from the moment its broadcast starts).
    /// Once it has, subscribing is pointless: do the work directly.
    pub fn has_fired(&self) -> bool {
        self.fired.get()
    }

    /// Adds a closure to run when the signal fires. After it fired: reported (with the place of
    /// this call, B5), dropped, and the invalid handle is returned.
    #[track_caller]
    pub fn add_lambda(&self, f: impl Fn() + 'static) -> DelegateHandle {
        self.subscribe().add_lambda(f)
    }

    /// Adds a plain function; see [`add_lambda`](Self::add_lambda).
    #[track_caller]
    pub fn add_static(&self, f: fn()) -> DelegateHandle {
        self.subscribe().add_static(f)
    }

    /// Adds a method of `owner`, held weakly (M9); see [`add_lambda`](Self::add_lambda).
    #[track_caller]
    pub fn add_member<T: Any>(
        &self,
        owner: &Rc<T>,
        method: impl Fn(&T) + 'static,
    ) -> DelegateHandle {
        self.subscribe().add_member(owner, method)
    }

    /// The future of the signal's broadcast (X5): `Ok(())` when it fires, [`Gone`](crate::Gone)
    /// if it is dropped first, and at once `Err(Gone)` if it has fired already (it never fires
    /// again; reported like a late [`add_lambda`](Self::add_lambda)).
    #[track_caller]
    pub fn next(&self) -> crate::next_broadcast::NextBroadcast<()> {
        if self.too_late() {
            // Subscribed to nothing: the future's subscriber is dropped at once, and it is gone.
            return MulticastDelegate::<dyn Fn()>::new().next();
        }
        self.delegate.next()
    }

    /// A subscription with options (A1): [`MulticastDelegate::subscribe`]'s builder, whose
    /// finishes (`add_lambda`, `add_static`, `add_member`; after `.self_aware()` the callable
    /// receives its own subscription, so it can remove or block itself before the signal fires)
    /// report a late call like [`add_lambda`](Self::add_lambda). Cost: as the plain forms.
    ///
    /// ```
    /// use lumina::core_delegates::LifecycleSignal;
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// struct Splash {
    ///     shown: Cell<u32>,
    /// }
    ///
    /// let on_ready = LifecycleSignal::new("on_ready");
    /// let splash = Rc::new(Splash { shown: Cell::new(0) });
    /// let _ = on_ready.subscribe().self_aware().add_member(&splash, |splash: &Splash, this| {
    ///     splash.shown.set(splash.shown.get() + 1);
    ///     assert!(this.remove(), "done with the signal");
    /// });
    /// on_ready.broadcast_and_clear();
    /// assert_eq!(splash.shown.get(), 1);
    /// ```
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'_, Self> {
        Subscribe::new(self)
    }

    /// Removes the subscription of `handle` (H2).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.delegate.remove(handle)
    }

    /// Removes every subscription made by [`add_static`](Self::add_static) with this function;
    /// returns how many (X7; identity as for
    /// [`MulticastDelegate::remove_static`](crate::MulticastDelegate::remove_static)).
    pub fn remove_static(&self, f: fn()) -> usize {
        self.delegate.remove_static(f)
    }

    /// Blocks the subscription of `handle` (X4): it keeps its place and is skipped if the
    /// signal fires meanwhile (then cleared with the rest: the signal fires once). `false` for
    /// an invalid, foreign or removed handle.
    pub fn block(&self, handle: DelegateHandle) -> bool {
        self.delegate.block(handle)
    }

    /// Lifts one block of the subscription of `handle` (X4, A2: blocks are counted).
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        self.delegate.unblock(handle)
    }

    /// Whether the subscription of `handle` is present and blocked (X4).
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.delegate.is_blocked(handle)
    }

    /// Blocks the subscription of `handle` while the returned guard lives (X4; counted, A2).
    pub fn block_scoped(&self, handle: DelegateHandle) -> crate::scoped::ScopedBlock {
        self.delegate.block_scoped(handle)
    }

    /// Mutes the whole signal while the returned guard lives (A2): if it fires meanwhile nobody is called (and the signal has still fired: it fires once); subscribers keep
    /// their place, blocks and handles, and one-shots are not used up. Counted: guards nest and
    /// drop in any order. See [`ScopedMute`](crate::ScopedMute). O(1).
    pub fn mute(&self) -> crate::scoped::ScopedMute {
        self.delegate.mute()
    }

    /// Whether a [`mute`](Self::mute) guard of this signal lives. O(1).
    pub fn is_muted(&self) -> bool {
        self.delegate.is_muted()
    }

    /// Removes every member binding of `owner`; returns how many (M9).
    pub fn remove_all<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        self.delegate.remove_all(owner)
    }

    /// Whether a live member binding of `owner` waits for the signal (M9).
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.delegate.is_bound_to(owner)
    }

    /// Whether a live subscriber waits for the signal (M8). Always `false` once it fired.
    pub fn is_bound(&self) -> bool {
        self.delegate.is_bound()
    }

    /// How many live subscribers wait for the signal (M8).
    pub fn len(&self) -> usize {
        self.delegate.len()
    }

    /// `true` when no live subscriber waits for the signal.
    pub fn is_empty(&self) -> bool {
        self.delegate.is_empty()
    }

    /// Fires the signal: marks it fired, runs every subscriber in order, then drops them all
    /// (M6). The engine calls this once; a second call finds nobody to run.
    ///
    /// If a subscriber panics, the panic propagates (M7), the subscribers after it do not run,
    /// and the signal is still fired and cleared: a one-shot signal never fires twice for anyone.
    pub fn broadcast_and_clear(&self) {
        /// Clears the delegate when dropped, also while a subscriber's panic unwinds.
        struct ClearOnDrop<'a>(&'a MulticastDelegate<dyn Fn()>);
        impl Drop for ClearOnDrop<'_> {
            fn drop(&mut self) {
                self.0.clear();
            }
        }
        self.fired.set(true);
        let _clear = ClearOnDrop(&self.delegate);
        // The trace span (V2) is named by the signal's name.
        let name = self.name();
        self.delegate.list().broadcast_traced(
            (),
            |subscriber, ()| subscriber(),
            || crate::trace::broadcast_of(move || name),
        );
    }

    /// Back to "not fired, no subscribers": the start of a new engine session. Re-armed first,
    /// so a subscriber's `Drop` that panics in the clear leaves it re-armed (R3).
    fn reset(&self) {
        self.fired.set(false);
        self.delegate.clear();
    }

    /// Whether the signal fired already; then the subscription the caller is making is reported
    /// with the caller's place (C2, B5).
    #[track_caller]
    fn too_late(&self) -> bool {
        if self.fired.get() {
            report_late_subscription(self.name, std::panic::Location::caller());
        }
        self.fired.get()
    }
}

/// The spec's top failure mode, "a core delegate callback never runs", made visible (C2).
#[cold]
fn report_late_subscription(signal: &'static str, site: &'static std::panic::Location<'static>) {
    tracing::warn!(
        signal,
        bind_site = %site,
        "lumina: subscription to `{signal}` at {site} made after it fired; it will never run. `{signal}` \
         is a one-shot lifecycle signal (broadcast and clear): subscribe from a module's \
         start-up, before the engine fires it, or check `has_fired()` and do the work directly"
    );
}

// ---------------------------------------------------------------------------------------------
// The set.
// ---------------------------------------------------------------------------------------------

// The named signal types, declared with the same macro game code uses.

declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_module_loaded`].
    pub OnModuleLoaded(module: &ModuleInfo)
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_module_unloaded`].
    pub OnModuleUnloaded
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::post_world_unload`].
    pub PostWorldUnload
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_world_travelled`]. The old world is already torn down:
    /// it comes as a [`WorldId`], good only for identity comparison.
    pub OnWorldTravelled(old_world: WorldId, new_world: WorldId)
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_content_file_modified`].
    pub OnContentFileModified(path: &Path)
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_content_file_renamed`].
    pub OnContentFileRenamed(old_path: &Path, new_path: &Path)
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_settings_saved`].
    pub OnSettingsSaved(class: &SettingsClass)
);
declare_multicast_delegate!(
    /// The type of [`CoreDelegates::on_game_quit_requested`]; its bound state is the branch (C3).
    pub OnGameQuitRequested
);

/// What [`CoreDelegates::request_game_quit`] decided (C3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "on `ExitProcess` the engine is expected to shut down and exit"]
pub enum QuitOutcome {
    /// Something bound [`on_game_quit_requested`](CoreDelegates::on_game_quit_requested) (an
    /// editor, which ends its play session) and it ran: the process keeps going.
    Handled,
    /// Nothing is bound (a packaged game): the engine should shut down and exit the process.
    ExitProcess,
}

/// The engine-wide signals of the spec's table (C1), one set per process, on the game thread.
///
/// Reach it with [`CoreDelegates::get`]; each signal has an accessor named like the spec's entry
/// in snake case. Every accessor checks that it runs on the game thread (T1) and panics
/// otherwise, naming `main_thread::enqueue`.
///
/// There is exactly one set per game-thread session: for the whole process after
/// [`main_thread::designate_game_thread`], or for the lifetime of one
/// [`GameThreadScope`](main_thread::GameThreadScope) in tests, whose end drops every subscriber
/// and re-arms the one-shot signals.
pub struct CoreDelegates {
    on_pre_engine_init: LifecycleSignal,
    on_post_engine_init: LifecycleSignal,
    on_pre_engine_shutdown: LifecycleSignal,
    on_module_loaded: OnModuleLoaded,
    on_module_unloaded: OnModuleUnloaded,
    post_world_unload: PostWorldUnload,
    on_world_travelled: OnWorldTravelled,
    on_content_file_modified: OnContentFileModified,
    on_content_file_renamed: OnContentFileRenamed,
    on_settings_saved: OnSettingsSaved,
    on_game_quit_requested: OnGameQuitRequested,
}

impl fmt::Debug for CoreDelegates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoreDelegates").finish_non_exhaustive()
    }
}

thread_local! {
    /// The set of this thread, created the first time it is the game thread and asks for it.
    /// Only the game thread ever reaches its set (every access checks), so the process has one
    /// reachable set at a time; a thread that was the game thread in an earlier session finds its
    /// set emptied at that session's end.
    static CORE: OnceCell<&'static CoreDelegates> = const { OnceCell::new() };
}

impl CoreDelegates {
    fn new() -> Self {
        CoreDelegates {
            on_pre_engine_init: LifecycleSignal::new("CoreDelegates::on_pre_engine_init"),
            on_post_engine_init: LifecycleSignal::new("CoreDelegates::on_post_engine_init"),
            on_pre_engine_shutdown: LifecycleSignal::new("CoreDelegates::on_pre_engine_shutdown"),
            on_module_loaded: OnModuleLoaded::new(),
            on_module_unloaded: OnModuleUnloaded::new(),
            post_world_unload: PostWorldUnload::new(),
            on_world_travelled: OnWorldTravelled::new(),
            on_content_file_modified: OnContentFileModified::new(),
            on_content_file_renamed: OnContentFileRenamed::new(),
            on_settings_saved: OnSettingsSaved::new(),
            on_game_quit_requested: OnGameQuitRequested::new(),
        }
    }

    /// The engine-wide set.
    ///
    /// ```
    /// use lumina::CoreDelegates;
    /// use lumina::main_thread;
    ///
    /// main_thread::designate_game_thread();
    /// let _ = CoreDelegates::get()
    ///     .on_module_unloaded()
    ///     .add_lambda(|| println!("a module is gone"));
    ///
    /// // Another thread gets no copy of its own: it panics, naming `main_thread::enqueue`.
    /// let off_thread = std::thread::spawn(|| CoreDelegates::get().on_module_unloaded().len());
    /// assert!(off_thread.join().is_err());
    /// ```
    ///
    /// # Panics
    ///
    /// Off the game thread (T1), with a message naming `main_thread::enqueue`.
    #[track_caller]
    pub fn get() -> &'static CoreDelegates {
        main_thread::assert_game_thread("`CoreDelegates::get` (engine-wide state)");
        CORE.with(|core| {
            *core.get_or_init(|| {
                main_thread::at_session_end(end_session);
                Box::leak(Box::new(CoreDelegates::new()))
            })
        })
    }

    #[track_caller]
    fn check(&self, signal: &str) {
        if !main_thread::is_game_thread() {
            main_thread::assert_game_thread(&format!("`CoreDelegates::{signal}`"));
        }
    }

    /// Fires before the engine's subsystems come up; one-shot. In a packaged game this is where
    /// the cooked content is mounted.
    #[track_caller]
    pub fn on_pre_engine_init(&self) -> &LifecycleSignal {
        self.check("on_pre_engine_init");
        &self.on_pre_engine_init
    }

    /// Fires after all engine initialisation, before the main loop; one-shot. Starts the cooked
    /// game in a packaged build.
    #[track_caller]
    pub fn on_post_engine_init(&self) -> &LifecycleSignal {
        self.check("on_post_engine_init");
        &self.on_post_engine_init
    }

    /// Fires as the first step of engine shutdown; one-shot.
    #[track_caller]
    pub fn on_pre_engine_shutdown(&self) -> &LifecycleSignal {
        self.check("on_pre_engine_shutdown");
        &self.on_pre_engine_shutdown
    }

    /// A module was loaded and started: `(module: &ModuleInfo)`.
    #[track_caller]
    pub fn on_module_loaded(&self) -> &OnModuleLoaded {
        self.check("on_module_loaded");
        &self.on_module_loaded
    }

    /// A module was unloaded.
    #[track_caller]
    pub fn on_module_unloaded(&self) -> &OnModuleUnloaded {
        self.check("on_module_unloaded");
        &self.on_module_unloaded
    }

    /// A world was unloaded.
    #[track_caller]
    pub fn post_world_unload(&self) -> &PostWorldUnload {
        self.check("post_world_unload");
        &self.post_world_unload
    }

    /// The engine swapped worlds: `(old_world: WorldId, new_world: WorldId)`. The old world is
    /// already torn down, so it comes as a [`WorldId`], good only for identity comparison;
    /// subscribers drop the entity handles and property tables they cached for it.
    #[track_caller]
    pub fn on_world_travelled(&self) -> &OnWorldTravelled {
        self.check("on_world_travelled");
        &self.on_world_travelled
    }

    /// Editor file watchers saw a content change: `(path: &Path)`. Subscribers filter by
    /// extension. Editor-only in practice.
    #[track_caller]
    pub fn on_content_file_modified(&self) -> &OnContentFileModified {
        self.check("on_content_file_modified");
        &self.on_content_file_modified
    }

    /// A tracked text asset was renamed or moved: `(old_path: &Path, new_path: &Path)`. Open file
    /// editors retarget so a later save writes the new file.
    #[track_caller]
    pub fn on_content_file_renamed(&self) -> &OnContentFileRenamed {
        self.check("on_content_file_renamed");
        &self.on_content_file_renamed
    }

    /// A settings class was persisted: `(class: &SettingsClass)`. Open editors refresh live
    /// instead of waiting for a reopen; the input action map and audio settings rebuild.
    #[track_caller]
    pub fn on_settings_saved(&self) -> &OnSettingsSaved {
        self.check("on_settings_saved");
        &self.on_settings_saved
    }

    /// Gameplay asked to quit. Its bound state is the branch (C3): an editor binds it to end its
    /// play session; unbound (a packaged game), the engine exits. See
    /// [`request_game_quit`](Self::request_game_quit).
    #[track_caller]
    pub fn on_game_quit_requested(&self) -> &OnGameQuitRequested {
        self.check("on_game_quit_requested");
        &self.on_game_quit_requested
    }

    /// Gameplay asks to quit (C3). If something is bound to
    /// [`on_game_quit_requested`](Self::on_game_quit_requested), it runs and the answer is
    /// [`QuitOutcome::Handled`]; if nothing is, nothing runs and the answer is
    /// [`QuitOutcome::ExitProcess`]: the engine shuts down and exits. The engine never needs to
    /// know whether an editor exists.
    ///
    /// ```
    /// use lumina::core_delegates::{CoreDelegates, QuitOutcome};
    /// use lumina::main_thread;
    ///
    /// main_thread::designate_game_thread();
    /// let core = CoreDelegates::get();
    /// assert_eq!(core.request_game_quit(), QuitOutcome::ExitProcess); // a packaged game
    ///
    /// let editor = core
    ///     .on_game_quit_requested()
    ///     .add_lambda(|| println!("play session ended"));
    /// assert_eq!(core.request_game_quit(), QuitOutcome::Handled); // in the editor
    /// # assert!(core.on_game_quit_requested().remove(editor));
    /// ```
    #[track_caller]
    pub fn request_game_quit(&self) -> QuitOutcome {
        let quit = self.on_game_quit_requested();
        if quit.is_bound() {
            quit.broadcast();
            QuitOutcome::Handled
        } else {
            QuitOutcome::ExitProcess
        }
    }

    /// Drops every subscriber and re-arms the one-shot signals. A subscriber whose destructor
    /// panics does not stop the others from being dropped: the first panic propagates once the
    /// whole set is empty, so the next session never finds a stale subscriber (R3); while the
    /// thread already unwinds it is logged instead (R2).
    fn reset(&self) {
        let steps: [&dyn Fn(); 11] = [
            &|| self.on_pre_engine_init.reset(),
            &|| self.on_post_engine_init.reset(),
            &|| self.on_pre_engine_shutdown.reset(),
            &|| self.on_module_loaded.clear(),
            &|| self.on_module_unloaded.clear(),
            &|| self.post_world_unload.clear(),
            &|| self.on_world_travelled.clear(),
            &|| self.on_content_file_modified.clear(),
            &|| self.on_content_file_renamed.clear(),
            &|| self.on_settings_saved.clear(),
            &|| self.on_game_quit_requested.clear(),
        ];
        let mut drops = Drops::default();
        for step in steps {
            drops.run(step);
        }
        drops.finish();
    }
}

/// Ends a game-thread session on the game thread: its set, if it made one, is emptied. Called by
/// [`GameThreadScope`](main_thread::GameThreadScope)'s drop (registered by [`CoreDelegates::get`]
/// when it makes the thread's set).
fn end_session() {
    if let Some(core) = CORE.with(|core| core.get().copied()) {
        core.reset();
    }
}
