//! [`Poster`]: posting to the game thread's message bus from any thread (rule GB5).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::{EntityId, MessageBus, Tag, TagKey};
use crate::invocation::Drops;
use crate::module::track::{self, Code, Sweep};

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
pub(super) struct Inbox<E> {
    state: Mutex<State<E>>,
    /// Whether `state.items` may be non-empty: lets the delivery point skip the lock.
    filled: AtomicBool,
    /// Whether the module loader knows this inbox (R5): set by the first poster.
    swept: AtomicBool,
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
            filled: AtomicBool::new(false),
            swept: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn has_items(&self) -> bool {
        self.filled.load(Ordering::Acquire)
    }

    /// Swaps the inbox's messages into `spare` (empty, with the capacity of last time), so
    /// neither side allocates once both have grown.
    pub(super) fn swap_into(&self, spare: &mut Vec<Boxed<E>>) {
        let mut state = self.lock();
        std::mem::swap(&mut state.items, spare);
        self.filled.store(false, Ordering::Release);
    }

    /// Closes the inbox (the bus is dropped) and drops what it holds; returns how many.
    pub(super) fn close(&self, drops: &mut Drops) -> usize {
        let items = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.items)
        };
        let count = items.len();
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
    fn sweep(&self, doomed: &dyn Fn(Option<Code>) -> bool) -> usize {
        let taken: Vec<Boxed<E>> = {
            let mut state = self.lock();
            let (gone, kept): (Vec<Boxed<E>>, Vec<Boxed<E>>) = std::mem::take(&mut state.items)
                .into_iter()
                .partition(|item| doomed(track::code_of(&**item)));
            state.items = kept;
            gone
        };
        let count = taken.len();
        // Dropped outside the lock (user `Drop`s), each guarded (R3).
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
        self.push(key.tag(), None, payload)
    }

    /// Posts a message addressed to `entity` (GB4, GB5).
    pub fn post_to<P: Send + 'static>(
        &self,
        key: &TagKey<P>,
        entity: E,
        payload: P,
    ) -> Result<(), BusGone> {
        self.push(key.tag(), Some(entity), payload)
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
