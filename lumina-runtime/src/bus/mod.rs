//! The gameplay message bus: tag-addressed messages between gameplay entities (rules GB1-GB9).
//!
//! The fourth mechanism, beside delegates, script delegates and input events. A sender and its
//! listeners share only a [`Tag`] (`Combat.Damage.Critical`) and the payload type declared with
//! it; neither holds the other. Tags are declared with `gameplay_tags!`, which makes one typed
//! [`TagKey`] per tag:
//!
//! ```
//! use lumina::bus::MessageBus;
//! use lumina::gameplay_tags;
//! use std::cell::Cell;
//! use std::rc::Rc;
//!
//! #[derive(Debug)]
//! pub struct Damage {
//!     pub amount: u32,
//! }
//!
//! gameplay_tags! {
//!     pub mod tags {
//!         Combat {
//!             Damage: Damage {
//!                 Critical: Damage,
//!             },
//!         },
//!     }
//! }
//!
//! # fn main() {
//! let bus: MessageBus<u32> = MessageBus::new();
//! let heard = Rc::new(Cell::new(0));
//! let sink = Rc::clone(&heard);
//! // Exact: the payload arrives typed.
//! let _exact = bus.listen(&tags::COMBAT_DAMAGE, move |damage, _| sink.set(sink.get() + damage.amount));
//! // Partial: every descendant of `Combat`, told the actual tag.
//! let _ui = bus.subscribe().partial().listen(&tags::COMBAT, |message| println!("{} {:?}", message.tag(), message.get(&tags::COMBAT_DAMAGE)));
//! bus.send(&tags::COMBAT_DAMAGE, Damage { amount: 5 });
//! bus.send(&tags::COMBAT_DAMAGE_CRITICAL, Damage { amount: 50 }); // not exact: `_exact` does not hear it
//! assert_eq!(heard.get(), 5);
//! # }
//! ```
//!
//! # Order and consumption (GB3, GB4)
//!
//! A message on tag `T` goes to `T`'s listeners, then to the partial listeners of `T`'s parent,
//! and so on up to the root; within one tag, higher priority first, then the order added. A
//! message addressed to an entity ([`send_to`](MessageBus::send_to)) first goes that way through
//! the listeners of that entity, then of its parent entity (the relation the engine gives with
//! [`set_entity_parents`](MessageBus::set_entity_parents)) and so on, and last through the
//! listeners of no particular entity. Any listener may [`consume`](Message::consume) the
//! message: nothing after it hears it.
//!
//! # Delivery (GB5, GB6)
//!
//! [`send`](MessageBus::send) delivers at once, through the same invocation list as every
//! delegate, so its reentrancy contract holds (M1-M13): a listener added during a send does not
//! hear it, one removed does not run, sends nest, a panic leaves the bus consistent. It allocates
//! nothing. [`post`](MessageBus::post) queues the message for
//! [`deliver_posted`](MessageBus::deliver_posted), which the engine calls once a frame; the
//! queues keep their storage, so posting allocates nothing once they have grown. A [`Poster`] posts from any
//! thread. A retained tag (`#[retained]` in `gameplay_tags!`) keeps its last message, which a
//! listener added later hears at once; the message is kept before its delivery starts, so a
//! listener added during that delivery (which does not hear it, M2) hears it at its add, never
//! the message it replaced.
//!
//! The bus is game-thread state like every delegate (T1): it is neither `Send` nor `Sync`.
//!
//! # Scripts (GB8)
//!
//! A tag declared `#[script]` (its payload a reflected `#[script_delegate]` struct) is visible to
//! a managed host: [`listen_managed`](MessageBus::listen_managed) and
//! [`send_script`](MessageBus::send_script), which the C ABI's `lumina_bus_*` functions call. A
//! managed listener is released through the host's release hook exactly once, and goes with its
//! script generation, like a script delegate's managed binding.

mod channel;
mod listen;
mod message;
mod posted;
mod poster;
mod script;
mod send;
mod subscribe;
mod tag;

pub use message::Message;
pub use poster::{BusGone, Poster};
pub use script::{BusMessage, ScriptBusError, ScriptLayout};
pub use subscribe::{AnyEntity, BusSubscribe, Exact, OneEntity, Partial};
#[doc(hidden)]
pub use subscribe::{NotAddressed, NotPartial};
#[doc(hidden)]
pub use tag::script_tag_key;
pub use tag::{DeclaredTag, Tag, TagConflict, TagKey, UnknownTag, WrongPayload, register_tags};

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::rc::{Rc, Weak};
use std::sync::Arc;

use smallvec::SmallVec;

use crate::bind_site::Subscription;
use crate::drops::{Drops, Guarded, drop_user};
use crate::handle::DelegateHandle;
use crate::invocation::{Cleared, InvocationList, RemoveByHandle, Shared, Spec};
use crate::next_broadcast::{NextBroadcast, NextSender};
use crate::scoped::ScopedSubscription;
use crate::track;

use channel::{
    Channel, EntityChannels, EntityTags, ParentRelation, Parents, QUEUE, RETAINED, Replaced,
    clear_channels, shrink,
};
use listen::{exact, once, once_exact, partial};
use message::{Walking, hears};
use posted::Posted;
use send::unheard;

/// What identifies a gameplay entity on the bus: any small `Copy` id the engine chooses (an
/// index, a generational id, a bevy-style `Entity`).
///
/// An id's `Hash` and `PartialEq` are user code, and may re-enter the bus (M13): the bus runs
/// them with none of its maps borrowed, hashing an id once per operation (an addressed message
/// once per entity it climbs through) and comparing it with the ids it keeps copied out of its
/// maps. Ids are copied, never cloned, and being `Copy` they have no `Drop`.
pub trait EntityId: Copy + Eq + Hash + fmt::Debug + 'static {}

impl<T: Copy + Eq + Hash + fmt::Debug + 'static> EntityId for T {}

/// What a listener is: called with the message being delivered. Made by the
/// bus's `listen*` methods from the user's closure, in the caller's crate, so the callable's code
/// lies in the game module that subscribed (MB4 finds it there).
type Callable<E> = Rc<dyn Fn(&Message<'_, E>)>;

/// A listener as its channel's list keeps it: `Shared`, so a call reaches the closure without
/// `Rc`'s offset to its value (GB9).
type Stored<E> = Shared<dyn Fn(&Message<'_, E>)>;

/// What the bus remembers of a listener, for [`MessageBus::remove`] and the listing.
#[derive(Clone, Copy)]
struct Record<E> {
    tag: Tag,
    entity: Option<E>,
    partial: bool,
    /// Made with the builder's `once()` (X3): listed as one-shot (V1).
    once: bool,
    /// The listener of a pending `next()` future (X5): listed as a future (V1).
    future: bool,
}

/// A listener of the bus as [`MessageBus::subscriptions`] lists it (GB7, B5).
#[derive(Clone, Debug)]
pub struct ListenerInfo<E> {
    /// The tag it listens to.
    pub tag: Tag,
    /// The only entity it hears, if any.
    pub entity: Option<E>,
    /// Whether it hears every descendant of `tag` too.
    pub partial: bool,
    /// Its handle, bind site and owner state.
    pub subscription: Subscription,
    /// Whether it is a pending `next()` future (X5) rather than a listener: it hears the next
    /// matching message once, and goes when the future resolves or is dropped. Its
    /// subscription's bind site is the `next()` call's.
    pub future: bool,
}

/// The gameplay message bus (GB1-GB9); see the [module documentation](self).
///
/// `E` is the engine's entity id type. Each tag's listeners are one invocation list, the one
/// behind every delegate, so listening and removing during a send follow the delegates' rules
/// (M1-M13).
///
/// # Cost (rule N4)
///
/// With t tags registered in the process, e entities with listeners, n listeners and m managed
/// listeners, amortized:
///
/// | operation | cost |
/// |---|---|
/// | [`listen`](Self::listen), [`next`](Self::next), and through [`subscribe`](Self::subscribe) (partial, entity, one-shot, priority) | O(1), plus O(log t + k) to find the k retained messages it hears at once (retained tag or partial) |
/// | [`remove`](Self::remove), [`scoped`](Self::scoped), [`contains`](Self::contains) | O(log n) (O(log m) more for a managed listener); an entity's channel goes with its last listener |
/// | [`forget_entity`](Self::forget_entity) | O(k) in the entity's own channels and listeners |
/// | [`send`](Self::send), [`send_to`](Self::send_to), [`send_tag`](Self::send_tag) | O(1) per listener that hears it and per level of the tag and entity hierarchies |
/// | [`post`](Self::post), [`post_to`](Self::post_to) | O(1); [`deliver_posted`](Self::deliver_posted): O(1) per message |
/// | [`retained`](Self::retained) | O(1); [`clear_retained`](Self::clear_retained): O(log t) |
/// | `listen_managed`, `remove_managed` | O(log m) |
/// | [`subscriptions`](Self::subscriptions), [`clear`](Self::clear), [`posted`](Self::posted), `managed_bindings`, `managed_len` | O(n) (or O(t)) in what they walk |
///
/// Tables that lost most of their entries (records of listeners, entity channels) shrink.
pub struct MessageBus<E: EntityId = u64> {
    /// Listeners of no particular entity, by tag id. Never shrinks; a tag's channel is made by
    /// its first listener, post or retained message.
    channels: RefCell<Vec<Option<Rc<Channel<E>>>>>,
    /// Listeners of one entity, by tag id and entity hash.
    entity_channels: RefCell<EntityChannels<E>>,
    /// Hashes entity ids for `entity_channels`.
    entity_hasher: RandomState,
    /// Counts the channels added to and removed from `entity_channels`: a lookup that found no
    /// channel adds one only if no user code (an id's `PartialEq`) added one meanwhile.
    entity_changes: Cell<u64>,
    /// The tag ids of each entity hash's channels (rule N4: `forget_entity` walks an entity's
    /// own channels, not every entity's).
    entity_tags: RefCell<EntityTags>,
    /// How many keys `entity_channels` had after its last sweep of channels left with no
    /// listener (one-shots that fired, guards, unloads): the next runs once it has doubled.
    entity_swept: Cell<usize>,
    /// The tags whose channel has a retained message, by name: a tag's descendants are a range
    /// of names (`A.B`, then `A.B.`..), so a partial listener finds the retained messages it
    /// hears in O(log n + k) (rule N4).
    retaining: RefCell<BTreeMap<&'static str, Tag>>,
    /// Whether any partial listener was ever added: if not, a send looks up its own tag only.
    any_partial: Cell<bool>,
    /// Whether any entity's listener was ever added: if not, an addressed message does not
    /// climb the entity hierarchy (its channels go with their last listener, so their map
    /// being empty does not tell).
    any_entity: Cell<bool>,
    /// The engine's entity parent relation (GB4).
    parents: Rc<Parents<E>>,
    /// Every listener added, by handle id; an entry whose listener was removed another way (a
    /// guard, an unload, a one-shot that fired) is swept out once the table has doubled since
    /// its last sweep.
    records: RefCell<HashMap<u64, Record<E>>>,
    /// How many records were left after the last sweep.
    records_swept: Cell<usize>,
    /// The posted messages' tags in post order, with their sequence numbers (GB5).
    order: RefCell<VecDeque<(u64, Tag)>>,
    next_seq: Cell<u64>,
    /// What other threads post (GB5).
    inbox: Arc<poster::Inbox<E>>,
    /// The storage the inbox's messages are moved into while they are queued, kept between
    /// frames.
    spare: RefCell<Vec<poster::Boxed<E>>>,
    /// The thread that made the bus: the C ABI refuses calls from any other (T1, GB8).
    thread: std::thread::ThreadId,
    /// Managed listeners (GB8), made by the first; a heap block of its own, which script
    /// generations refer to weakly (R1).
    scripts: RefCell<Option<Rc<script::ScriptListeners>>>,
}

impl<E: EntityId> Default for MessageBus<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: EntityId> fmt::Debug for MessageBus<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageBus")
            .field("listeners", &self.subscriptions())
            .field("posted", &self.posted())
            .finish()
    }
}

impl<E: EntityId> MessageBus<E> {
    /// An empty bus.
    pub fn new() -> Self {
        MessageBus {
            channels: RefCell::new(Vec::new()),
            entity_channels: RefCell::new(HashMap::new()),
            entity_hasher: RandomState::new(),
            entity_changes: Cell::new(0),
            entity_tags: RefCell::new(HashMap::new()),
            entity_swept: Cell::new(0),
            retaining: RefCell::new(BTreeMap::new()),
            any_partial: Cell::new(false),
            any_entity: Cell::new(false),
            parents: Rc::new(Parents {
                relation: RefCell::new(None),
                tracked: Cell::new(0),
            }),
            records: RefCell::new(HashMap::new()),
            records_swept: Cell::new(0),
            order: RefCell::new(VecDeque::new()),
            next_seq: Cell::new(0),
            inbox: Arc::new(poster::Inbox::new()),
            spare: RefCell::new(Vec::new()),
            thread: std::thread::current().id(),
            scripts: RefCell::new(None),
        }
    }

    /// Gives the bus the engine's entity hierarchy (GB4): `parent(entity)` is the entity an
    /// addressed message bubbles to next, `None` at a root. Replaces the relation given before.
    ///
    /// A relation with a cycle is not followed round: a message stops climbing at the first
    /// entity it would reach twice, with one `tracing` warning, so each listener hears it once
    /// (exactly so for a cycle of up to 32 entities; a longer one is found within three laps).
    /// The relation is called once per entity the message climbs through.
    ///
    /// A relation set by a game module's code goes when the module unloads (R5): from then on
    /// messages bubble no further than the addressed entity, until one is set again.
    pub fn set_entity_parents(&self, parent: impl Fn(E) -> Option<E> + 'static) {
        let relation: ParentRelation<E> = Rc::new(parent);
        let code = track::code_of(&*relation);
        let old = self.parents.relation.replace(Some(relation));
        self.parents.track(code);
        Drops::drop_one(old);
    }

    // ---- listening -------------------------------------------------------------------------

    /// Listens to `key`'s tag exactly (GB3): `listener(payload, message)` for every message on
    /// that tag, whichever entity it is addressed to. If the tag is retained and has a message,
    /// the listener hears it before this returns (GB6).
    #[track_caller]
    pub fn listen<P: 'static>(
        &self,
        key: &TagKey<P>,
        listener: impl Fn(&P, &Message<'_, E>) + 'static,
    ) -> DelegateHandle {
        self.subscribe().listen(key, listener)
    }

    /// A listener with options (A1): [`priority`](BusSubscribe::priority),
    /// [`once`](BusSubscribe::once), [`partial`](BusSubscribe::partial) and
    /// [`entity`](BusSubscribe::entity), one method each, in any order, then the finish:
    /// [`listen`](BusSubscribe::listen) (the handle) or [`next`](BusSubscribe::next) (the future
    /// of the next message). See [`BusSubscribe`].
    ///
    /// Cost: nothing until the finish, which costs what the plain form costs (N4).
    ///
    /// ```
    /// use lumina::bus::MessageBus;
    /// use lumina::gameplay_tags;
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// gameplay_tags! {
    ///     pub mod tags {
    ///         Door.Opened: u32,
    ///     }
    /// }
    ///
    /// let bus: MessageBus<u32> = MessageBus::new();
    /// let heard = Rc::new(Cell::new(0));
    /// let sink = Rc::clone(&heard);
    /// let first = bus.subscribe().once().listen(&tags::DOOR_OPENED, move |door, _| sink.set(*door));
    /// bus.send(&tags::DOOR_OPENED, 3);
    /// bus.send(&tags::DOOR_OPENED, 4);
    /// assert_eq!(heard.get(), 3);
    /// assert!(!bus.contains(first));
    /// assert!(!bus.remove(first), "the handle is spent");
    /// ```
    #[inline]
    pub fn subscribe(&self) -> BusSubscribe<'_, E> {
        BusSubscribe::new(self)
    }

    // ---- futures (X5) ----------------------------------------------------------------------

    /// The future of the next message on `key`'s tag exactly (X5): resolves to `Ok` with a
    /// clone of its payload, or to `Err(`[`Gone`](crate::Gone)`)` if the bus is dropped first.
    ///
    /// - It listens from now on, not from its first poll; made during a send, it resolves at
    ///   the next one (M2). A retained message already kept is not "next": read it with
    ///   [`retained`](Self::retained).
    /// - Dropping it stops listening at once: a send running meanwhile does not reach it.
    /// - It is an ordinary `!Send` future: any single-threaded executor polls it, and
    ///   [`coroutine::spawn_local`](crate::coroutine::spawn_local) runs it on the game thread.
    ///
    /// The future of a partial or an entity's next message goes through the builder:
    /// `bus.subscribe().partial().entity(e).next::<P>(&TAG)` ([`BusSubscribe::next`]).
    ///
    /// ```
    /// use lumina::bus::MessageBus;
    /// use lumina::{coroutine, gameplay_tags, main_thread};
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// gameplay_tags! {
    ///     pub mod tags {
    ///         Quest.Stage: u32,
    ///     }
    /// }
    ///
    /// let _game = main_thread::GameThreadScope::enter();
    /// let bus = Rc::new(MessageBus::<u32>::new());
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// let (waiting, sink) = (Rc::clone(&bus), Rc::clone(&log));
    /// coroutine::spawn_local(async move {
    ///     while let Ok(stage) = waiting.next(&tags::QUEST_STAGE).await {
    ///         sink.borrow_mut().push(stage);
    ///         if stage == 2 {
    ///             break;
    ///         }
    ///     }
    /// });
    /// main_thread::process_queue(); // the task starts and waits
    /// bus.send(&tags::QUEST_STAGE, 1);
    /// main_thread::process_queue();
    /// bus.send(&tags::QUEST_STAGE, 2);
    /// main_thread::process_queue();
    /// assert_eq!(*log.borrow(), [1, 2]);
    /// ```
    #[track_caller]
    pub fn next<P: Clone + 'static>(&self, key: &TagKey<P>) -> NextBroadcast<P> {
        self.subscribe().next(key)
    }
}

impl<E: EntityId> Drop for MessageBus<E> {
    /// Drops every queued message with a diagnostic (nothing can hear them any more, GB5), then
    /// every listener and retained message; every `Drop` runs even if one panics (R3).
    fn drop(&mut self) {
        // Managed listeners (GB8) reach the host's hook, as `Destroyed`, once every drop ran.
        let _operation = self.script_operation();
        let mut drops = Drops::default();
        let from_threads = self.inbox.close(&mut drops);
        let mut queued = 0;
        for channel in self.channels.get_mut().iter().flatten() {
            if let Some(queue) = channel.queue.borrow_mut().take() {
                queued += queue.discard(&mut drops);
                drops.drop(queue);
            }
        }
        if queued + from_threads > 0 {
            tracing::warn!(
                "lumina: a message bus was dropped with {} posted messages not delivered; \
                 nothing can hear them any more",
                queued + from_threads
            );
        }
        for channel in std::mem::take(self.channels.get_mut())
            .into_iter()
            .flatten()
        {
            drops.drop(channel);
        }
        for (_, bucket) in std::mem::take(self.entity_channels.get_mut()) {
            for (_, channel) in bucket {
                drops.drop(channel);
            }
        }
        drops.drop(self.parents.relation.borrow_mut().take());
        drops.finish();
    }
}

/// The tag of `key` (a [`TagKey`], or a [`Tag`]), resolved while the caller's `value` (a
/// payload, a listener) is held under the guard: resolving a key panics when its name was
/// declared with another payload type or is malformed (GB2), and `value`, the library's then,
/// is dropped under the guard rather than plainly while that panic unwinds (R2). Every bus
/// operation that takes a key and a user value resolves the key through this. Free when the
/// key resolves.
#[inline(always)]
pub(super) fn resolve<T>(key: impl Into<Tag>, value: T) -> (Tag, T) {
    let value = Guarded::new(value);
    let tag = key.into();
    (tag, value.into_inner())
}

impl<P: 'static> From<&TagKey<P>> for Tag {
    fn from(key: &TagKey<P>) -> Tag {
        key.tag()
    }
}

#[cfg(test)]
mod tests;
