//! [`QueuedSender`]: a broadcast from any thread, run on the game thread (rule B4).
//!
//! Delegates live on `Rc` objects of the game thread, and neither they nor `Rc`/`Weak` are
//! `Send`. A sender therefore carries only a number: the game thread keeps a thread-local
//! registry from that number to a `Weak` of the object and the function reaching its delegate.
//! [`QueuedSender::send`] enqueues a task holding the number and the arguments; the task, run by
//! [`process_queue`](super::process_queue), looks the number up, upgrades the object and
//! broadcasts. The registry never keeps an object alive.
//!
//! A registry entry goes away when the last clone of its sender is dropped (directly on the game
//! thread, else through a queued task, so it never overtakes a queued send), and when a delivery,
//! a new sender or [`queued_targets`] finds its object dropped. Every queued send holds a clone of
//! the sender, so its entry lives until the send is delivered or dropped unrun.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::drops::{AtThreadExit, Drops, Guarded, drop_user};
use crate::multicast::MulticastDelegate;

/// A delegate that a [`QueuedSender`] can broadcast: its parameters, as one tuple of owned
/// values, can travel to the game thread.
///
/// Implemented by `MulticastDelegate<dyn Fn(A, B..) -> R>` (owned `Clone` parameters) and by
/// the types of `declare_multicast_delegate!` whose parameter types are all owned, with no
/// reference or lifetime anywhere in them. A delegate taking references (`&Window`, `&str`) has
/// no queued sender: what a reference points at cannot outlive the sending thread's stack.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be broadcast through a `QueuedSender`",
    label = "the function given must return a multicast delegate whose parameters are all owned types",
    note = "the arguments travel to the game thread, so no parameter may be or contain a reference or a lifetime (take `String`, not `&str`)",
    note = "`MulticastDelegate<dyn Fn(..)>` and the types of `declare_multicast_delegate!` qualify with such parameters; their bind-only registrations never do"
)]
pub trait QueuedBroadcast {
    /// The parameters as a tuple: `()`, `(u32,)`, `(String, f32)`.
    type Args;

    /// Broadcasts `args`, unpacked, to every subscriber.
    fn broadcast_args(&self, args: Self::Args);
}

/// Sends broadcasts of one delegate, held by an `Rc` object of the game thread, from any thread
/// (B4; Qt's queued connections, gdext's `connect_sync`).
///
/// Made on the game thread with [`new`](Self::new) from the object and a function reaching its
/// delegate; `Send + Sync + Clone`, so any thread can hold one. [`send`](Self::send) queues the
/// broadcast: it runs on the game thread at its next [`process_queue`](super::process_queue),
/// with the arguments given. If the object has been dropped by then, nothing runs and the
/// arguments are dropped. A sender never keeps the object alive.
///
/// `Args` is the tuple of the delegate's parameters, `(u32,)` for `dyn Fn(u32)`; `send` takes
/// them one by one. They must be `Send + 'static`: see [`QueuedBroadcast`] for which delegates
/// qualify (declared delegates taking references do not).
///
/// ```
/// use lumina::main_thread::{self, QueuedSender};
/// use lumina::MulticastDelegate;
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// main_thread::designate_game_thread();
///
/// #[derive(Default)]
/// struct Player {
///     on_path_found: MulticastDelegate<dyn Fn(Vec<(i32, i32)>)>,
///     steps: Cell<usize>,
/// }
///
/// let player = Rc::new(Player::default());
/// let weak = Rc::downgrade(&player);
/// let _follow = player.on_path_found.add_lambda(move |path| {
///     if let Some(player) = weak.upgrade() {
///         player.steps.set(path.len());
///     }
/// });
///
/// let sender = QueuedSender::new(&player, |player: &Player| &player.on_path_found);
/// let worker = std::thread::spawn(move || {
///     let path = vec![(0, 0), (0, 1), (1, 1)]; // expensive work, off the game thread
///     sender.send(path);
/// });
/// worker.join().unwrap();
///
/// assert_eq!(player.steps.get(), 0); // nothing runs on the worker thread
/// main_thread::process_queue(); // once per frame, on the game thread
/// assert_eq!(player.steps.get(), 3);
/// ```
pub struct QueuedSender<Args> {
    ticket: Arc<Ticket>,
    /// `fn(Args)`: a sender is `Send + Sync` whatever `Args` is; `send` requires `Send` values.
    _args: PhantomData<fn(Args)>,
}

impl<Args> Clone for QueuedSender<Args> {
    fn clone(&self) -> Self {
        QueuedSender {
            ticket: Arc::clone(&self.ticket),
            _args: PhantomData,
        }
    }
}

impl<Args> fmt::Debug for QueuedSender<Args> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuedSender")
            .field("id", &self.ticket.id)
            .finish()
    }
}

impl<Args: Send + ArgTuple + 'static> QueuedSender<Args> {
    /// A sender for the delegate `delegate(owner)` reaches, e.g.
    /// `|player: &Player| &player.on_health_changed`. Holds `owner` weakly.
    ///
    /// Made by a `Drop` while the game thread exits, after its registry of senders is
    /// destroyed, the sender reaches nothing: its sends drop their arguments.
    ///
    /// Cost: O(1) amortized in the senders alive (rule N4): the entries of objects gone are
    /// swept once the registry has doubled since its last sweep.
    ///
    /// # Panics
    ///
    /// Off the game thread (T1): deliveries run there, so the sender is registered there.
    #[track_caller]
    pub fn new<T: Any, D>(owner: &Rc<T>, delegate: impl Fn(&T) -> &D + 'static) -> Self
    where
        D: QueuedBroadcast<Args = Args> + ?Sized,
    {
        let delegate = super::assert_game_thread_holding(
            "`QueuedSender::new` (its delegate's registry)",
            delegate,
        );
        let weak = Rc::downgrade(owner);
        let deliver: Deliver<Args> = Rc::new(move |args: Args::Guarded| {
            // Each argument in its own guard while the accessor (user code) runs, and if the
            // object is gone: dropped one by one (R2).
            match weak.upgrade() {
                // This strong reference is the object's last if the broadcast dropped the
                // others: dropped under the guard if the broadcast unwinds (R2).
                Some(object) => Guarded::hold(object, |object| {
                    delegate(object).broadcast_args(Args::unguard(args));
                    true
                }),
                None => false,
            }
        });
        let owner: Weak<dyn Any> = Rc::downgrade(owner) as Weak<dyn Any>;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let target = Target {
            owner,
            deliver: Box::new(deliver),
        };
        let mut target = Some(target);
        let dead = TARGETS
            .try_with(|targets| {
                let mut targets = targets.borrow_mut();
                // Swept once the registry has doubled since the last sweep: O(1) amortized
                // (rule N4), where a sweep per sender cost O(n) with n senders alive.
                let dead = if targets.len() >= 2 * SWEPT.get() + 16 {
                    let dead = take_dead(&mut targets);
                    SWEPT.set(targets.len());
                    dead
                } else {
                    Vec::new()
                };
                targets.extend(target.take().map(|target| (id, target)));
                dead
            })
            .unwrap_or_default();
        // The entries hold user accessors (and their captures): each dropped on its own (R2).
        // An entry left here could not be registered: the thread exits (a `Drop` run after its
        // registry was destroyed), no delivery will run on it, and the sender's sends drop their
        // arguments, as for an object gone.
        Drops::drop_each(dead.into_iter().chain(target));
        QueuedSender {
            ticket: Arc::new(Ticket {
                id,
                home: thread_token(),
            }),
            _args: PhantomData,
        }
    }
}

/// `send` and [`ArgTuple`] for each number of parameters.
macro_rules! impl_send {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: 'static),*> ArgTuple for ($($Arg,)*) {
            type Guarded = ($(Guarded<$Arg>,)*);
            #[allow(clippy::unused_unit)] // the arity 0 tuple
            fn unguard(($($arg,)*): Self::Guarded) -> Self {
                ($($arg.into_inner(),)*)
            }
        }

        impl<$($Arg: Send + 'static),*> QueuedSender<($($Arg,)*)> {
            /// Queues a broadcast with these arguments, from any thread. It runs on the game
            /// thread at its next `main_thread::process_queue`, unless the delegate's object has
            /// been dropped by then: then nothing runs and the arguments are dropped.
            pub fn send(&self, $($arg: $Arg),*) {
                let ticket = Arc::clone(&self.ticket);
                // Each argument in its own guard until the delivery: a task dropped unrun (the
                // session's end, a module's unload) drops them one by one, so a second panicking
                // `Drop` runs under the guard while the first one's panic unwinds (R2).
                let args = ($(Guarded::new($arg),)*);
                // The ticket may be the sender's last clone (its drop unregisters the delegate's
                // entry, user code): dropped under the guard if the delivery unwinds (R2).
                super::enqueue(move || {
                    Guarded::hold(ticket, |ticket| deliver::<($($Arg,)*)>(ticket, args));
                });
            }
        }
    };
}

impl_send!();
impl_send!(a: A);
impl_send!(a: A, b: B);
impl_send!(a: A, b: B, c: C);
impl_send!(a: A, b: B, c: C, d: D);
impl_send!(a: A, b: B, c: C, d: D, e: E);
impl_send!(a: A, b: B, c: C, d: D, e: E, g: G);

/// `QueuedBroadcast` of the generic delegate, for each number of parameters.
macro_rules! impl_queued_broadcast {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: Clone + 'static,)* R: 'static> QueuedBroadcast
            for MulticastDelegate<dyn Fn($($Arg),*) -> R>
        {
            type Args = ($($Arg,)*);

            fn broadcast_args(&self, ($($arg,)*): Self::Args) {
                self.broadcast($($arg),*);
            }
        }
    };
}

impl_queued_broadcast!();
impl_queued_broadcast!(a: A);
impl_queued_broadcast!(a: A, b: B);
impl_queued_broadcast!(a: A, b: B, c: C);
impl_queued_broadcast!(a: A, b: B, c: C, d: D);
impl_queued_broadcast!(a: A, b: B, c: C, d: D, e: E);
impl_queued_broadcast!(a: A, b: B, c: C, d: D, e: E, g: G);

/// How many delegates have queued senders registered on the calling thread (the game thread),
/// after dropping the entries whose object is gone. For diagnostics and tests: it is 0 once every
/// sender is dropped or every object they reach is. Cost: O(n) in the senders registered (it
/// sweeps the entries of objects gone).
pub fn queued_targets() -> usize {
    TARGETS
        .try_with(|targets| {
            let mut targets = targets.borrow_mut();
            let dead = take_dead(&mut targets);
            let live = targets.len();
            SWEPT.set(live);
            drop(targets);
            Drops::drop_each(dead);
            live
        })
        .unwrap_or(0)
}

/// Upgrades the object and broadcasts `args`; `false` once the object is gone.
type Deliver<Args> = Rc<dyn Fn(<Args as ArgTuple>::Guarded) -> bool>;

/// A queued broadcast's arguments as a tuple, and the same tuple with each element in its own
/// [`Guarded`]: how they travel from `send` to the delivery, so that whatever drops them before
/// the broadcast (a task dropped unrun, an object gone, an accessor that panics) drops them one
/// by one, and a second panicking `Drop` runs under the guard while the first one's panic
/// unwinds (R2; a plain tuple's drop glue would drop it plainly). Implemented with `send`, for
/// the tuples it takes (up to six parameters).
#[doc(hidden)]
pub trait ArgTuple: Sized {
    /// `(Guarded<A>, Guarded<B>, ..)` for `(A, B, ..)`.
    type Guarded: 'static;
    /// Takes each element out of its guard.
    fn unguard(guarded: Self::Guarded) -> Self;
}

/// A registry entry: the object (to find dropped ones without knowing `Args`) and its
/// `Deliver<Args>`.
struct Target {
    owner: Weak<dyn Any>,
    deliver: Box<dyn Any>,
}

/// Source of registry keys; 0 is never used.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Source of thread tokens; 0 means "not assigned yet".
static NEXT_THREAD_TOKEN: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The registry of the game thread (of each thread that was one).
    /// Its accessors are user values: dropped under the guard if the thread exits while a
    /// sender (held by another thread) still names one (R2). Reached with `try_with` only: a
    /// sender made, sent through or dropped by a `Drop` while the thread's locals are destroyed
    /// finds no registry and no entry (its sends drop their arguments).
    static TARGETS: RefCell<AtThreadExit<HashMap<u64, Target>>> =
        RefCell::new(AtThreadExit(HashMap::new()));
    /// This thread's token, 0 until first asked. A `Cell<u64>` needs no destructor, so it stays
    /// readable while the thread's other thread-locals are destroyed (a sender kept in one may
    /// be dropped then), unlike `thread::current()`.
    static THREAD_TOKEN: Cell<u64> = const { Cell::new(0) };
    /// How many entries the registry kept after its last sweep of dead objects: the next sweep
    /// runs once it has doubled (rule N4).
    static SWEPT: Cell<usize> = const { Cell::new(0) };
}

/// A number unique to the calling thread.
fn thread_token() -> u64 {
    THREAD_TOKEN
        .try_with(|token| {
            if token.get() == 0 {
                token.set(NEXT_THREAD_TOKEN.fetch_add(1, Ordering::Relaxed));
            }
            token.get()
        })
        .unwrap_or(0)
}

/// Removes the entries whose object is gone and returns them, to be dropped once the registry is
/// released (dropping them runs the user's accessor's destructor).
fn take_dead(targets: &mut HashMap<u64, Target>) -> Vec<Target> {
    crate::steps::add(targets.len());
    let dead: Vec<u64> = targets
        .iter()
        .filter(|(_, target)| target.owner.strong_count() == 0)
        .map(|(&id, _)| id)
        .collect();
    dead.iter().filter_map(|id| targets.remove(id)).collect()
}

/// Drops the entries of this thread's registry whose accessor `doomed` picks (it is given the
/// entry's type-erased `Deliver`, whose vtable lies in the crate that made the sender), outside
/// the registry's borrow, one at a time; returns how many. For a game module's unload (R5): a
/// sender the module made outlives it wherever a clone of it is kept (another thread, the
/// engine), and its entry holds the module's accessor and the module's vtables, which a later
/// prune, delivery or the thread's exit would reach after the unmapping. A send through such a
/// sender then finds no entry and drops its arguments.
pub(crate) fn drop_targets(mut doomed: impl FnMut(&dyn Any) -> bool) -> usize {
    let taken: Vec<Target> = TARGETS
        .try_with(|targets| {
            let mut targets = targets.borrow_mut();
            let ids: Vec<u64> = targets
                .iter()
                .filter(|(_, target)| doomed(&*target.deliver))
                .map(|(&id, _)| id)
                .collect();
            ids.iter().filter_map(|id| targets.remove(id)).collect()
        })
        .unwrap_or_default();
    let count = taken.len();
    Drops::drop_each(taken);
    count
}

/// Removes the entry `id`, if this thread's registry has it.
fn unregister(id: u64) {
    let removed = TARGETS
        .try_with(|targets| {
            let mut targets = targets.borrow_mut();
            let removed = targets.remove(&id);
            // The registry does not keep the storage of a burst of senders.
            if targets.capacity() > 64 && targets.len() < targets.capacity() / 4 {
                let live = targets.len();
                targets.shrink_to(2 * live);
            }
            removed
        })
        .ok()
        .flatten();
    // The entry holds the user's accessor: a sender dropped while the thread unwinds drops it
    // under the guard (R2).
    drop_user(removed);
}

/// Runs on the game thread: broadcasts `args` through the entry of `ticket`, if it is still
/// registered here and its object alive; otherwise drops `args`.
fn deliver<Args: ArgTuple + 'static>(ticket: &Ticket, args: Args::Guarded) {
    let deliver = TARGETS
        .try_with(|targets| {
            let targets = targets.borrow();
            let target = targets.get(&ticket.id)?;
            target.deliver.downcast_ref::<Deliver<Args>>().cloned()
        })
        .ok()
        .flatten();
    // The clone is the entry's last if the broadcast unregistered it: dropped under the guard
    // if the broadcast unwinds (R2).
    match deliver {
        Some(deliver) => {
            if !Guarded::hold(deliver, |deliver| deliver(args)) {
                unregister(ticket.id);
            }
        }
        // No entry any more: the arguments are ours to drop, guarded while the thread unwinds
        // (a `process_queue` called from a `Drop` during a panic, R2).
        None => drop_user(args),
    }
}

/// Shared by the clones of one sender and by its queued sends; dropping the last one removes
/// the registry entry.
struct Ticket {
    id: u64,
    /// The token of the thread whose registry holds the entry.
    home: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let id = self.id;
        if thread_token() == self.home {
            unregister(id);
        } else {
            // Through the queue: it cannot overtake a send queued before it.
            super::enqueue(move || unregister(id));
        }
    }
}
