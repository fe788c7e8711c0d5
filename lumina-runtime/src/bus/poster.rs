//! [`Poster`]: posting to the game thread's message bus from any thread (rule GB5).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::{EntityId, MessageBus, Tag, TagKey};
use crate::drops::Drops;
use crate::track::{self, Sweep};

/// A message another thread posted, waiting in the inbox: it moves itself into the bus's queue of
/// its tag. One box per message (the game thread's own `post` allocates nothing).
pub(super) trait Queued<E: EntityId>: Send {
    fn enqueue(self: Box<Self>, bus: &MessageBus<E>, drops: &mut Drops);
}

pub(super) type Boxed<E> = Box<dyn Queued<E>>;

struct Item<P, E> {
    tag: Tag,
    entity: Option<E>,
    payload: P,
}

impl<P: Send + 'static, E: EntityId + Send> Queued<E> for Item<P, E> {
    fn enqueue(self: Box<Self>, bus: &MessageBus<E>, _: &mut Drops) {
        let Item {
            tag,
            entity,
            payload,
        } = *self;
        bus.enqueue(tag, entity, payload);
    }
}

/// The messages of every poster of one bus, in post order.
///
/// # Moving out (R5)
///
/// The bus's thread takes messages out of the inbox to queue them ([`Inbox::drain`]) or to drop
/// them ([`Inbox::close`]), and a game module's unload sweeps the inbox from the unloading thread
/// ([`Sweep::sweep`]). A message taken out is in neither place for a while: a sweep that looked
/// then would miss it, and the module could be unmapped while the bus's thread still queues or
/// drops it (its vtable and `Drop` are the module's). So every taking-out holds `moving` until
/// each message it took is queued (where the module loader records it) or dropped, and the
/// sweep takes `moving` too: it waits for a move in progress, then sees what is left. Posters
/// take only `state`, so a move never blocks them.
pub(super) struct Inbox<E> {
    state: Mutex<State<E>>,
    /// Held while messages taken out of `state` are moved into the bus's queues or dropped.
    moving: Mutex<()>,
    /// The thread holding `moving` (its [`thread_key`]), 0 when none: a sweep from that very
    /// thread (a `Drop` run by a close, unloading a module) must not wait for itself.
    mover: AtomicUsize,
    /// Whether `state.items` may be non-empty: lets the delivery point skip the lock.
    filled: AtomicBool,
    /// Whether the module loader knows this inbox (R5): set by the first poster.
    swept: AtomicBool,
    /// Test hooks: called by the mover (or the close) once it took the messages out, and by a
    /// sweep about to wait for a mover, so a test can hold the race open at exactly those points.
    #[cfg(test)]
    pub(super) hooks: TestHooks,
}

/// See [`Inbox::hooks`]; one lock each, so one may run while the other is called.
#[cfg(test)]
#[derive(Default)]
pub(super) struct TestHooks {
    pub(super) taken: Mutex<Option<Box<dyn Fn() + Send>>>,
    pub(super) sweep_waits: Mutex<Option<Box<dyn Fn() + Send>>>,
}

/// A number that identifies the calling thread while it lives (the address of a thread local).
fn thread_key() -> usize {
    thread_local! {
        static KEY: u8 = const { 0 };
    }
    KEY.with(|key| std::ptr::from_ref(key).addr())
}

/// `moving` held by this thread; released (and the mover forgotten) when dropped.
struct Moving<'a> {
    mover: &'a AtomicUsize,
    _guard: MutexGuard<'a, ()>,
}

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        self.mover.store(0, Ordering::Release);
    }
}

struct State<E> {
    /// Set when the bus is dropped: posts fail from then on.
    closed: bool,
    items: Vec<Boxed<E>>,
}

impl<E: EntityId> Inbox<E> {
    pub(super) fn new() -> Self {
        Inbox {
            state: Mutex::new(State {
                closed: false,
                items: Vec::new(),
            }),
            moving: Mutex::new(()),
            mover: AtomicUsize::new(0),
            filled: AtomicBool::new(false),
            swept: AtomicBool::new(false),
            #[cfg(test)]
            hooks: TestHooks::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `moving` for the calling thread (see [`Inbox`]).
    fn begin_moving(&self) -> Moving<'_> {
        let guard = self.moving.lock().unwrap_or_else(PoisonError::into_inner);
        self.mover.store(thread_key(), Ordering::Release);
        Moving {
            mover: &self.mover,
            _guard: guard,
        }
    }

    /// Waits until no other thread is moving messages out (see [`Inbox`]); `None` when the
    /// calling thread is the mover itself.
    fn wait_for_mover(&self) -> Option<MutexGuard<'_, ()>> {
        if self.mover.load(Ordering::Acquire) == thread_key() {
            return None;
        }
        match self.moving.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                #[cfg(test)]
                if let Some(hook) = &*self.hooks.sweep_waits.lock().unwrap() {
                    hook();
                }
                Some(self.moving.lock().unwrap_or_else(PoisonError::into_inner))
            }
        }
    }

    pub(super) fn has_items(&self) -> bool {
        self.filled.load(Ordering::Acquire)
    }

    /// Moves the inbox's messages into `bus`'s queues, through `spare` (empty, with the capacity
    /// of last time, so neither side allocates once both have grown); holds `moving` until every
    /// one is queued (see [`Inbox`]). Queuing runs no user code.
    pub(super) fn drain(&self, bus: &MessageBus<E>, spare: &mut Vec<Boxed<E>>) {
        let _moving = self.begin_moving();
        {
            let mut state = self.lock();
            std::mem::swap(&mut state.items, spare);
            self.filled.store(false, Ordering::Release);
        }
        #[cfg(test)]
        if let Some(hook) = &*self.hooks.taken.lock().unwrap() {
            hook();
        }
        let mut drops = Drops::default();
        for item in spare.drain(..) {
            item.enqueue(bus, &mut drops);
        }
        drops.finish();
    }

    /// Closes the inbox (the bus is dropped) and drops what it holds, holding `moving` until
    /// every one is dropped (see [`Inbox`]); returns how many.
    pub(super) fn close(&self, drops: &mut Drops) -> usize {
        let _moving = self.begin_moving();
        let items = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.items)
        };
        #[cfg(test)]
        if let Some(hook) = &*self.hooks.taken.lock().unwrap() {
            hook();
        }
        let count = items.len();
        // Each dropped now, its panic kept for the bus's teardown to resume at its end (R3).
        for item in items {
            drops.drop(item);
        }
        count
    }
}

impl<E: EntityId + Send> Sweep for Inbox<E> {
    /// Drops the messages waiting here whose code (the message's vtable: its payload type's
    /// `Drop` and the code that queues it) lies in an unloading module's library (R5): they
    /// would otherwise be queued and dropped after the unmapping.
    fn sweep(&self, module: u64) -> usize {
        self.sweep_where(|code| track::belongs_to(module, code))
    }
}

impl<E: EntityId + Send> Inbox<E> {
    /// Drops the messages waiting here whose code `doomed` selects; how many.
    ///
    /// Waits first for a mover of another thread (see [`Inbox`]): what it took out is queued
    /// (and recorded with the module loader) or dropped by the time this looks.
    pub(super) fn sweep_where(&self, doomed: impl Fn(Option<track::Code>) -> bool) -> usize {
        let moving = self.wait_for_mover();
        let taken: Vec<Boxed<E>> = {
            let mut state = self.lock();
            let (gone, kept): (Vec<Boxed<E>>, Vec<Boxed<E>>) = std::mem::take(&mut state.items)
                .into_iter()
                .partition(|item| doomed(track::code_of(&**item)));
            state.items = kept;
            gone
        };
        drop(moving);
        let count = taken.len();
        // Dropped outside the locks (user `Drop`s), each guarded (R3).
        let mut drops = Drops::default();
        for item in taken {
            drops.drop(item);
        }
        drops.finish();
        count
    }
}

/// Posting to a [`MessageBus`] from any thread (GB5): made by
/// [`MessageBus::poster`](super::MessageBus::poster), `Send + Sync + Clone`. A message is moved
/// into the bus's inbox now and queued at the bus's next delivery point, in the order this
/// thread posted it; payloads are `Send + 'static`. Once the bus is dropped, posts fail with
/// [`BusGone`] and the payload is dropped with a diagnostic.
///
/// ```
/// use lumina::bus::MessageBus;
/// use lumina::gameplay_tags;
///
/// gameplay_tags! {
///     pub mod tags {
///         Job.Done: u32,
///     }
/// }
///
/// let bus: MessageBus<u32> = MessageBus::new();
/// let _log = bus.listen(&tags::JOB_DONE, |result, _| println!("job {result} done"));
/// let poster = bus.poster();
/// std::thread::spawn(move || poster.post(&tags::JOB_DONE, 7).unwrap())
///     .join()
///     .unwrap();
/// assert_eq!(bus.deliver_posted(), 1);
/// ```
pub struct Poster<E: EntityId> {
    inbox: Arc<Inbox<E>>,
}

impl<E: EntityId> Clone for Poster<E> {
    fn clone(&self) -> Self {
        Poster {
            inbox: Arc::clone(&self.inbox),
        }
    }
}

impl<E: EntityId> fmt::Debug for Poster<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poster")
            .field("bus_alive", &!self.inbox.lock().closed)
            .finish()
    }
}

/// The bus a [`Poster`] posts to was dropped: the message was dropped, as nothing can hear it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusGone;

impl fmt::Display for BusGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the message bus was dropped; the message was dropped")
    }
}

impl std::error::Error for BusGone {}

impl<E: EntityId + Send> Poster<E> {
    pub(super) fn new(inbox: Arc<Inbox<E>>) -> Self {
        if !inbox.swept.swap(true, Ordering::AcqRel) {
            // The first poster opens the inbox to other threads: from then on a module's
            // messages may wait here, so the module loader must be able to drop them (R5).
            let weak: Weak<dyn Sweep> = Arc::downgrade(&inbox) as Weak<dyn Sweep>;
            track::add_sweeper(weak);
        }
        Poster { inbox }
    }

    /// Posts a message on `key`'s tag (GB5).
    pub fn post<P: Send + 'static>(&self, key: &TagKey<P>, payload: P) -> Result<(), BusGone> {
        let (tag, payload) = super::resolve(key, payload);
        self.push(tag, None, payload)
    }

    /// Posts a message addressed to `entity` (GB4, GB5).
    pub fn post_to<P: Send + 'static>(
        &self,
        key: &TagKey<P>,
        entity: E,
        payload: P,
    ) -> Result<(), BusGone> {
        let (tag, payload) = super::resolve(key, payload);
        self.push(tag, Some(entity), payload)
    }

    fn push<P: Send + 'static>(
        &self,
        tag: Tag,
        entity: Option<E>,
        payload: P,
    ) -> Result<(), BusGone> {
        let item: Boxed<E> = Box::new(Item {
            tag,
            entity,
            payload,
        });
        let refused = {
            let mut state = self.inbox.lock();
            if state.closed {
                Some(item)
            } else {
                state.items.push(item);
                self.inbox.filled.store(true, Ordering::Release);
                None
            }
        };
        match refused {
            None => Ok(()),
            Some(item) => {
                tracing::warn!(
                    tag = %tag,
                    "lumina: a message posted on `{tag}` after its bus was dropped is dropped: \
                     nothing can hear it any more"
                );
                Drops::drop_one(item);
                Err(BusGone)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The race between a bus's thread moving posted messages out of its inbox and a game
    //! module's unload sweeping that inbox from another thread (R5, MB4), held open at exactly
    //! the point between the two by the inbox's test hooks.

    use super::*;
    use crate::module::{ModuleId, release_values};
    use std::sync::mpsc;

    /// A payload of the fake module.
    struct Raced;

    static RACED: TagKey<Raced> = TagKey::new("PosterRace.Raced", false);

    /// What thread B tells the game thread.
    enum FromB {
        Codes([usize; 2]),
        Taken,
    }

    /// What the game thread (or its sweep) tells thread B.
    #[derive(Debug, PartialEq)]
    enum ToB {
        RangesReady,
        SweepWaits,
        SweepDone,
    }

    /// The code of `bus`'s first inbox message and of a queue of `Raced` messages.
    fn codes(bus: &MessageBus<u32>) -> [usize; 2] {
        let item = track::code_of(&*bus.inbox.lock().items[0])
            .unwrap()
            .vtable();
        // A probe bus queues one the same way (`drain` -> `enqueue` -> `new_queue`), for the
        // address of its queue's code.
        let probe = MessageBus::<u32>::new();
        probe.poster().post(&RACED, Raced).unwrap();
        probe.drain_inbox();
        let queue = probe.channel(RACED.tag()).unwrap();
        let queue = queue.queue.borrow().clone().unwrap();
        [item, track::code_of(&*queue).unwrap().vtable()]
    }

    /// A bus lives on thread B; the game thread unloads a module whose message B's inbox holds,
    /// and B's delivery point has taken that message out of the inbox just before the unload
    /// looks. The unload must still learn of it: drop it, or find it recorded on B (so the
    /// library stays mapped), never neither. Fails when the sweep does not wait for B's move
    /// (it finds an empty inbox, and B queues the message after the unload counted B's records)
    /// and when the unload does not count records again after the sweep. Deterministic: B holds
    /// the race open until the sweep has either returned or started to wait for B.
    #[test]
    fn r5_an_unload_sweep_does_not_miss_messages_another_threads_bus_is_moving_in() {
        const FAKE: u64 = u64::MAX - 77;
        // Lets `code_of` answer. Natively the range holds no code (not even the zero word that
        // every value larger than a word has: other tests' values must not become this
        // module's), and the exact vtables below attribute the messages and their queue. Miri
        // gives each unsizing one of several copies of a vtable, so there a probed vtable may
        // not be the queue's: the range holds the zero word instead, attributing every value
        // larger than a word to the fake module, which is safe there only because Miri runs one
        // test at a time (it reports one CPU).
        #[cfg(not(miri))]
        track::add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE, 0, 1);
        let (to_game, from_b) = mpsc::channel::<FromB>();
        let (to_b, at_b) = mpsc::channel::<ToB>();
        let wake_b = to_b.clone();
        // B keeps its bus (and so the queue's record) until the unload has counted.
        let (finish, finished) = mpsc::channel::<()>();
        let b = std::thread::spawn(move || {
            let bus = MessageBus::<u32>::new();
            bus.poster().post(&RACED, Raced).unwrap();
            to_game.send(FromB::Codes(codes(&bus))).unwrap();
            assert_eq!(at_b.recv().unwrap(), ToB::RangesReady);
            let hooks = &bus.inbox.hooks;
            // B has the message out of the inbox, not queued yet: it waits there until the
            // sweep returned (the race is lost) or waits for B (the race is closed).
            *hooks.taken.lock().unwrap() = Some(Box::new(move || {
                to_game.send(FromB::Taken).unwrap();
                let step = at_b.recv().unwrap();
                assert!(matches!(step, ToB::SweepWaits | ToB::SweepDone));
            }));
            *hooks.sweep_waits.lock().unwrap() = Some(Box::new(move || {
                let _ = wake_b.send(ToB::SweepWaits);
            }));
            bus.drain_inbox();
            // The close that drops the bus below takes nothing out to hold open.
            *bus.inbox.hooks.taken.lock().unwrap() = None;
            let queued = bus.posted();
            finished.recv().unwrap();
            queued
        });
        let Ok(FromB::Codes([item, queue])) = from_b.recv() else {
            panic!("B sends the codes first");
        };
        track::add_range(FAKE, item, item + 1);
        track::add_range(FAKE, queue, queue + 1);
        to_b.send(ToB::RangesReady).unwrap();
        assert!(matches!(from_b.recv(), Ok(FromB::Taken)));
        let swept = release_values(ModuleId::fake(FAKE));
        let left = track::count(FAKE);
        let _ = to_b.send(ToB::SweepDone);
        finish.send(()).unwrap();
        let queued = b.join().unwrap();
        track::remove_range(FAKE);
        assert_eq!(queued, 1, "B queued the message it took out");
        assert_eq!(swept, 0, "the inbox was empty when the sweep looked");
        assert_eq!(
            left, 1,
            "the unload learnt of the message B queued meanwhile (its queue's record on B): it \
             still refers to the module"
        );
    }

    /// A payload that says when it was dropped.
    struct Flagged;

    static FLAGGED_DROPPED: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);

    impl Drop for Flagged {
        fn drop(&mut self) {
            FLAGGED_DROPPED.store(true, Ordering::SeqCst);
        }
    }

    static FLAGGED: TagKey<Flagged> = TagKey::new("PosterRace.Flagged", false);

    /// The same race with a bus dropped on thread B: its close has taken the inbox's message
    /// out and not dropped it yet when the unload looks. The unload's sweep must not return
    /// before that drop ran (it runs the message's `Drop`, which may be the module's code, R5).
    /// Fails when the sweep does not wait for the close.
    #[test]
    fn r5_an_unload_sweep_waits_for_another_threads_bus_dropping_its_inbox() {
        const FAKE: u64 = u64::MAX - 78;
        let (to_game, from_b) = mpsc::channel::<FromB>();
        let (to_b, at_b) = mpsc::channel::<ToB>();
        let wake_b = to_b.clone();
        let b = std::thread::spawn(move || {
            let bus = MessageBus::<u32>::new();
            bus.poster().post(&FLAGGED, Flagged).unwrap();
            let hooks = &bus.inbox.hooks;
            *hooks.taken.lock().unwrap() = Some(Box::new(move || {
                to_game.send(FromB::Taken).unwrap();
                let step = at_b.recv().unwrap();
                assert!(matches!(step, ToB::SweepWaits | ToB::SweepDone));
            }));
            *hooks.sweep_waits.lock().unwrap() = Some(Box::new(move || {
                let _ = wake_b.send(ToB::SweepWaits);
            }));
            drop(bus);
        });
        assert!(matches!(from_b.recv(), Ok(FromB::Taken)));
        assert!(!FLAGGED_DROPPED.load(Ordering::SeqCst));
        let _ = release_values(ModuleId::fake(FAKE));
        let dropped_before_the_sweep_returned = FLAGGED_DROPPED.load(Ordering::SeqCst);
        let _ = to_b.send(ToB::SweepDone);
        b.join().unwrap();
        assert!(
            dropped_before_the_sweep_returned,
            "the close's message was still in flight when the unload's sweep returned"
        );
    }
}
