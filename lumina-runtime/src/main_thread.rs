//! The game thread and the main-thread queue (rules T1, Q1-Q3).
//!
//! Delegates are single-threaded (`Rc`, `Cell`): they belong to the thread that made them.
//! *Engine-wide* state, the [`CoreDelegates`](crate::core_delegates::CoreDelegates) and the
//! consumer side of this queue, belongs to one thread of the process: the **game thread**.
//!
//! # Designating the game thread (T1)
//!
//! There is no guessing: a thread becomes the game thread only when it says so.
//!
//! - A game calls [`designate_game_thread`] once, at start-up, on the thread that runs the engine
//!   loop. It stays the game thread for the rest of the process.
//! - A test (under `cargo test` every test runs on its own thread, in parallel) holds a
//!   [`GameThreadScope`]: while the scope is alive its thread is the game thread, and other
//!   tests wanting one wait for it to end. When it ends, the engine-wide state of that session is
//!   torn down, so the next test starts from a fresh engine and nothing leaks between tests.
//!
//! Touching engine-wide state from any other thread panics with a message that names
//! [`enqueue`], the way to get work onto the game thread. Engine-wide state is never silently
//! copied per thread: a subscription made on a worker thread cannot land in a private copy that
//! nothing ever broadcasts.
//!
//! # The queue (Q1-Q3)
//!
//! [`enqueue`] hands a `Send` task to the game thread from any thread (Q1); the game thread runs
//! the tasks with [`process_queue`], typically once per frame (Q2):
//!
//! ```
//! use lumina::main_thread;
//!
//! main_thread::designate_game_thread();
//!
//! let worker = std::thread::spawn(|| {
//!     let path_length = 42; // expensive work, off the game thread
//!     main_thread::enqueue(move || println!("path found: {path_length} steps"));
//! });
//! worker.join().unwrap();
//!
//! // Once per frame, on the game thread:
//! assert_eq!(main_thread::process_queue(), 1);
//! ```
//!
//! The queue is a `Mutex<VecDeque>` of boxed tasks. The lock is held only to push one task or to
//! swap the whole queue out, never while a task runs, so a producer never waits for the game
//! thread's work; swapping the queue out is what makes a drain run exactly the tasks enqueued
//! before it started, in enqueue order.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};

use crate::drops::{AtThreadExit, Drops, Guarded};
use crate::track::Origin;

mod queued;
pub(crate) use queued::drop_targets;
pub use queued::{QueuedBroadcast, QueuedSender, queued_targets};

/// A unit of work for the game thread, with whose it is (a game module's tasks go at its
/// unload, MB4, MB6).
struct Task {
    run: Box<dyn FnOnce() + Send + 'static>,
    origin: Origin,
}

/// The tasks waiting for the game thread, in enqueue order.
static QUEUE: Mutex<VecDeque<Task>> = Mutex::new(VecDeque::new());

/// Which thread is the game thread, and how it became one.
static DESIGNATION: Mutex<Designation> = Mutex::new(Designation::None);

/// Signalled when a [`GameThreadScope`] ends, for threads waiting to enter one.
static RELEASED: Condvar = Condvar::new();

/// The number of the current game-thread session (one per designation), 0 when there is none.
/// A thread is the game thread iff its [`SESSION`] equals this.
static CURRENT_SESSION: AtomicU64 = AtomicU64::new(0);

/// Source of session numbers; starts at 1 so that 0 means "none".
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The session this thread was designated for, 0 if never.
    static SESSION: Cell<u64> = const { Cell::new(0) };
    /// Whether [`process_queue`] is running on this thread.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    // The registries below that own values (`SPARE`, `BATCH`, `FRAME_WAKERS`) are reached with
    // `try_with` only: a `Drop` that runs while the thread's locals are destroyed (a
    // `GameThreadScope` or an engine kept in a thread local, a task's capture, a waker) may end
    // the session, drain, wait for a frame or unload a module after they are gone, and a panic
    // there would abort the process (R2). What each operation answers then is said where it is
    // done. `SESSION_END` owns nothing that needs dropping, so it is never destroyed.
    /// The buffer of the previous drain, swapped back in by the next one so that steady-state
    /// frames do not reallocate the queue.
    static SPARE: RefCell<VecDeque<Task>> = const { RefCell::new(VecDeque::new()) };
    /// The tasks the running [`process_queue`] took and has not run yet: a thread-local, not a
    /// local of the drain, so that unloading a game module from one of them also drops the
    /// module's tasks still waiting in this batch (MB4, R5).
    static BATCH: RefCell<VecDeque<Task>> = const { RefCell::new(VecDeque::new()) };
    /// What ends with a game-thread session on this thread: the engine-wide state built on top
    /// of this module registers its teardown here when it is first made (the core delegates'
    /// reset), so this module names none of it (N3: no import circle). Slots of `Cell`s of
    /// function pointers: no destructor, so a scope ended at the thread's exit, after the
    /// thread's other locals are destroyed, still runs every teardown.
    static SESSION_END: [TeardownSlot; SESSION_END_SLOTS] =
        const { [const { Cell::new(None) }; SESSION_END_SLOTS] };
    /// How many drains `process_queue` started on this thread in this session: the frame count
    /// of frame-waiting futures (X5).
    static FRAME: Cell<u64> = const { Cell::new(0) };
    /// Wakers to wake when the next drain starts (see [`wake_next_frame`]).
    /// User values: dropped under the guard if the thread exits with some left (R2).
    static FRAME_WAKERS: RefCell<AtThreadExit<Vec<std::task::Waker>>> =
        const { RefCell::new(AtThreadExit(Vec::new())) };
}

mod sealed {
    /// Keeps [`StaysOnItsThread`](super::StaysOnItsThread) from being implemented outside
    /// lumina.
    pub trait Sealed {}

    /// No value of it exists: the only implementor of `StaysOnItsThread`, so the trait has one.
    #[allow(dead_code)] // only named in the impl below
    pub(crate) enum Never {}

    impl Sealed for Never {}
}

/// The mark of lumina's types that stay on the thread that made them (rules M10, T1): delegates,
/// script delegates, event processors, the core delegates and scoped subscriptions (the message
/// bus has its own mark, [`BusStaysOnItsThread`], naming its way out). They are `Send` and `Sync` only
/// where they implement this trait, and no type does, so sending one to another thread is a
/// compile error that names this trait and says what to do instead: send the data, not the
/// delegate, with a [`QueuedSender`] (made on the game thread, `Send + Clone`, it broadcasts at
/// the next [`process_queue`]) or [`enqueue`].
///
/// ```compile_fail
/// let on_tick: lumina::MulticastDelegate<dyn Fn(f32)> = lumina::MulticastDelegate::new();
/// // error: `MulticastDelegate<..>` cannot be sent to or shared with another thread
/// std::thread::spawn(move || on_tick.broadcast(0.016));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent to or shared with another thread: lumina's delegates and event processors stay on the thread that made them",
    label = "this closure takes `{Self}` to another thread",
    note = "send the data, not the delegate: a `lumina::main_thread::QueuedSender` made on the game thread is `Send + Clone`, and its `send(..)` broadcasts there at the next `process_queue()`; `lumina::main_thread::enqueue(move || ..)` runs any closure there"
)]
pub trait StaysOnItsThread: sealed::Sealed {}

#[diagnostic::do_not_recommend]
impl StaysOnItsThread for sealed::Never {}

/// The mark of the gameplay message bus, which stays on the thread that made it (GB5, A3): like
/// [`StaysOnItsThread`], but its error names the bus's way out, a
/// [`Poster`](crate::bus::Poster) from [`MessageBus::poster`](crate::bus::MessageBus::poster).
/// No type implements it, so sending a bus to another thread is this one compile error.
///
/// ```compile_fail
/// let bus: lumina::bus::MessageBus<u32> = lumina::bus::MessageBus::new();
/// // error: `MessageBus<u32>` cannot be sent to or shared with another thread
/// std::thread::spawn(move || bus.posted());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent to or shared with another thread: lumina's message bus stays on the thread that made it",
    label = "this closure takes `{Self}` to another thread",
    note = "post from the other thread instead: `bus.poster()`, called on the bus's thread, gives a `lumina::bus::Poster` that is `Send + Clone`; its `post(..)` queues the message for the bus's next `deliver_posted()`"
)]
pub trait BusStaysOnItsThread: sealed::Sealed {}

#[diagnostic::do_not_recommend]
impl BusStaysOnItsThread for sealed::Never {}

/// One registered session teardown, or none.
type TeardownSlot = Cell<Option<fn()>>;

/// How many teardowns [`at_session_end`] holds per thread (the library registers one: the core
/// delegates' reset).
const SESSION_END_SLOTS: usize = 4;

/// Registers `teardown` to run on this thread when its [`GameThreadScope`] ends, before the
/// queue's leftovers are dropped; in the order registered. Register once per thread: the
/// teardown stays registered for every later session of the thread.
pub(crate) fn at_session_end(teardown: fn()) {
    let registered = SESSION_END.with(|slots| {
        let free = slots.iter().find(|slot| slot.get().is_none())?;
        free.set(Some(teardown));
        Some(())
    });
    // Only the library registers, a fixed number of teardowns, each once per thread.
    assert!(
        registered.is_some(),
        "lumina: more session teardowns than SESSION_END_SLOTS"
    );
}

/// Runs the teardowns registered with [`at_session_end`], with nothing borrowed while one runs (a
/// teardown drops subscribers, which may register or tear down more). `SESSION_END` has no
/// destructor, so this runs them also from a scope dropped at the thread's exit.
fn end_session() {
    let mut index = 0;
    while let Some(teardown) = SESSION_END.with(|slots| slots.get(index).and_then(Cell::get)) {
        teardown();
        index += 1;
    }
}

#[derive(Clone)]
enum Designation {
    None,
    Permanent(ThreadName),
    Scoped(ThreadName),
}

/// A thread's id and printable name, for messages.
#[derive(Clone)]
struct ThreadName {
    id: ThreadId,
    name: Option<String>,
}

impl ThreadName {
    fn current() -> Self {
        let thread = thread::current();
        ThreadName {
            id: thread.id(),
            name: thread.name().map(str::to_owned),
        }
    }
}

impl fmt::Display for ThreadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "`{name}` ({:?})", self.id),
            None => write!(f, "unnamed {:?}", self.id),
        }
    }
}

/// Locks `mutex`, ignoring poison: no code that can panic runs while these locks are held
/// (tasks run outside the queue's lock), and the data stays consistent regardless.
fn lock<T>(mutex: &'static Mutex<T>) -> MutexGuard<'static, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the calling thread is the game thread right now.
///
/// ```
/// use lumina::main_thread;
///
/// assert!(!main_thread::is_game_thread());
/// main_thread::designate_game_thread();
/// assert!(main_thread::is_game_thread());
/// assert!(!std::thread::spawn(main_thread::is_game_thread).join().unwrap());
/// ```
pub fn is_game_thread() -> bool {
    let mine = SESSION.with(Cell::get);
    mine != 0 && mine == CURRENT_SESSION.load(Ordering::Acquire)
}

/// Panics unless the calling thread is the game thread (T1). `what` names the engine-wide state
/// being touched, e.g. "`CoreDelegates::get`".
///
/// The message says which thread is the game thread (or that none is designated) and names
/// [`enqueue`] as the way to reach engine-wide state from another thread. Every piece of
/// engine-wide state calls this before it is touched.
///
/// ```should_panic
/// use lumina::main_thread;
///
/// // No game thread designated in this program: this panics and says what to do.
/// main_thread::assert_game_thread("the physics scene");
/// ```
#[track_caller]
pub fn assert_game_thread(what: &str) {
    if !is_game_thread() {
        not_the_game_thread(what);
    }
}

/// [`assert_game_thread`] for an operation that owns a value of the caller's meanwhile (a
/// future, a waker, an accessor): refused, it drops `value` under the guard rather than plainly
/// while its panic unwinds (R2). Every such operation checks its thread through this.
#[track_caller]
#[inline]
pub(crate) fn assert_game_thread_holding<T>(what: &str, value: T) -> T {
    let value = Guarded::new(value);
    assert_game_thread(what);
    value.into_inner()
}

#[cold]
#[track_caller]
fn not_the_game_thread(what: &str) -> ! {
    // A game module with its own runtime copy sees no game thread: say why (MB2).
    crate::runtime_copy::assert_engine_copy(what);
    let me = ThreadName::current();
    let designation = lock(&DESIGNATION).clone();
    let game = match designation {
        Designation::None => {
            panic!(
                "lumina: {what} touched on thread {me}, but no game thread is designated. \
                 Engine-wide state belongs to the game thread: call \
                 `main_thread::designate_game_thread()` at start-up on the thread that runs the \
                 engine loop (in a test, hold `main_thread::GameThreadScope::enter()`). From any \
                 other thread, send the work with `main_thread::enqueue(..)`; it runs on the game \
                 thread at its next `main_thread::process_queue()`"
            )
        }
        Designation::Permanent(game) | Designation::Scoped(game) => game,
    };
    panic!(
        "lumina: {what} touched on thread {me}, which is not the game thread (thread {game}). \
         Engine-wide state belongs to the game thread and is never copied per thread: send the \
         work there with `main_thread::enqueue(..)`; it runs at the game thread's next \
         `main_thread::process_queue()`"
    )
}

/// Makes the calling thread the game thread for the rest of the process (T1).
///
/// Call it once at start-up, on the thread that runs the engine loop, before touching
/// [`CoreDelegates`](crate::core_delegates::CoreDelegates) or calling [`process_queue`]. Calling
/// it again on the same thread does nothing.
///
/// # Panics
///
/// If another thread is the game thread (there is one per process), or if the calling thread is
/// the game thread of a [`GameThreadScope`] (a permanent designation would outlive the scope).
///
/// ```
/// use lumina::main_thread;
///
/// main_thread::designate_game_thread();
/// main_thread::designate_game_thread(); // again on the same thread: nothing happens
/// assert!(main_thread::is_game_thread());
///
/// let other = std::thread::spawn(main_thread::designate_game_thread).join();
/// assert!(other.is_err(), "a second game thread is refused");
/// ```
#[track_caller]
pub fn designate_game_thread() {
    // A game module's own runtime copy must not become a second engine (MB2).
    crate::runtime_copy::assert_engine_copy("`main_thread::designate_game_thread`");
    let me = ThreadName::current();
    let mut designation = lock(&DESIGNATION);
    let refusal = match &*designation {
        Designation::None => {
            begin_session(&mut designation, Designation::Permanent(me));
            return;
        }
        Designation::Permanent(game) if game.id == me.id => return,
        Designation::Scoped(game) if game.id == me.id => format!(
            "lumina: `main_thread::designate_game_thread()` called on thread {me}, which is the \
             game thread of a `GameThreadScope`; a permanent designation would outlive the scope. \
             Use one or the other"
        ),
        Designation::Permanent(game) | Designation::Scoped(game) => format!(
            "lumina: `main_thread::designate_game_thread()` called on thread {me}, but thread \
             {game} is already the game thread, and a process has one. From other threads, send \
             work to the game thread with `main_thread::enqueue(..)`"
        ),
    };
    drop(designation);
    panic!("{refusal}");
}

/// Records `new` as the designation and makes the calling thread the game thread of a fresh
/// session. Called with the designation lock held.
fn begin_session(designation: &mut Designation, new: Designation) -> u64 {
    let session = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
    *designation = new;
    SESSION.with(|mine| mine.set(session));
    CURRENT_SESSION.store(session, Ordering::Release);
    session
}

/// Makes the calling thread the game thread while it is alive: the test-friendly, scoped form of
/// [`designate_game_thread`] (T1).
///
/// [`enter`](Self::enter) waits while another thread holds a scope, so parallel tests that need
/// the game thread take turns. Dropping the scope ends the session: the engine-wide state it
/// built is torn down on the spot (every [`CoreDelegates`](crate::core_delegates::CoreDelegates)
/// subscriber is dropped and the one-shot signals can fire again), tasks still queued are dropped
/// unrun with a `tracing` warning saying how many, and the next scope starts from a fresh engine.
/// (Tasks enqueued while no scope is held wait for the next one.)
///
/// A scope may end inside [`process_queue`] (a task, a frame waker or a `Drop` the drain runs
/// drops it): that ends the drain too. The tasks of its batch not run yet are the session's, and
/// are dropped unrun with the rest (counted in the warning), the frame waiters not woken yet are
/// dropped unwoken, and the drain returns once the code that ended the scope has returned.
/// Nothing of the old session runs off the game thread, or in a scope entered meanwhile: that
/// one's tasks wait for its own first drain.
///
/// The scope is neither `Send` nor `Sync`: it ends on the thread it designated. Do not enter a
/// scope on a thread spawned by a thread that holds one and wait for it: it would wait forever.
///
/// ```
/// use lumina::main_thread::{self, GameThreadScope};
///
/// let game = GameThreadScope::enter();
/// assert!(main_thread::is_game_thread());
/// drop(game);
/// assert!(!main_thread::is_game_thread());
/// ```
#[must_use = "the calling thread is the game thread only while the scope is held"]
pub struct GameThreadScope {
    session: u64,
    /// Keeps the scope on its thread.
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for GameThreadScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GameThreadScope")
            .field("session", &self.session)
            .finish()
    }
}

impl GameThreadScope {
    /// Makes the calling thread the game thread until the returned scope is dropped, waiting
    /// first for any other thread's scope to end.
    ///
    /// # Panics
    ///
    /// If the calling thread already holds a scope (scopes do not nest), or if a game thread was
    /// designated for the whole process with [`designate_game_thread`] (waiting would never end).
    #[track_caller]
    pub fn enter() -> GameThreadScope {
        // A game module's own runtime copy must not become a second engine (MB2).
        crate::runtime_copy::assert_engine_copy("`GameThreadScope::enter`");
        let me = ThreadName::current();
        let mut designation = lock(&DESIGNATION);
        loop {
            let refusal = match &*designation {
                Designation::None => break,
                Designation::Scoped(game) if game.id != me.id => {
                    designation = RELEASED
                        .wait(designation)
                        .unwrap_or_else(PoisonError::into_inner);
                    continue;
                }
                Designation::Scoped(_) => format!(
                    "lumina: `GameThreadScope::enter()` called on thread {me}, which already \
                     holds a `GameThreadScope`; scopes do not nest, keep using the one you hold"
                ),
                Designation::Permanent(game) => format!(
                    "lumina: `GameThreadScope::enter()` called on thread {me}, but thread {game} \
                     was designated the game thread for the whole process by \
                     `main_thread::designate_game_thread()`; from other threads, send work to \
                     it with `main_thread::enqueue(..)`"
                ),
            };
            drop(designation);
            panic!("{refusal}");
        }
        let session = begin_session(&mut designation, Designation::Scoped(me));
        GameThreadScope {
            session,
            _not_send: PhantomData,
        }
    }

    /// The session this scope opened; every scope opens a new one.
    pub fn session(&self) -> u64 {
        self.session
    }
}

impl Drop for GameThreadScope {
    /// Ends the session. The teardown always runs to its end (R3): every step runs even when a
    /// `Drop` it runs (a subscriber's, a queued task's captures') panics, and the first such
    /// panic resumes once the session's state is gone; while the thread already unwinds it is
    /// logged instead, so the process does not abort (R2).
    fn drop(&mut self) {
        // Released last, and also if a destructor run by the teardown panics: a thread waiting
        // in `enter` must never wait forever.
        let _release = ReleaseDesignation;
        let mut drops = Drops::default();
        let mut dropped = 0;
        loop {
            // Tear down while this thread is still the game thread: dropped subscribers may
            // touch engine-wide state from their destructors.
            drops.run(end_session);
            let mut leftover = std::mem::take(&mut *lock(&QUEUE));
            // The rest of a running drain's batch (the scope ends inside `process_queue`): the
            // session's tasks too, ahead of the queue's. Gone at the thread's exit: no drain
            // runs then.
            let _ = BATCH.try_with(|batch| {
                let mut batch = std::mem::take(&mut *batch.borrow_mut());
                batch.append(&mut leftover);
                leftover = batch;
            });
            if leftover.is_empty() {
                break;
            }
            // One at a time, outside the queue's lock: a capture's drop may enqueue (that task
            // is the session's too, and is dropped by the next round) or subscribe.
            dropped += leftover.len();
            for task in leftover {
                drops.drop(task);
            }
        }
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "lumina: a GameThreadScope ended with {dropped} task(s) still queued by \
                 `main_thread::enqueue`; they belonged to that session and were dropped unrun \
                 (call `main_thread::process_queue()` before the scope ends to run them)"
            );
        }
        // At the thread's exit these may be gone already: their destructors dropped what they
        // held (the wakers under the guard), nothing is left to do.
        let _ = SPARE.try_with(RefCell::take);
        FRAME.with(|frame| frame.set(0));
        let wakers = FRAME_WAKERS
            .try_with(|wakers| std::mem::take(&mut wakers.borrow_mut().0))
            .unwrap_or_default();
        for waker in wakers {
            drops.drop(waker);
        }
        drops.finish();
    }
}

/// Ends the calling thread's scoped designation when dropped and wakes the threads waiting to
/// enter a scope.
struct ReleaseDesignation;

impl Drop for ReleaseDesignation {
    fn drop(&mut self) {
        let mut designation = lock(&DESIGNATION);
        *designation = Designation::None;
        CURRENT_SESSION.store(0, Ordering::Release);
        SESSION.with(|mine| mine.set(0));
        drop(designation);
        RELEASED.notify_all();
    }
}

/// Queues `task` to run on the game thread at its next [`process_queue`] (Q1).
///
/// Works from any thread, including the game thread itself and before a game thread is
/// designated. It never waits for the game thread's work: it only takes the queue's lock for the
/// time of one push. Tasks from one producer run in the order they were enqueued.
///
/// This is how other threads reach engine-wide state such as the
/// [`CoreDelegates`](crate::core_delegates::CoreDelegates): compute off the game thread, then
/// enqueue a task that broadcasts the result there.
pub fn enqueue(task: impl FnOnce() + Send + 'static) {
    let run: Box<dyn FnOnce() + Send> = Box::new(task);
    // Whose it is, taken now: queued while a game module's code runs, it is the module's (MB6).
    let origin = Origin::of(&*run);
    lock(&QUEUE).push_back(Task { run, origin });
}

// ---- module hook (MB4), see `crate::module`: unloading a game module drops its queued tasks.
/// Drops, unrun, the queued tasks whose origin `doomed` picks (outside the queue's lock: their
/// captures' drops may enqueue); returns how many.
pub(crate) fn drop_queued(mut doomed: impl FnMut(Origin) -> bool) -> usize {
    let mut taken: Vec<Task> = Vec::new();
    take_doomed(&mut lock(&QUEUE), &mut doomed, &mut taken);
    // The rest of a running drain's batch (this is the game thread).
    let _ = BATCH.try_with(|batch| take_doomed(&mut batch.borrow_mut(), &mut doomed, &mut taken));
    // One at a time: a panicking `Drop` does not keep the others from running (R3).
    let count = taken.len();
    Drops::drop_each(taken);
    count
}

/// Drops, unwoken, the wakers registered with [`wake_next_frame`] that `doomed` picks (outside
/// the waiters' borrow, one at a time: a waker's drop is user code); returns how many. For a
/// game module's unload: a waker whose code lies in its library (a `Waker` of its own type, left
/// by a frame-waiting future its own executor polled) would be woken by the next drain after the
/// unmapping (R5). None once the thread's waiters are destroyed (it is exiting: they were
/// dropped then).
pub(crate) fn drop_frame_wakers(mut doomed: impl FnMut(&std::task::Waker) -> bool) -> usize {
    let taken: Vec<std::task::Waker> = FRAME_WAKERS
        .try_with(|wakers| {
            let mut wakers = wakers.borrow_mut();
            let (taken, kept) = std::mem::take(&mut wakers.0)
                .into_iter()
                .partition(|waker| doomed(waker));
            wakers.0 = kept;
            taken
        })
        .unwrap_or_default();
    let count = taken.len();
    Drops::drop_each(taken);
    count
}

/// Moves the tasks of `tasks` that `doomed` picks to `taken`, keeping the others in order.
fn take_doomed(
    tasks: &mut VecDeque<Task>,
    doomed: &mut impl FnMut(Origin) -> bool,
    taken: &mut Vec<Task>,
) {
    let mut kept = VecDeque::with_capacity(tasks.len());
    for task in tasks.drain(..) {
        if doomed(task.origin) {
            taken.push(task);
        } else {
            kept.push_back(task);
        }
    }
    *tasks = kept;
}
// ---- end of module hook

/// How many tasks are waiting for the next [`process_queue`]. Any thread may ask; the answer may
/// be out of date as soon as it returns if other threads are enqueueing.
pub fn pending() -> usize {
    lock(&QUEUE).len()
}

/// Runs, on the game thread, every task enqueued before this call started, in enqueue order, and
/// returns how many ran (Q2).
///
/// Tasks enqueued while it runs, by other threads or by the tasks themselves, wait for the next
/// call: a task that enqueues another never makes a drain run forever.
///
/// If a task panics, the panic propagates to the caller after the queue is left consistent: the
/// tasks of this drain that had not run yet go back to the front of the queue, ahead of anything
/// enqueued since, and run at the next call. Nothing queued is lost (Q3).
///
/// Coroutine tasks ([`coroutine::spawn_local`](crate::coroutine::spawn_local)) are polled by
/// these tasks, and their panics do not propagate: a panic in a task's poll, or in its `Drop` when
/// the drain drops it (finished, panicked or cancelled by itself), is reported through `tracing`
/// and ends that task only, with the status `Panicked` (X5); the drain goes on.
///
/// If the game-thread session ends while it runs (a task, or a frame waker, drops the
/// [`GameThreadScope`]), the drain ends with it: the rest of its batch is dropped unrun by the
/// scope's end, and nothing more runs in this call, even if a new scope was entered meanwhile
/// (its tasks run at its own next drain). The count returned is of the tasks that ran.
///
/// ```
/// use lumina::main_thread;
///
/// main_thread::designate_game_thread();
/// main_thread::enqueue(|| main_thread::enqueue(|| println!("second frame")));
/// assert_eq!(main_thread::process_queue(), 1); // the inner task waits for the next drain
/// assert_eq!(main_thread::process_queue(), 1);
/// assert_eq!(main_thread::process_queue(), 0);
/// ```
///
/// # Panics
///
/// Off the game thread (T1), with a message naming [`enqueue`]; when called from inside a task
/// that a drain is running (draining again there would run newer tasks before older ones); and
/// with the panic of a task, as above.
///
/// Called from a `Drop` while the thread exits, after the thread's record of the running drain
/// is destroyed (an engine kept in a thread local made before the first drain), it runs nothing
/// and returns 0: the tasks stay queued (a scope's end drops them, or the next game thread runs
/// them). Running them without that record would hide them from a game module's unload, which
/// must drop the module's tasks before its code is unmapped (R5).
#[track_caller]
pub fn process_queue() -> usize {
    assert_game_thread("`main_thread::process_queue` (the queue's consumer)");
    if DRAINING.with(Cell::get) {
        panic!(
            "lumina: `main_thread::process_queue()` called from inside a task it is running; \
             it is not reentrant (a nested drain would run newer tasks before the older ones \
             still waiting). Enqueue the work with `main_thread::enqueue(..)` instead: it runs \
             at the next drain"
        );
    }
    if BATCH.try_with(|_| ()).is_err() {
        tracing::warn!(
            queued = pending(),
            "lumina: `main_thread::process_queue()` called while the game thread exits, after \
             its drain's thread-local state was destroyed; nothing ran, the tasks stay queued"
        );
        return 0;
    }
    // A new frame: wake what waits for it first, so that the tasks these wakers queue run in
    // this drain. Marked draining meanwhile: a waker calling `process_queue` is refused.
    DRAINING.with(|draining| draining.set(true));
    let session = current_session();
    let mut drain = Drain { ran: 0, session };
    FRAME.with(|frame| frame.set(frame.get() + 1));
    wake_frame_wakers(session);
    if current_session() != session {
        return drain.ran; // a waker ended the session, and this drain with it
    }
    // The spare buffer may be gone at the thread's exit: then a fresh one.
    let mut batch = SPARE.try_with(RefCell::take).unwrap_or_default();
    std::mem::swap(&mut *lock(&QUEUE), &mut batch);
    // Checked above: only its own destructor destroys `BATCH`, and that runs no drain (a `Drop`
    // it runs finds it gone above).
    let mut batch = Some(batch);
    let _ = BATCH.try_with(|taken| *taken.borrow_mut() = batch.take().unwrap_or_default());
    if let Some(mut unrun) = batch {
        // Not reached (see above); were it, the tasks go back to the queue's front, unrun.
        let mut queue = lock(&QUEUE);
        unrun.append(&mut queue);
        *queue = unrun;
    }
    // The session's end (a task dropping its scope) empties the batch; checked too, so that
    // nothing a new session put there meanwhile runs in this drain.
    while current_session() == session
        && let Some(task) = BATCH
            .try_with(|batch| batch.borrow_mut().pop_front())
            .ok()
            .flatten()
    {
        // A game module's task is the module's code running: what it subscribes, queues or
        // sends is the module's (MB6).
        let frame = task.origin.enter();
        (task.run)();
        drop(frame);
        drain.ran += 1;
    }
    drain.ran
}

/// Wakes every waker registered with [`wake_next_frame`]; a panicking waker is logged and the
/// others still wake. If one ends the game-thread `session` (it drops the scope), the ones not
/// woken yet are the ended session's: dropped unwoken, under the guard.
///
/// A panic's payload is a user value: its `Drop` may panic too. Kept, and the first such panic
/// resumed once every waiter was woken, so the waiters not woken yet are never dropped plainly
/// while it unwinds (R2). None once the waiters are destroyed (the thread exits).
fn wake_frame_wakers(session: u64) {
    let wakers = FRAME_WAKERS
        .try_with(|wakers| std::mem::take(&mut wakers.borrow_mut().0))
        .unwrap_or_default();
    let mut drops = crate::drops::Drops::default();
    for waker in wakers {
        if current_session() != session {
            drops.drop(waker);
            continue;
        }
        if let Err(payload) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || waker.wake()))
        {
            tracing::error!(
                "lumina: a waker registered for the next frame panicked in `wake`; the other \
                 frame waiters were still woken"
            );
            drops.drop(payload);
        }
    }
    drops.finish();
}

/// The frame count of the game thread: how many times [`process_queue`] has run in this session
/// (counting the one running now). Frame-waiting futures
/// ([`coroutine::frames`](crate::coroutine::frames)) compare against it.
#[track_caller]
pub fn frame() -> u64 {
    assert_game_thread("`main_thread::frame`");
    FRAME.with(Cell::get)
}

/// Wakes `waker` when the next [`process_queue`] starts, before it runs its tasks: what
/// frame-waiting futures register. On the game thread only.
///
/// Called from a `Drop` while the thread exits, after its frame waiters are destroyed, it drops
/// `waker` unwoken: no frame follows.
#[track_caller]
pub fn wake_next_frame(waker: std::task::Waker) {
    let waker = assert_game_thread_holding("`main_thread::wake_next_frame`", waker);
    let mut waker = Some(waker);
    let _ = FRAME_WAKERS.try_with(|wakers| wakers.borrow_mut().extend(waker.take()));
    if let Some(waker) = waker {
        Drops::drop_one(waker);
    }
}

/// The session of the calling thread (0: none): tasks of an ended session are never polled.
pub(crate) fn current_session() -> u64 {
    SESSION.with(Cell::get)
}

/// One running [`process_queue`]. Dropping it, also when a task panics, puts the tasks of the
/// batch not yet run back at the front of the queue (Q3) and recycles the buffer; unless the
/// session it ran in has ended: then what is left of the batch (only what was put there after the
/// session's end emptied it) is dropped unrun, under the guard.
struct Drain {
    ran: usize,
    /// The session the drain started in.
    session: u64,
}

impl Drop for Drain {
    fn drop(&mut self) {
        DRAINING.with(|draining| draining.set(false));
        let mut batch = BATCH
            .try_with(|batch| std::mem::take(&mut *batch.borrow_mut()))
            .unwrap_or_default();
        if !batch.is_empty() && current_session() != self.session {
            Drops::drop_each(std::mem::take(&mut batch));
        }
        if !batch.is_empty() {
            let mut queue = lock(&QUEUE);
            // Older tasks first, then everything enqueued while the drain ran.
            batch.append(&mut queue);
            std::mem::swap(&mut *queue, &mut batch);
        }
        let mut batch = Some(batch);
        let _ = SPARE.try_with(|spare| *spare.borrow_mut() = batch.take().unwrap_or_default());
    }
}
