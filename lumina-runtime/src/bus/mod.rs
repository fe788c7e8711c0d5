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

mod poster;
mod script;
mod subscribe;
mod tag;

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

/// What identifies a gameplay entity on the bus: any small `Copy` id the engine chooses (an
/// index, a generational id, a bevy-style `Entity`).
///
/// An id's `Hash` and `PartialEq` are user code, and may re-enter the bus (M13): the bus runs
/// them with none of its maps borrowed, hashing an id once per operation (an addressed message
/// once per entity it climbs through) and comparing it with the ids it keeps copied out of its
/// maps. Ids are copied, never cloned, and being `Copy` they have no `Drop`.
pub trait EntityId: Copy + Eq + Hash + fmt::Debug + 'static {}

impl<T: Copy + Eq + Hash + fmt::Debug + 'static> EntityId for T {}

/// How far an addressed message climbs the entity hierarchy at most (with a warning): a
/// hierarchy deeper than this is taken for a cycle the checks of [`Climb`] did not find.
const MAX_ENTITY_DEPTH: usize = 1024;

/// How many of the entities it climbed through an addressed message remembers, on the stack:
/// a cycle of up to this many entities is found where it closes (GB4).
const RECENT_ENTITIES: usize = 32;

/// What an addressed message's climb of the entity hierarchy knows of the entities it went
/// through, to stop at the first one it would reach twice (GB4), with no allocation (GB9): the
/// last [`RECENT_ENTITIES`] of them, which find a cycle of up to that many entities where it
/// closes, at any depth; and Brent's tortoise, which finds a longer one within three laps.
struct Climb<E> {
    recent: [Option<E>; RECENT_ENTITIES],
    steps: usize,
    /// Brent: the entity saved at the last power of two, how far the climb went since, and
    /// that power.
    tortoise: E,
    lap: usize,
    power: usize,
}

impl<E: EntityId> Climb<E> {
    fn new(start: E) -> Self {
        let mut recent = [None; RECENT_ENTITIES];
        recent[0] = Some(start);
        Climb {
            recent,
            steps: 0,
            tortoise: start,
            lap: 0,
            power: 1,
        }
    }

    /// The climb goes on to `next`: whether it was there already (compared with the ids'
    /// `PartialEq`, user code, run with nothing borrowed).
    fn revisits(&mut self, next: E) -> bool {
        if next == self.tortoise || self.recent.iter().flatten().any(|seen| *seen == next) {
            return true;
        }
        self.steps += 1;
        self.recent[self.steps % RECENT_ENTITIES] = Some(next);
        self.lap += 1;
        if self.lap == self.power {
            self.tortoise = next;
            self.power *= 2;
            self.lap = 0;
        }
        false
    }
}

/// What a listener is: called with the message being delivered. Made by the
/// bus's `listen*` methods from the user's closure, in the caller's crate, so the callable's code
/// lies in the game module that subscribed (MB4 finds it there).
type Callable<E> = Rc<dyn Fn(&Message<'_, E>)>;

/// A listener as its channel's list keeps it: `Shared`, so a call reaches the closure without
/// `Rc`'s offset to its value (GB9).
type Stored<E> = Shared<dyn Fn(&Message<'_, E>)>;

/// The message a listener hears: its tag, the entity it is addressed to, its payload, and the
/// power to stop it going further (GB3).
pub struct Message<'a, E: EntityId = u64> {
    tag: Tag,
    entity: Option<E>,
    /// The payload's address: a value of type `payload_type`, borrowed for `'a` (from Rust, or
    /// the bus's aligned copy of a managed sender's bytes, GB8).
    payload: NonNull<()>,
    borrow: PhantomData<&'a ()>,
    /// The `TypeId` of the value `payload` points at, read once per message, so a listener
    /// checks its payload type without a dynamic call (GB9).
    payload_type: TypeId,
    /// The tag whose listeners run now (the message's tag or an ancestor).
    at: Cell<Tag>,
    /// What an exact listener checks, with one comparison for its tag, its payload type and
    /// the M2 `limit` (GB9; set by [`Message::enter`] for each channel walked). While the
    /// listeners of the message's own tag run and the payload has the type declared with it,
    /// the tag's [`addr`](Tag::addr), with the low bit set if the channel may hold listeners
    /// added after the message started (then each exact listener compares its id with `limit`
    /// too); 0 otherwise.
    gate: Cell<usize>,
    /// The entity whose listeners run now (`None`: listeners of no particular entity).
    at_entity: Cell<Option<E>>,
    consumed: Cell<bool>,
    /// Whether a listener heard it. A flag, not a count: each listener stores `true`, which
    /// the next one does not have to wait for (an increment would chain them, GB9).
    heard: Cell<bool>,
    /// Heard as a retained message by a listener added after it was sent (GB6).
    replayed: bool,
    /// The handle ids of the listeners added before this message started: only they hear it
    /// (M2 across channels: a listener added to an ancestor's or another entity's channel while
    /// the message walks an earlier one does not hear it). `u64::MAX` for a replay; 0 once
    /// consumed (nobody hears it any more).
    limit: Cell<u64>,
    /// The channel whose listeners run now, while they run (null otherwise): what
    /// [`consume`](Self::consume) stops. Set and cleared by `MessageBus::walk_channel`, whose
    /// caller holds the channel meanwhile (src/addresses.md).
    walking: Cell<*const Channel<E>>,
}

impl<'a, E: EntityId> Message<'a, E> {
    /// A message whose payload is a `P`.
    #[inline(always)]
    fn new<P: 'static>(tag: Tag, entity: Option<E>, payload: &'a P) -> Self {
        // SAFETY: `payload` is a live `P` borrowed for `'a`, and the type given is `P`'s.
        unsafe {
            Self::with_type(
                tag,
                entity,
                NonNull::from(payload).cast(),
                TypeId::of::<P>(),
            )
        }
    }

    /// A message whose payload type is known only at run time (a retained message replayed).
    fn new_erased(tag: Tag, entity: Option<E>, payload: &'a dyn Any) -> Self {
        let payload_type = payload.type_id();
        // SAFETY: the data pointer of `payload` points at a live value of the type whose
        // `TypeId` its own vtable gives, borrowed for `'a`.
        unsafe { Self::with_type(tag, entity, NonNull::from(payload).cast(), payload_type) }
    }

    /// # Safety
    /// `payload` must point at a live, initialized value of the type whose `TypeId` is
    /// `payload_type`, valid for shared reads for `'a` (see `payload`).
    #[inline(always)]
    unsafe fn with_type(
        tag: Tag,
        entity: Option<E>,
        payload: NonNull<()>,
        payload_type: TypeId,
    ) -> Self {
        Message {
            tag,
            entity,
            payload,
            borrow: PhantomData,
            payload_type,
            at: Cell::new(tag),
            gate: Cell::new(0),
            at_entity: Cell::new(None),
            consumed: Cell::new(false),
            heard: Cell::new(false),
            replayed: false,
            limit: Cell::new(DelegateHandle::next_id()),
            walking: Cell::new(std::ptr::null()),
        }
    }

    /// The tag the message was sent on (a partial listener hears descendants of its own tag).
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// The entity the message is addressed to, if any.
    pub fn entity(&self) -> Option<E> {
        self.entity
    }

    /// The entity whose listeners hear the message now: the addressed entity, then its
    /// ancestors (GB4); `None` while the listeners of no particular entity hear it.
    pub fn current_entity(&self) -> Option<E> {
        self.at_entity.get()
    }

    /// The tag whose listeners hear the message now: the message's tag, then its ancestors.
    pub fn current_tag(&self) -> Tag {
        self.at.get()
    }

    /// The payload, if it is a `P`. One comparison: no dynamic call.
    #[inline(always)]
    pub fn payload<P: 'static>(&self) -> Option<&'a P> {
        if self.payload_type != TypeId::of::<P>() {
            return None;
        }
        // SAFETY: compared just above: what `downcast_ref` does, without its dynamic `type_id`
        // call per listener (GB9).
        Some(unsafe { self.payload_unchecked() })
    }

    /// The listeners of `tag` run next, from a channel whose newest listener has the id
    /// `newest`: sets [`current_tag`](Self::current_tag), and what exact listeners check
    /// (`gate`). A listener with an id below `limit` was added before the message started.
    #[inline(always)]
    fn enter(&self, tag: Tag, newest: u64) {
        self.at.set(tag);
        let gate = if tag == self.tag && tag.carries_id(self.payload_type) {
            tag.addr() | usize::from(newest >= self.limit.get())
        } else {
            0
        };
        self.gate.set(gate);
    }

    /// The payload as a `P`, without comparing types.
    ///
    /// # Safety
    ///
    /// `P`'s `TypeId` must be `payload_type`.
    #[inline(always)]
    unsafe fn payload_unchecked<P: 'static>(&self) -> &'a P {
        debug_assert!(self.payload_type == TypeId::of::<P>());
        // SAFETY: `payload_type` is the `TypeId` of the value `payload` points at (the contract of
        // the only constructor, `with_type`, kept by `new` from the static type of that value, by
        // `new_erased` from the value itself, and by `script::ScriptBytes` from the tag's
        // declared type), and it is `P`'s (contract): `payload` points to a live `P`, borrowed
        // for `'a`.
        unsafe { self.payload.cast::<P>().as_ref() }
    }

    /// The payload as declared with `key`, if the message's tag is `key`'s tag or a descendant
    /// carrying the same payload type.
    pub fn get<P: 'static>(&self, key: &TagKey<P>) -> Option<&'a P> {
        if self.tag.matches(key.tag()) {
            self.payload()
        } else {
            None
        }
    }

    /// Stops the message: no listener after this one hears it (GB3, GB4).
    pub fn consume(&self) {
        self.consumed.set(true);
        // Nobody hears it from now on: no exact listener's gate opens, and every listener's id
        // is at least the limit (M2's check). Then the loop is asked to stop after this call
        // (so it reads nothing after each call, GB9); where it cannot be (the merging walk),
        // the listeners after this one are called and hear nothing.
        self.gate.set(0);
        self.limit.set(0);
        // SAFETY: `walking` is null or points at the channel whose listeners run now, which
        // the walk holds until it clears `walking` (see the field); this listener runs in it.
        if let Some(channel) = unsafe { self.walking.get().as_ref() } {
            channel.list.stop_after_call();
        }
    }

    /// Whether a listener consumed the message.
    pub fn is_consumed(&self) -> bool {
        self.consumed.get()
    }

    /// Whether this is a retained message heard by a listener added after it was sent (GB6).
    pub fn is_replay(&self) -> bool {
        self.replayed
    }
}

impl<E: EntityId> fmt::Debug for Message<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("tag", &self.tag)
            .field("entity", &self.entity)
            .field("current_tag", &self.at.get())
            .field("current_entity", &self.at_entity.get())
            .field("consumed", &self.consumed.get())
            .finish()
    }
}

/// A retained message: the entity it was addressed to, and its payload.
type Retained<E> = (Option<E>, Rc<dyn Any>);
/// The channels of listeners of one entity, by tag id and the entity's hash (made by the bus's
/// [`RandomState`], outside any borrow), each with its entity: the map itself runs no user code
/// (M13). Almost always one channel per key: more only when two entities' hashes collide.
type EntityChannels<E> = HashMap<(u32, u64), SmallVec<[(E, Rc<Channel<E>>); 1]>>;
/// The tag ids that have a channel in [`EntityChannels`] for an entity hash: what
/// [`MessageBus::forget_entity`] looks up, O(k) in the entity's own channels (rule N4).
type EntityTags = HashMap<u64, SmallVec<[u32; 2]>>;
/// The message a retained tag kept before a new one: its payload, when replaced in place, or
/// the kept pair, when replaced whole.
type Replaced<P, E> = (Option<P>, Option<Retained<E>>);
/// The engine's entity parent relation (GB4).
type ParentRelation<E> = Rc<dyn Fn(E) -> Option<E>>;

/// The listeners of one tag (for one entity, or for none), with the tag's retained message and
/// posted queue.
struct Channel<E: EntityId> {
    tag: Tag,
    list: InvocationList<Stored<E>>,
    /// How many partial listeners were ever added: 0 lets a message on a descendant skip this
    /// channel.
    partials: Cell<u32>,
    /// The largest handle id of a listener ever added: when it is below a message's `limit`,
    /// every listener of the channel was added before the message started, and its exact
    /// listeners need not compare their ids with the limit (M2, GB9).
    newest: Cell<u64>,
    /// The last message of a retained tag (GB6), shared so a listener hearing it at once can
    /// send on the tag meanwhile. Reused in place when nothing else holds it.
    retained: RefCell<Option<Retained<E>>>,
    /// The messages posted on this tag, typed (GB5); created by the first post.
    queue: RefCell<Option<Rc<dyn Posted<E>>>>,
    /// The ids under which the module loader knows the retained message ([`RETAINED`]) and
    /// the posted queue ([`QUEUE`]) when their code lies in a game module's library; 0 when
    /// not recorded (R5, see [`Channel::track`]).
    tracked: Cell<[u64; 2]>,
}

/// Which value of a channel a module record names: the retained message...
const RETAINED: usize = 0;
/// ... or the posted queue.
const QUEUE: usize = 1;

/// Shrinks `map` when it holds less than a quarter of its capacity (tables do not keep the
/// storage of a burst).
fn shrink<K: Eq + Hash, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

impl<E: EntityId> Channel<E> {
    /// Whether the channel holds nothing: no listener, retained message or posted queue (an
    /// entity's channel then goes).
    fn is_unused(&self) -> bool {
        self.list.is_empty()
            && self.retained.try_borrow().is_ok_and(|slot| slot.is_none())
            && self.queue.try_borrow().is_ok_and(|slot| slot.is_none())
    }

    fn new(tag: Tag) -> Self {
        Channel {
            tag,
            list: InvocationList::new(),
            partials: Cell::new(0),
            newest: Cell::new(0),
            retained: RefCell::new(None),
            queue: RefCell::new(None),
            tracked: Cell::new([0; 2]),
        }
    }
}

// ---- game modules (R5, MB4) ---------------------------------------------------------------------
//
// A retained message or a posted queue whose payload type is a game module's holds the module's
// code: its vtable, its payload's `Drop`. Such a value is recorded with the module loader, the
// way the invocation list records a module's subscriptions (`track`): the record names
// the channel's `Rc` block (its `ModuleRecorded` impl, below), and the module's unload drops the
// value while the library is still mapped. (A module's listeners are the list's own records.)

/// Records a value the bus holds with the module loader, under a fresh id kept in `id`, when
/// `code` (its vtable) lies in a loaded module; forgets the record of the value it replaces.
/// `code` is `None` at once while no module is loaded: then only an old record is forgotten.
fn record_module_value(id: &Cell<u64>, code: Option<track::Code>, access: track::ListAccess) {
    let old = id.replace(0);
    if old != 0 {
        track::forget(std::iter::once(old));
    }
    if code.is_some() {
        let handle = DelegateHandle::new_unique();
        id.set(handle.id());
        let _ = track::track(access, handle, code);
    }
}

impl<E: EntityId> Channel<E> {
    /// Records the channel's retained message or posted queue (`which`) with the module loader
    /// when `code` lies in a loaded module (see [`record_module_value`]).
    fn track(self: &Rc<Self>, which: usize, code: Option<track::Code>) {
        let mut ids = self.tracked.get();
        let id = Cell::new(ids[which]);
        record_module_value(&id, code, track::ListAccess::of(self));
        ids[which] = id.get();
        self.tracked.set(ids);
    }

    /// Drops the value the record `id` names (R5): the module it belongs to is unloading.
    /// Returns whether there was one.
    fn drop_recorded(&self, id: u64) -> bool {
        let mut ids = self.tracked.get();
        let Some(which) = ids.iter().position(|&tracked| tracked == id) else {
            // A message the module posted into a queue that is not its own (MB6).
            let queue = self.queue.borrow().clone();
            let taken = queue.and_then(|queue| queue.take_recorded(id));
            let had = taken.is_some();
            Drops::drop_one(taken);
            return had;
        };
        ids[which] = 0;
        self.tracked.set(ids);
        if which == RETAINED {
            let old = self.retained.borrow_mut().take();
            let had = old.is_some();
            Drops::drop_one(old);
            return had;
        }
        let Some(queue) = self.queue.borrow_mut().take() else {
            return false;
        };
        let mut drops = Drops::default();
        let count = queue.discard(&mut drops);
        if count > 0 {
            tracing::warn!(
                tag = %self.tag,
                "lumina: {count} message(s) posted on `{}` were dropped undelivered: the game \
                 module whose type they carry is unloading",
                self.tag
            );
        }
        drops.drop(queue);
        drops.finish();
        true
    }

    /// Whether a value of the channel is lent out (a replay or a delivery holds the retained
    /// message or the queue, or a caller of [`MessageBus::retained`] does): its module cannot
    /// be unloaded now (R5).
    fn lends(&self) -> bool {
        let retained = self.retained.try_borrow().map_or(true, |slot| {
            slot.as_ref().is_some_and(|(_, p)| Rc::strong_count(p) > 1)
        });
        let queue = self.queue.try_borrow().map_or(true, |slot| {
            slot.as_ref().is_some_and(|q| Rc::strong_count(q) > 1)
        });
        retained || queue
    }
}

impl<E: EntityId> Drop for Channel<E> {
    /// Forgets its module records, then drops its listeners, retained message and posted queue
    /// each under the guard: left to the fields' drop, a panic of the listeners' drop would drop
    /// the retained message while it unwinds (R2, R3).
    fn drop(&mut self) {
        let ids = self.tracked.get();
        if track::recording() {
            if ids != [0; 2] {
                track::forget(ids.into_iter().filter(|&id| id != 0));
            }
            // A delivery may hold the queue past the channel: its messages' records name the
            // channel, so they go now (R1).
            if let Some(queue) = self.queue.get_mut() {
                queue.forget_records();
            }
        }
        let mut drops = Drops::default();
        drops.drop(std::mem::take(&mut self.list));
        drops.drop(self.retained.get_mut().take());
        drops.drop(self.queue.get_mut().take());
        drops.finish();
    }
}

/// The engine's entity parent relation (GB4), in a block of its own so that the module loader
/// can drop it when a game module's code set it (R5).
struct Parents<E> {
    relation: RefCell<Option<ParentRelation<E>>>,
    /// The id under which the module loader knows the relation; 0 when not recorded.
    tracked: Cell<u64>,
}

impl<E: EntityId> Parents<E> {
    /// Records the relation with the module loader when `code` lies in a loaded module.
    fn track(self: &Rc<Self>, code: Option<track::Code>) {
        record_module_value(&self.tracked, code, track::ListAccess::of(self));
    }
}

impl<E> Drop for Parents<E> {
    fn drop(&mut self) {
        let id = self.tracked.get();
        if id != 0 && track::recording() {
            track::forget(std::iter::once(id));
        }
    }
}

/// The module loader's access to the relation's record (R5).
// SAFETY: `Parents`'s `Drop` forgets its record (above).
unsafe impl<E: EntityId> track::ModuleRecorded for Parents<E> {
    /// Nothing: the relation is dropped here, while the loader's strong reference keeps the
    /// block alive (its `Drop`, user code, may drop the bus).
    type Taken = ();

    /// Whether a message is bubbling through the relation now.
    fn busy(&self) -> bool {
        self.relation.try_borrow().map_or(true, |relation| {
            relation.as_ref().is_some_and(|r| Rc::strong_count(r) > 1)
        })
    }

    fn take_recorded(&self, handle: DelegateHandle) -> (bool, ()) {
        let mine = self.tracked.get() == handle.id();
        if mine {
            self.tracked.set(0);
            let old = self.relation.borrow_mut().take();
            Drops::drop_one(old);
        }
        (mine, ())
    }
}

/// The module loader's access to a channel's records (R5).
// SAFETY: `Channel`'s `Drop` forgets its records, and `record_module_value` forgets the record of
// a value it replaces.
unsafe impl<E: EntityId> track::ModuleRecorded for Channel<E> {
    /// Nothing: `drop_recorded` drops the value here, while the loader's strong reference keeps
    /// the channel alive (the drops run user code, which may drop the bus).
    type Taken = ();

    /// Whether a value is lent out.
    fn busy(&self) -> bool {
        self.lends()
    }

    fn take_recorded(&self, handle: DelegateHandle) -> (bool, ()) {
        (self.drop_recorded(handle.id()), ())
    }
}

/// The queue of one tag's posted messages, erased to the bus.
trait Posted<E: EntityId>: Any {
    /// Delivers the oldest message of this queue if it is the one posted as `seq`; whether it
    /// was (a queue dropped by a module's unload leaves its messages' places in the bus's post
    /// order behind, R5).
    fn deliver_front(&self, bus: &MessageBus<E>, tag: Tag, seq: u64) -> bool;
    /// How many messages wait.
    fn len(&self) -> usize;
    /// Drops every queued message; returns how many there were.
    fn discard(&self, drops: &mut Drops) -> usize;
    /// Takes out the message recorded with the module loader as `record` (MB6), to be dropped
    /// by the caller with nothing borrowed.
    fn take_recorded(&self, record: u64) -> Option<Box<dyn Any>>;
    /// Forgets the module records of its messages: their channel is being dropped.
    fn forget_records(&self);
    fn as_any(&self) -> &dyn Any;
}

/// One posted message: its place in the bus's post order, its entity, its payload, and the id
/// under which the module loader knows it (0: none).
type Item<P, E> = (u64, Option<E>, P, u64);

/// One tag's posted messages, with their places in the bus's post order.
struct TypedQueue<P, E> {
    items: RefCell<VecDeque<Item<P, E>>>,
}

/// Forgets the module record of a message that leaves its queue (delivered, discarded).
fn forget_item(record: u64) {
    if record != 0 && track::recording() {
        track::forget(std::iter::once(record));
    }
}

impl<P, E> Drop for TypedQueue<P, E> {
    /// Each message still queued is dropped on its own (R2: dropped as one `VecDeque`, a
    /// panicking payload would drop the rest while it unwinds).
    fn drop(&mut self) {
        let items = self.items.get_mut();
        for item in items.iter() {
            forget_item(item.3);
        }
        Drops::drop_each(items.drain(..));
    }
}

impl<P: 'static, E: EntityId> Posted<E> for TypedQueue<P, E> {
    fn deliver_front(&self, bus: &MessageBus<E>, tag: Tag, seq: u64) -> bool {
        // Taken out before any user code runs: the listeners may post on this tag again.
        let front = {
            let mut items = self.items.borrow_mut();
            match items.front() {
                Some(&(posted, ..)) if posted == seq => items.pop_front(),
                _ => None,
            }
        };
        let Some((_, entity, payload, record)) = front else {
            return false;
        };
        forget_item(record);
        bus.deliver(tag, entity, payload);
        true
    }

    fn len(&self) -> usize {
        self.items.borrow().len()
    }

    fn discard(&self, drops: &mut Drops) -> usize {
        let items = std::mem::take(&mut *self.items.borrow_mut());
        let count = items.len();
        for item in items {
            forget_item(item.3);
            drops.drop(item);
        }
        count
    }

    fn take_recorded(&self, record: u64) -> Option<Box<dyn Any>> {
        let mut items = self.items.borrow_mut();
        // Records grow with the post order, as the queue does.
        let index = items.iter().position(|item| item.3 == record)?;
        let (_, entity, payload, _) = items.remove(index)?;
        Some(Box::new((entity, payload)))
    }

    fn forget_records(&self) {
        for item in self.items.borrow().iter() {
            forget_item(item.3);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What the bus remembers of a listener, for [`MessageBus::remove`] and the listing.
#[derive(Clone, Copy)]
struct Record<E> {
    tag: Tag,
    entity: Option<E>,
    partial: bool,
}

/// A listener of the bus as [`MessageBus::listeners`] lists it (GB7, B5).
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
/// | [`remove`](Self::remove), [`scoped`](Self::scoped), [`is_listening`](Self::is_listening) | O(log n) (O(log m) more for a managed listener); an entity's channel goes with its last listener |
/// | [`forget_entity`](Self::forget_entity) | O(k) in the entity's own channels and listeners |
/// | [`send`](Self::send), [`send_to`](Self::send_to), [`send_tag`](Self::send_tag) | O(1) per listener that hears it and per level of the tag and entity hierarchies |
/// | [`post`](Self::post), [`post_to`](Self::post_to) | O(1); [`deliver_posted`](Self::deliver_posted): O(1) per message |
/// | [`retained`](Self::retained) | O(1); [`clear_retained`](Self::clear_retained): O(log t) |
/// | `listen_managed`, `remove_managed` | O(log m) |
/// | [`listeners`](Self::listeners), [`clear`](Self::clear), [`posted`](Self::posted), `managed_bindings`, `managed_len` | O(n) (or O(t)) in what they walk |
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
            .field("listeners", &self.listeners())
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
    /// assert!(!bus.is_listening(first));
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

    #[track_caller]
    fn next_of<P: Clone + 'static, T: 'static>(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        priority: i32,
        value: impl Fn(Tag, P) -> T + 'static,
    ) -> NextBroadcast<T> {
        let (sender, next) = crate::next_broadcast::pair();
        let exact_tag = (!is_partial).then_some(tag);
        // The sender knows its subscription (and removes it) once it is added.
        let _subscribed = self.add_with(
            tag,
            entity,
            is_partial,
            priority,
            false,
            future(exact_tag, sender, value),
        );
        next
    }

    /// Adds the listener `make` builds once its handle (and a weak reference to its channel's
    /// list) is known: what every `listen*` and `next*` method comes to. A listener on a
    /// retained tag, or a partial one, hears the retained messages it matches at once, unless
    /// `replay` is false (futures wait for the next message).
    #[track_caller]
    fn add(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        priority: i32,
        make: impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E>,
    ) -> DelegateHandle {
        self.add_with(tag, entity, is_partial, priority, true, make)
    }

    #[track_caller]
    fn add_with(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        priority: i32,
        replay: bool,
        make: impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E>,
    ) -> DelegateHandle {
        let (handle, made) = self.add_quietly(tag, entity, is_partial, priority, make);
        // The last reference when the listener removed itself meanwhile (a one-shot listener
        // does, before its code runs): user code, guarded also while a panic of the replay
        // unwinds (R2).
        let made = Guarded::new(made);
        if replay && let Some(callable) = &*made {
            self.replay_to(tag, entity, is_partial, handle, callable);
        }
        Drops::drop_one(made.into_inner());
        handle
    }

    /// Adds a listener without the retained messages it should hear at once: the caller calls
    /// [`replay_to`](Self::replay_to) when it is ready (a managed listener, once its id is
    /// recorded, so a release its thunk causes meanwhile is not lost). Returns the handle and a
    /// clone of the callable `make` built, which the caller keeps while it replays (a one-shot
    /// listener removes itself from the list during that call).
    #[track_caller]
    fn add_quietly(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        priority: i32,
        make: impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E>,
    ) -> (DelegateHandle, Option<Callable<E>>) {
        let channel = match entity {
            None => self.channel_or_new(tag),
            Some(entity) => {
                self.any_entity.set(true);
                self.entity_channel_or_new(tag, entity)
            }
        };
        if is_partial {
            channel
                .partials
                .set(channel.partials.get().saturating_add(1));
            self.any_partial.set(true);
        }
        let mut made = None;
        let spec = Spec {
            priority,
            ..Spec::default()
        };
        let handle = channel.list.insert_with(spec, |handle, list| {
            let callable = make(handle, list);
            made = Some(Rc::clone(&callable));
            Shared::new(callable)
        });
        channel.newest.set(channel.newest.get().max(handle.id()));
        self.remember(
            handle,
            Record {
                tag,
                entity,
                partial: is_partial,
            },
        );
        (handle, made)
    }

    /// The retained messages a listener just added hears at once (GB6).
    fn replay_to(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        handle: DelegateHandle,
        callable: &Callable<E>,
    ) {
        if (tag.is_retained() || is_partial)
            && let Some(channel) = self.channel_of(tag, entity)
        {
            self.replay_retained(tag, entity, is_partial, &channel, handle, callable);
        }
    }

    fn remember(&self, handle: DelegateHandle, record: Record<E>) {
        let swept: Vec<(u64, Record<E>)> = {
            let mut records = self.records.borrow_mut();
            records.insert(handle.id(), record);
            // Sweep listeners removed by guards, unloads or their own one-shot call once the
            // table has doubled since the last sweep: O(1) amortized (rule N4).
            if records.len() < 2 * self.records_swept.get() + 64 {
                return;
            }
            crate::steps::add(records.len());
            records.iter().map(|(id, record)| (*id, *record)).collect()
        };
        // Asked with the records copied out: finding an entity's channel runs its id's `Hash`
        // and `PartialEq`, which may re-enter the bus (M13).
        let gone: Vec<u64> = swept
            .into_iter()
            .filter(|(id, record)| !self.is_listening_with(*id, record))
            .map(|(id, _)| id)
            .collect();
        let mut records = self.records.borrow_mut();
        for id in gone {
            records.remove(&id);
        }
        shrink(&mut records);
        self.records_swept.set(records.len());
    }

    fn is_listening_with(&self, id: u64, record: &Record<E>) -> bool {
        self.channel_of(record.tag, record.entity)
            .is_some_and(|channel| {
                channel
                    .list
                    .subscriber_matches(DelegateHandle::from_id(id), |_| true)
            })
    }

    /// A new listener hears the retained messages it matches (GB6): its tag's, and for a
    /// partial listener, those of every descendant, in tag order.
    fn replay_retained(
        &self,
        tag: Tag,
        entity: Option<E>,
        is_partial: bool,
        channel: &Channel<E>,
        handle: DelegateHandle,
        callable: &Callable<E>,
    ) {
        // Each clone guarded: a listener may clear the retained messages it hears, leaving the
        // clones waiting here their last references, dropped while a panic unwinds (R2).
        type Kept = Guarded<Rc<dyn Any>>;
        // The channels that may retain a message it hears: its tag's, and for a partial
        // listener its descendants' (a range of names in `retaining`), in tag order. O(log n + k)
        // in the tags registered, k the retained messages it hears (rule N4).
        let mut found: Vec<Rc<Channel<E>>> = if is_partial {
            let retaining = self.retaining.borrow();
            let below = retaining
                .range(tag.name()..)
                .take_while(|(name, _)| {
                    name.strip_prefix(tag.name())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                })
                .map(|(_, tag)| *tag);
            let tags: Vec<Tag> = below.collect();
            crate::steps::search(retaining.len());
            crate::steps::add(tags.len());
            drop(retaining);
            tags.into_iter()
                .filter_map(|tag| self.channel(tag))
                .collect()
        } else {
            self.channel(tag).into_iter().collect()
        };
        found.sort_by_key(|channel| channel.tag);
        let retained: Vec<(Tag, Option<E>, Kept)> = found
            .iter()
            .filter_map(|found| {
                let retained = found.retained.borrow();
                retained.as_ref().map(|(sent_to, payload)| {
                    (found.tag, *sent_to, Guarded::new(Rc::clone(payload)))
                })
            })
            .collect();
        for (sent_on, sent_to, payload) in retained {
            if entity.is_some() && sent_to != entity {
                continue;
            }
            // Removed by an earlier replay's code: it hears no more.
            if !channel.list.subscriber_matches(handle, |_| true) {
                break;
            }
            let value: &dyn Any = &**payload;
            let mut message = match value.downcast_ref::<script::ScriptRetained>() {
                // SAFETY: the bytes of a value of the type `ty` names, borrowed from `payload`,
                // which lives until after the call (see `ScriptRetained::read`).
                Some(bytes) => unsafe {
                    let (address, ty) = bytes.payload();
                    Message::with_type(sent_on, sent_to, address, ty)
                },
                None => Message::new_erased(sent_on, sent_to, value),
            };
            message.replayed = true;
            // Heard by this listener alone, whenever it was added.
            message.limit.set(u64::MAX);
            message.enter(tag, channel.newest.get());
            message.at_entity.set(entity);
            callable(&message);
            // The payload clone is the bus's: dropped here, guarded (R2).
            Drops::drop_one(payload.into_inner());
        }
    }

    /// Removes a listener; `false` if it was already gone (H2). An entity's channel goes with
    /// its last listener. Cost: O(log n) in the channel's listeners (O(log m) more, m managed
    /// listeners, for a managed one).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        // A managed listener (GB8) removed from Rust reaches the host's hook when this returns.
        let _operation = self.script_operation();
        self.mark_removed(handle.id());
        let record = self.records.borrow_mut().remove(&handle.id());
        let Some(record) = record else {
            return false;
        };
        // The entity's id hashed once (M13: user code, run with nothing borrowed).
        let hash = record
            .entity
            .map(|entity| (entity, self.entity_hasher.hash_one(entity)));
        let channel = match hash {
            None => self.channel(record.tag),
            Some((entity, hash)) => self.entity_channel(record.tag, entity, hash),
        };
        let Some(channel) = channel else {
            return false;
        };
        let removed = channel.list.remove(handle);
        // An entity's channel goes with its last listener (its `Drop`, if it is the last
        // reference, runs when `channel` does, guarded: R2).
        if let Some((_, hash)) = hash
            && channel.is_unused()
        {
            self.unlink_entity_channel(record.tag.id(), hash, &channel);
        }
        drop_user(channel);
        removed
    }

    /// A guard that removes the listener of `handle` when dropped (B1). A handle this bus did
    /// not make gives a guard that removes nothing. Cost: O(1), O(log m) for a managed one.
    pub fn scoped(&self, handle: DelegateHandle) -> ScopedSubscription {
        let record = self.records.borrow().get(&handle.id()).copied();
        // A managed listener's guard marks its removal (GB8's `Removed`, R4) on the way.
        let list = self.managed_remover(handle.id()).or_else(|| {
            record
                .and_then(|record| self.channel_of(record.tag, record.entity))
                .and_then(|channel| channel.list.weak_remover())
        });
        ScopedSubscription::new(handle, list)
    }

    /// Whether the listener of `handle` is still listening.
    pub fn is_listening(&self, handle: DelegateHandle) -> bool {
        let record = self.records.borrow().get(&handle.id()).copied();
        record.is_some_and(|record| self.is_listening_with(handle.id(), &record))
    }

    /// Every listener, by tag, then entity-less before per-entity, then dispatch order, with
    /// where it was made (GB7, B5). Allocates: for diagnostics.
    pub fn listeners(&self) -> Vec<ListenerInfo<E>> {
        let mut channels: Vec<(Tag, Option<E>, Rc<Channel<E>>)> = self
            .channels
            .borrow()
            .iter()
            .flatten()
            .map(|channel| (channel.tag, None, Rc::clone(channel)))
            .collect();
        channels.extend(self.entity_channels.borrow().values().flat_map(|bucket| {
            bucket
                .iter()
                .map(|(entity, channel)| (channel.tag, Some(*entity), Rc::clone(channel)))
        }));
        // By tag, entity-less first, then in the order each channel got its first listener.
        channels.sort_by_key(|(tag, entity, channel)| {
            let first = channel
                .list
                .subscriptions()
                .iter()
                .map(|subscription| subscription.handle.id())
                .min()
                .unwrap_or(0);
            (*tag, entity.is_some(), first)
        });
        let records = self.records.borrow();
        let mut listed = Vec::new();
        for (tag, entity, channel) in channels {
            for subscription in channel.list.subscriptions() {
                let partial = records
                    .get(&subscription.handle.id())
                    .is_some_and(|record| record.partial);
                listed.push(ListenerInfo {
                    tag,
                    entity,
                    partial,
                    subscription,
                });
            }
        }
        listed
    }

    /// Removes every listener of one entity (when the engine despawns it), and forgets its
    /// channels; returns how many listeners were removed. Cost: O(k) in the entity's own
    /// channels and listeners, whatever the number of entities.
    pub fn forget_entity(&self, entity: E) -> usize {
        // The id's `Hash` and `PartialEq` run with no map borrowed (M13): the channels with its
        // hash are copied out first, compared, and only then taken out of the map.
        let hash = self.entity_hasher.hash_one(entity);
        let candidates: Vec<(u32, E, Rc<Channel<E>>)> = {
            let tags = self.entity_tags.borrow();
            let channels = self.entity_channels.borrow();
            let tags = tags.get(&hash).map_or(&[][..], |tags| &tags[..]);
            crate::steps::add(1 + tags.len());
            tags.iter()
                .filter_map(|&tag| Some((tag, channels.get(&(tag, hash))?)))
                .flat_map(|(tag, bucket)| {
                    bucket
                        .iter()
                        .map(move |(owner, channel)| (tag, *owner, Rc::clone(channel)))
                })
                .collect()
        };
        let mut removed = Vec::new();
        let mut others = Vec::new();
        for (tag, owner, channel) in candidates {
            if owner == entity {
                removed.push((tag, channel));
            } else {
                others.push(channel);
            }
        }
        for (tag, channel) in &removed {
            self.unlink_entity_channel(*tag, hash, channel);
        }
        self.entity_changes.set(self.entity_changes.get() + 1);
        // A channel compared meanwhile may have been forgotten by the comparison's own code:
        // this was then its last reference (user code, guarded, R3).
        Drops::drop_each(others);
        let removed: Vec<Rc<Channel<E>>> =
            removed.into_iter().map(|(_, channel)| channel).collect();
        let operation = self.script_operation();
        let mut count = 0;
        // Every managed listener marked before the first clear runs user code (M13); the
        // records of the listeners go now (not at the next sweep).
        for channel in &removed {
            for subscription in channel.list.subscriptions() {
                let id = subscription.handle.id();
                if operation.is_some() {
                    self.mark_removed(id);
                }
                self.records.borrow_mut().remove(&id);
            }
            count += channel.list.len();
        }
        clear_channels(removed);
        count
    }

    // ---- sending ---------------------------------------------------------------------------

    /// Sends a message on `key`'s tag now (GB5): every matching listener hears it before this
    /// returns, in the order of GB3. Allocates nothing (a retained tag's first message stores
    /// it once, and so does a send nested in the delivery of one on its tag, whose message is
    /// held meanwhile). Sending from a listener nests.
    ///
    /// On a retained tag the message is kept before delivery starts (GB6): while it is
    /// delivered, [`retained`](Self::retained) gives it, and a listener added meanwhile hears it
    /// at its add (and not again from this send, M2). A listener's panic leaves it kept.
    #[inline]
    pub fn send<P: 'static>(&self, key: &TagKey<P>, payload: P) {
        let (tag, payload) = resolve(key, payload);
        self.deliver(tag, None, payload);
    }

    /// Sends a message addressed to `entity` now (GB4): it bubbles from `entity` up the entity
    /// hierarchy, then reaches the listeners of no particular entity, unless consumed.
    #[inline]
    pub fn send_to<P: 'static>(&self, key: &TagKey<P>, entity: E, payload: P) {
        let (tag, payload) = resolve(key, payload);
        self.deliver(tag, Some(entity), payload);
    }

    /// Sends on a tag found by name at run time (data files, scripts): the payload type is
    /// checked against the one declared with the tag (GB2).
    pub fn send_tag<P: 'static>(
        &self,
        tag: Tag,
        entity: Option<E>,
        payload: P,
    ) -> Result<(), WrongPayload> {
        if !tag.carries::<P>()
            && let Err(wrong) = tag.check_payload::<P>()
        {
            // Refused: the payload is the bus's to drop, guarded while the thread unwinds (R2).
            drop_user(payload);
            return Err(wrong);
        }
        self.deliver(tag, entity, payload);
        Ok(())
    }

    /// Delivers one message: the payload is held by the bus meanwhile (guarded, R2), then
    /// dropped; on a retained tag it is kept first ([`deliver_retained`](Self::deliver_retained)).
    #[inline]
    fn deliver<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
        if tag.is_retained() {
            return self.deliver_retained(tag, entity, payload);
        }
        let held = Guarded::new(payload);
        let message = Message::new(tag, entity, &*held);
        self.dispatch(&message);
        if !message.heard.get() {
            unheard(tag);
        }
    }

    /// Delivers a message on a retained tag (GB6): kept as the tag's last message *before*
    /// delivery starts, as a behaviour subject stores before it emits, so that during the send
    /// [`retained`](Self::retained) reads it and a listener added meanwhile (which does not hear
    /// the send, M2) is replayed this message at its add, never the one it replaces. The
    /// listeners hear it from the kept value, through a clone of its `Rc` held meanwhile
    /// (no allocation: a send nested in a listener keeps its own message beside it). The
    /// message it replaces is dropped once delivery is over, as before.
    #[inline(never)]
    fn deliver_retained<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
        let (kept, old) = self.retain_keeping(tag, entity, payload);
        // Both user values, guarded while a listener's panic unwinds (R2): a listener may clear
        // the retained message, leaving `kept` its last reference.
        let (kept, old) = (Guarded::new(kept), Guarded::new(old));
        let Some(value) = kept.downcast_ref::<P>() else {
            unreachable!("the message just kept is a `P`");
        };
        let message = Message::new(tag, entity, value);
        self.dispatch(&message);
        if !message.heard.get() {
            unheard(tag);
        }
        let (in_place, whole) = old.into_inner();
        let mut drops = Drops::default();
        drops.drop(in_place);
        drops.drop(whole);
        drops.drop(kept.into_inner());
        drops.finish();
    }

    /// Walks the listeners of the message, GB4 then GB3; stops once it is consumed.
    #[inline]
    fn dispatch(&self, message: &Message<'_, E>) {
        if let Some(entity) = message.entity
            && self.any_entity.get()
            && self.bubble(message, entity)
        {
            return;
        }
        message.at_entity.set(None);
        self.walk_tags(message, |tag| self.channel(tag));
    }

    /// Up the entity hierarchy: whether the message was consumed on the way.
    #[cold]
    #[inline(never)]
    fn bubble(&self, message: &Message<'_, E>, entity: E) -> bool {
        let mut current = Some(entity);
        let mut steps = 0;
        let mut climb = Climb::new(entity);
        while let Some(at) = current {
            message.at_entity.set(Some(at));
            // Hashed once for every tag the message walks at this entity (M13: user code, run
            // with nothing borrowed).
            let hash = self.entity_hasher.hash_one(at);
            if self.walk_tags(message, |tag| self.entity_channel(tag, at, hash)) {
                return true;
            }
            steps += 1;
            if steps == MAX_ENTITY_DEPTH {
                tracing::warn!(
                    tag = %message.tag,
                    "lumina: a message climbed {MAX_ENTITY_DEPTH} entities up the entity \
                     hierarchy: it goes no further"
                );
                break;
            }
            // The relation is user code: called through a clone, so it may replace itself; the
            // clone is then its last reference, held under the guard (R2).
            let parents = self.parents.relation.borrow().clone();
            current = parents.and_then(|parent| Guarded::hold_rc(parent, |parent| parent(at)));
            if let Some(next) = current
                && climb.revisits(next)
            {
                cycle(message.tag, steps);
                break;
            }
        }
        false
    }

    /// The message's tag, then its ancestors that have partial listeners: whether a listener
    /// consumed it.
    #[inline(always)]
    fn walk_tags(
        &self,
        message: &Message<'_, E>,
        lookup: impl Fn(Tag) -> Option<Rc<Channel<E>>>,
    ) -> bool {
        let mut tag = message.tag;
        if let Some(channel) = lookup(tag)
            && self.walk_channel(message, tag, &channel)
        {
            return true;
        }
        if !self.any_partial.get() {
            return false;
        }
        while let Some(parent) = tag.parent() {
            tag = parent;
            if let Some(channel) = lookup(tag)
                && channel.partials.get() > 0
                && self.walk_channel(message, tag, &channel)
            {
                return true;
            }
        }
        false
    }

    /// The listeners of one channel: whether one consumed the message. The loop reads nothing
    /// after each call: a listener that consumes asks it to stop ([`Message::consume`]).
    #[inline(always)]
    fn walk_channel(&self, message: &Message<'_, E>, tag: Tag, channel: &Channel<E>) -> bool {
        message.enter(tag, channel.newest.get());
        let _span = crate::trace::send(tag);
        message.walking.set(channel);
        let _walking = Walking(message);
        channel
            .list
            .broadcast_until_with(message, |listener, message| {
                listener(message);
                false
            });
        message.consumed.get()
    }

    fn retain<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
        let (kept, (in_place, whole)) = self.retain_keeping(tag, entity, payload);
        let mut drops = Drops::default();
        drops.drop(in_place);
        drops.drop(whole);
        drops.drop(kept);
        drops.finish();
    }

    /// Keeps `payload` as the last message of `tag` (GB6); returns a clone of the kept `Rc`
    /// and the message it replaces, which the caller drops (user data: outside the borrow,
    /// guarded).
    fn retain_keeping<P: 'static>(
        &self,
        tag: Tag,
        entity: Option<E>,
        payload: P,
    ) -> (Rc<dyn Any>, Replaced<P, E>) {
        let channel = self.channel_or_new(tag);
        // Whose the new message is, from this send's own code (its `Any` vtable lies where this
        // send was instantiated): not from the slot's, which the first sender's made and an
        // in-place reuse keeps (MB6: the engine's message replacing a module's is the engine's).
        let code = track::code_of::<dyn Any>(&payload);
        let mut slot = channel.retained.borrow_mut();
        // Reused in place when no replay holds the last message (amortized zero allocation).
        if let Some((sent_to, shared)) = slot.as_mut()
            && let Some(value) = Rc::get_mut(shared).and_then(|value| value.downcast_mut::<P>())
        {
            *sent_to = entity;
            let old = std::mem::replace(value, payload);
            let kept = Rc::clone(shared);
            drop(slot);
            // The slot holds a new value: its record is made anew (MB6: the module's value
            // replacing the engine's is the module's, and the engine's replacing the module's
            // is not).
            channel.track(RETAINED, code);
            return (kept, (Some(old), None));
        }
        let kept = Rc::new(payload) as Rc<dyn Any>;
        let old = slot.replace((entity, Rc::clone(&kept)));
        drop(slot);
        if old.is_none() {
            self.note_retained(tag);
        }
        channel.track(RETAINED, code);
        (kept, (None, old))
    }

    /// The retained message of `key`'s tag, if any (GB6). While the engine holds the `Rc` this
    /// returns, a game module's unload cannot drop it: the module counts as still referred to
    /// until it is dropped (MB6).
    ///
    /// A retained message a script sent (GB8) is kept as its bytes; this turns it into a `P`
    /// first, so the `Rc` always holds a `P`.
    pub fn retained<P: 'static>(&self, key: &TagKey<P>) -> Option<Rc<dyn Any>> {
        let channel = self.channel(key.tag())?;
        let typed = {
            let slot = channel.retained.borrow();
            let (sent_to, payload) = slot.as_ref()?;
            match payload.downcast_ref::<script::ScriptRetained>() {
                None => return Some(Rc::clone(payload)),
                Some(bytes) => (*sent_to, bytes.read::<P>()?),
            }
        };
        // Kept typed from now on, as a Rust send keeps it (recorded if its code is a module's).
        self.retain(key.tag(), typed.0, typed.1);
        channel
            .retained
            .borrow()
            .as_ref()
            .map(|(_, payload)| Rc::clone(payload))
    }

    /// Forgets the retained message of `key`'s tag; whether there was one.
    pub fn clear_retained<P: 'static>(&self, key: &TagKey<P>) -> bool {
        let old = self.channel(key.tag()).and_then(|channel| {
            channel.track(RETAINED, None);
            channel.retained.borrow_mut().take()
        });
        self.retaining.borrow_mut().remove(key.tag().name());
        let had = old.is_some();
        Drops::drop_one(old);
        had
    }

    // ---- posting ---------------------------------------------------------------------------

    /// Queues a message on `key`'s tag for the next [`deliver_posted`](Self::deliver_posted)
    /// (GB5). The payload is moved in now; the queues keep their storage, so once they have
    /// grown a post allocates nothing.
    pub fn post<P: 'static>(&self, key: &TagKey<P>, payload: P) {
        let (tag, payload) = resolve(key, payload);
        self.enqueue(tag, None, payload);
    }

    /// [`post`](Self::post), addressed to `entity`.
    pub fn post_to<P: 'static>(&self, key: &TagKey<P>, entity: E, payload: P) {
        let (tag, payload) = resolve(key, payload);
        self.enqueue(tag, Some(entity), payload);
    }

    fn enqueue<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
        let channel = self.channel_or_new(tag);
        let queue = channel.queue.borrow().clone();
        let queue = queue.unwrap_or_else(|| new_queue::<P, E>(&channel));
        let Some(typed) = queue.as_any().downcast_ref::<TypedQueue<P, E>>() else {
            unreachable!("a tag's posted queue holds the tag's one payload type (GB2)");
        };
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        // Posted while a game module's code runs, into a queue that is not the module's: the
        // message is the module's (MB6). One atomic load while no module is loaded.
        let record = track::running_module()
            .filter(|&module| !track::is_recorded_for(channel.tracked.get()[QUEUE], module))
            .map_or(0, |_| {
                let handle = DelegateHandle::new_unique();
                let _ = track::track_running(track::ListAccess::of(&channel), handle);
                handle.id()
            });
        typed
            .items
            .borrow_mut()
            .push_back((seq, entity, payload, record));
        self.order.borrow_mut().push_back((seq, tag));
    }

    /// How many posted messages wait for delivery (those other threads posted not counted until
    /// a delivery point moves them in).
    pub fn posted(&self) -> usize {
        // Counting runs no user code, so nothing can re-enter the bus meanwhile: no snapshot of
        // the queues (and no allocation) is needed.
        self.channels
            .borrow()
            .iter()
            .flatten()
            .filter_map(|channel| channel.queue.borrow().as_ref().map(|queue| queue.len()))
            .sum()
    }

    /// The delivery point the engine calls once a frame (GB5): moves in what other threads
    /// posted (in post order per thread), then delivers every message posted before this call,
    /// in post order, each exactly once. Messages posted meanwhile wait for the next call.
    /// Returns how many it delivered. If a listener panics, the message it was hearing counts as
    /// delivered and the rest stay queued.
    pub fn deliver_posted(&self) -> usize {
        self.drain_inbox();
        let limit = self.next_seq.get();
        let mut delivered = 0;
        loop {
            let next = {
                let mut order = self.order.borrow_mut();
                match order.front() {
                    Some(&(seq, tag)) if seq < limit => {
                        order.pop_front();
                        Some((seq, tag))
                    }
                    _ => None,
                }
            };
            let Some((seq, tag)) = next else { break };
            let queue = self
                .channel(tag)
                .and_then(|channel| channel.queue.borrow().clone());
            if let Some(queue) = queue
                && queue.deliver_front(self, tag, seq)
            {
                delivered += 1;
            }
        }
        delivered
    }

    /// A handle other threads post through (GB5): `Send`, `Clone`, and dropping the bus makes
    /// its posts fail instead of queuing.
    pub fn poster(&self) -> Poster<E>
    where
        E: Send,
    {
        Poster::new(Arc::clone(&self.inbox))
    }

    fn drain_inbox(&self) {
        if !self.inbox.has_items() {
            return;
        }
        let mut spare = self.spare.borrow_mut();
        self.inbox.drain(self, &mut spare);
    }

    // ---- channels --------------------------------------------------------------------------

    /// Indexes `tag` as one whose channel retains a message (its first, or its first since
    /// [`clear_retained`](Self::clear_retained)). O(log n) in the tags retaining.
    fn note_retained(&self, tag: Tag) {
        self.retaining.borrow_mut().insert(tag.name(), tag);
    }

    #[inline(always)]
    fn channel(&self, tag: Tag) -> Option<Rc<Channel<E>>> {
        self.channels
            .borrow()
            .get(tag.id() as usize)
            .and_then(Option::clone)
    }

    fn channel_of(&self, tag: Tag, entity: Option<E>) -> Option<Rc<Channel<E>>> {
        match entity {
            None => self.channel(tag),
            Some(entity) => self.entity_channel(tag, entity, self.entity_hasher.hash_one(entity)),
        }
    }

    /// The channel of `tag` for `entity`, whose hash is `hash`. The id's `PartialEq` is user
    /// code: each candidate is copied out of the map, and compared once the borrow is over
    /// (M13). One candidate, unless hashes collide.
    fn entity_channel(&self, tag: Tag, entity: E, hash: u64) -> Option<Rc<Channel<E>>> {
        let mut index = 0;
        loop {
            let (owner, channel) = {
                let channels = self.entity_channels.borrow();
                let (owner, channel) = channels.get(&(tag.id(), hash))?.get(index)?;
                (*owner, Rc::clone(channel))
            };
            if owner == entity {
                return Some(channel);
            }
            // The comparison's code may have forgotten the channel: then this is its last
            // reference (user code, guarded, R2).
            drop_user(channel);
            index += 1;
        }
    }

    /// The channel of `tag` for `entity`, made if it has none. Adds one only if no user code run
    /// by the lookup (the id's `Hash` or `PartialEq`) changed the entities' channels meanwhile;
    /// else it looks again.
    fn entity_channel_or_new(&self, tag: Tag, entity: E) -> Rc<Channel<E>> {
        let hash = self.entity_hasher.hash_one(entity);
        loop {
            let changes = self.entity_changes.get();
            if let Some(channel) = self.entity_channel(tag, entity, hash) {
                return channel;
            }
            if changes == self.entity_changes.get() {
                self.sweep_entity_channels();
                let channel = Rc::new(Channel::new(tag));
                let mut bucket = self.entity_channels.borrow_mut();
                let bucket = bucket.entry((tag.id(), hash)).or_default();
                if bucket.is_empty() {
                    let mut tags = self.entity_tags.borrow_mut();
                    tags.entry(hash).or_default().push(tag.id());
                }
                bucket.push((entity, Rc::clone(&channel)));
                self.entity_changes.set(self.entity_changes.get() + 1);
                return channel;
            }
        }
    }

    /// Takes `channel` (of tag id `tag`, entity hash `hash`) out of the entity channels and
    /// their index. O(1): no user code runs (the key is hashed already, the channel compared by
    /// address).
    fn unlink_entity_channel(&self, tag: u32, hash: u64, channel: &Rc<Channel<E>>) {
        let mut channels = self.entity_channels.borrow_mut();
        let Some(bucket) = channels.get_mut(&(tag, hash)) else {
            return;
        };
        let before = bucket.len();
        bucket.retain(|(_, kept)| !Rc::ptr_eq(kept, channel));
        if bucket.len() == before {
            return;
        }
        self.entity_changes.set(self.entity_changes.get() + 1);
        if !bucket.is_empty() {
            return;
        }
        channels.remove(&(tag, hash));
        shrink(&mut channels);
        let mut tags = self.entity_tags.borrow_mut();
        if let Some(of_entity) = tags.get_mut(&hash) {
            of_entity.retain(|kept| *kept != tag);
            if of_entity.is_empty() {
                tags.remove(&hash);
                shrink(&mut tags);
            }
        }
    }

    /// Drops the entity channels left with no listener by a removal the bus did not see (a
    /// one-shot that fired, a guard, a game module's unload), once the channels have doubled
    /// since the last sweep: O(1) amortized (rule N4), and an entity's channels do not outlive
    /// its listeners by more than that.
    fn sweep_entity_channels(&self) {
        let count = self.entity_channels.borrow().len();
        if count < 2 * self.entity_swept.get() + 64 {
            return;
        }
        crate::steps::add(count);
        let empty: Vec<(u32, u64, Rc<Channel<E>>)> = self
            .entity_channels
            .borrow()
            .iter()
            .flat_map(|(&(tag, hash), bucket)| {
                bucket
                    .iter()
                    .filter(|(_, channel)| channel.is_unused())
                    .map(move |(_, channel)| (tag, hash, Rc::clone(channel)))
            })
            .collect();
        for (tag, hash, channel) in &empty {
            self.unlink_entity_channel(*tag, *hash, channel);
        }
        self.entity_swept.set(self.entity_channels.borrow().len());
        Drops::drop_each(empty);
    }

    fn channel_or_new(&self, tag: Tag) -> Rc<Channel<E>> {
        let mut channels = self.channels.borrow_mut();
        let index = tag.id() as usize;
        if channels.len() <= index {
            channels.resize_with(index + 1, || None);
        }
        Rc::clone(channels[index].get_or_insert_with(|| Rc::new(Channel::new(tag))))
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

/// Clears `channels` as one operation (M13, what [`MessageBus::clear`] and
/// [`MessageBus::forget_entity`] do): every list is emptied, or while it is walked its listeners
/// marked, before the first listener's `Drop` runs, so that code reaches none of the listeners
/// this removes and a listener it adds stays (M6). The listeners are dropped in the order they
/// were added (those of a channel being walked when that walk ends, M4). Every `Drop` runs even
/// if one panics; the first panic resumes at the end (R3).
fn clear_channels<E: EntityId>(channels: Vec<Rc<Channel<E>>>) {
    let cleared = Cleared::gather(
        channels
            .iter()
            .map(|channel| channel.list.take_all(|_, _, _| {})),
    );
    let mut drops = Drops::default();
    cleared.drop_into(&mut drops);
    for channel in channels {
        drops.drop(channel);
    }
    drops.finish();
}

/// The posted queue of `channel`'s tag, made by its first post; recorded with the module loader
/// when its code is a game module's (R5).
#[cold]
fn new_queue<P: 'static, E: EntityId>(channel: &Rc<Channel<E>>) -> Rc<dyn Posted<E>> {
    let queue: Rc<dyn Posted<E>> = Rc::new(TypedQueue::<P, E> {
        items: RefCell::new(VecDeque::new()),
    });
    *channel.queue.borrow_mut() = Some(Rc::clone(&queue));
    channel.track(QUEUE, track::code_of(&*queue));
    queue
}

/// Clears the channel a message walks ([`Message::walking`]) when its walk ends or unwinds.
struct Walking<'m, 'a, E: EntityId>(&'m Message<'a, E>);

impl<E: EntityId> Drop for Walking<'_, '_, E> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.walking.set(std::ptr::null());
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

/// An addressed message's climb reached an entity it went through already (GB4).
#[cold]
#[inline(never)]
fn cycle(tag: Tag, steps: usize) {
    tracing::warn!(
        tag = %tag,
        "lumina: a message on `{tag}` reached an entity it had climbed through already, after \
         {steps} entities: the entity parent relation has a cycle; it goes no further"
    );
}

/// A message nobody heard: visible at debug level (GB7).
#[cold]
#[inline(never)]
fn unheard(tag: Tag) {
    tracing::debug!(tag = %tag, "lumina: a message on `{tag}` was sent and nobody heard it");
}

/// Whether the listener `id` hears `message` at all: it was added before the message started
/// (M2), and, for an exact listener, the message's own tag is being walked.
#[inline(always)]
fn hears<E: EntityId>(id: u64, exact_tag: Option<Tag>, message: &Message<'_, E>) -> bool {
    id < message.limit.get() && exact_tag.is_none_or(|tag| message.tag == tag)
}

/// The callable of an exact listener: runs only while the message's own tag is walked, and
/// only for a payload of the type declared with the tag, which is `P`.
fn exact<P: 'static, E: EntityId>(
    tag: Tag,
    listener: impl Fn(&P, &Message<'_, E>) + 'static,
) -> impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E> {
    // `tag` comes from a `TagKey<P>`, whose `tag()` declares `P` with it or panics (GB2).
    assert!(
        tag.carries::<P>(),
        "lumina: an exact listener's payload type is the one declared with its tag"
    );
    let key = tag.addr();
    // Captured too, so the common path compares the gate with `key` in memory (LLVM keeps a
    // loaded `key` in a register for `key | 1` otherwise: one instruction per call, GB9).
    let late = key | 1;
    move |handle, _| {
        let id = handle.id();
        Rc::new(move |message: &Message<'_, E>| {
            // One comparison for the tag, the payload type and the M2 limit (GB9): `gate` is
            // `key` only while this tag's own listeners run a message whose payload has the type
            // declared with it, from a channel whose listeners were all added before the
            // message started; `key | 1` when some may have been added since (`Message::enter`).
            let gate = message.gate.get();
            if gate != key && (gate != late || id >= message.limit.get()) {
                return;
            }
            // SAFETY: `gate` is `key` or `key | 1`, which means (`Message::enter`) that
            // `payload_type` is the `TypeId` declared with `tag` (`key` is its address, which no
            // other tag has), and that declaration is `P` (asserted above; a tag's payload type
            // is set once and never changes). `payload_type` is the `TypeId` of the value
            // `payload` points at (see `Message::payload`), so it is a `P`.
            let payload = unsafe { message.payload_unchecked::<P>() };
            message.heard.set(true);
            listener(payload, message);
        })
    }
}

/// The callable of a partial listener.
fn partial<E: EntityId>(
    listener: impl Fn(&Message<'_, E>) + 'static,
) -> impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E> {
    move |handle, _| {
        let id = handle.id();
        Rc::new(move |message: &Message<'_, E>| {
            if !hears(id, None, message) {
                return;
            }
            message.heard.set(true);
            listener(message);
        })
    }
}

/// The callable of a one-shot listener (X3): once a message it hears reaches it, it removes its
/// own subscription before the user's code runs, so no send nested in that call (or later) runs
/// it again and its handle no longer names anything; the list drops it after the call (M4).
/// `exact_tag` filters like [`exact`]; `typed` says whether the message's payload is the one the
/// listener takes (checked before the claim, so a message it would not hear leaves it waiting).
fn once<E: EntityId>(
    exact_tag: Option<Tag>,
    typed: impl Fn(&Message<'_, E>) -> bool + 'static,
    listener: impl Fn(&Message<'_, E>) + 'static,
) -> impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E> {
    move |handle, list| {
        let id = handle.id();
        Rc::new(move |message: &Message<'_, E>| {
            if !hears(id, exact_tag, message) || !typed(message) {
                return;
            }
            // Claimed before any user code: a list removal runs none (this callable is running,
            // so the list keeps it until the call is over, M4).
            if !list
                .upgrade()
                .is_some_and(|list| list.remove_handle(handle))
            {
                return;
            }
            message.heard.set(true);
            listener(message);
        })
    }
}

/// [`once`] for an exact listener of payload `P`.
fn once_exact<P: 'static, E: EntityId>(
    tag: Tag,
    listener: impl Fn(&P, &Message<'_, E>) + 'static,
) -> impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E> {
    once(
        Some(tag),
        |message: &Message<'_, E>| message.payload::<P>().is_some(),
        move |message: &Message<'_, E>| {
            if let Some(payload) = message.payload::<P>() {
                listener(payload, message);
            }
        },
    )
}

/// The callable of a future's listener (X5): hears like [`once`] and hands a clone of the
/// payload (with the message's tag, for a partial future) to the future's sender, which settles
/// the future, removes the subscription and wakes the task. The clone is user code and may send
/// again: a nested send reaching the still-subscribed listener resolves the future first (the
/// outer value is then dropped), as for the delegates' `next()`.
fn future<P: Clone + 'static, T: 'static, E: EntityId>(
    exact_tag: Option<Tag>,
    sender: NextSender<T>,
    value: impl Fn(Tag, P) -> T + 'static,
) -> impl FnOnce(DelegateHandle, Weak<dyn RemoveByHandle>) -> Callable<E> {
    move |handle, list| {
        sender.attach(handle, list);
        let id = handle.id();
        Rc::new(move |message: &Message<'_, E>| {
            if !hears(id, exact_tag, message) {
                return;
            }
            if let Some(payload) = message.payload::<P>() {
                message.heard.set(true);
                sender.send(value(message.tag, payload.clone()));
            }
        })
    }
}

impl<P: 'static> From<&TagKey<P>> for Tag {
    fn from(key: &TagKey<P>) -> Tag {
        key.tag()
    }
}

#[cfg(test)]
mod tests {
    //! The module loader's functions for a channel's records, called as the loader calls them
    //! (a loaded module's library cannot be had under Miri): R5.

    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    /// A payload that counts its drops and, when `again` is set, drops the bus that holds it
    /// from its own `Drop` (user code that frees the channel under the loader).
    struct Loot {
        again: RefCell<Option<Rc<MessageBus<u32>>>>,
    }

    impl Drop for Loot {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
            drop(self.again.borrow_mut().take());
        }
    }

    static LOOT: TagKey<Loot> = TagKey::new("BusUnit.Loot", true);
    static NOTE: TagKey<Loot> = TagKey::new("BusUnit.Note", false);

    #[test]
    fn r5_a_channels_module_records_drop_its_retained_and_posted_values_and_keep_it_alive() {
        let bus = Rc::new(MessageBus::<u32>::new());
        bus.send(
            &LOOT,
            Loot {
                again: RefCell::new(None),
            },
        );
        bus.post(
            &NOTE,
            Loot {
                again: RefCell::new(None),
            },
        );
        let retained = bus.channel(LOOT.tag()).unwrap();
        let queued = bus.channel(NOTE.tag()).unwrap();
        // As `Channel::track` records them when the code is a loaded module's.
        retained.tracked.set([11, 0]);
        queued.tracked.set([0, 12]);
        // The retained message is lent out while a replay holds it: busy.
        let lent = bus.retained(&LOOT).unwrap();
        // SAFETY: `Rc::as_ptr` of live channels of this thread.
        assert!(unsafe { track::ListAccess::of(&retained).busy() });
        drop(lent);
        // SAFETY: as above.
        assert!(!unsafe { track::ListAccess::of(&retained).busy() });
        let before = DROPPED.load(Ordering::SeqCst);
        // SAFETY: as above.
        unsafe {
            assert!(!track::ListAccess::of(&retained).remove(DelegateHandle::from_id(12)));
            assert!(track::ListAccess::of(&queued).remove(DelegateHandle::from_id(12)));
        }
        assert_eq!(DROPPED.load(Ordering::SeqCst), before + 1);
        assert_eq!(bus.posted(), 0);
        assert_eq!(
            bus.deliver_posted(),
            0,
            "its place in the post order is skipped"
        );
        // The retained message drops the last strong reference to the bus from its `Drop`:
        // the loader's own reference keeps the channel alive meanwhile.
        *bus.retained(&LOOT)
            .unwrap()
            .downcast_ref::<Loot>()
            .unwrap()
            .again
            .borrow_mut() = Some(Rc::clone(&bus));
        drop(bus);
        let channel = track::ListAccess::of(&retained);
        drop(queued);
        drop(retained);
        // SAFETY: the channel is alive: the bus it belongs to is kept alive by the retained
        // message, which holds the last `Rc` of the bus.
        assert!(unsafe { channel.remove(DelegateHandle::from_id(11)) });
        assert_eq!(DROPPED.load(Ordering::SeqCst), before + 2);
    }

    #[test]
    fn r5_the_parent_relations_module_record_drops_it_and_messages_stop_bubbling() {
        struct Capture(Rc<Cell<u32>>);
        impl Drop for Capture {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let bus = MessageBus::<u32>::new();
        let dropped = Rc::new(Cell::new(0));
        let capture = Capture(Rc::clone(&dropped));
        bus.set_entity_parents(move |entity| {
            let _ = &capture;
            (entity == 1).then_some(2)
        });
        let heard = Rc::new(Cell::new(0));
        let sink = Rc::clone(&heard);
        static ORDER: TagKey<u32> = TagKey::new("BusUnit.Order", false);
        let _squad = bus
            .subscribe()
            .entity(2)
            .listen(&ORDER, move |_, _| sink.set(sink.get() + 1));
        bus.send_to(&ORDER, 1, 7);
        assert_eq!(heard.get(), 1);
        // As `Parents::track` records it when the code is a loaded module's.
        bus.parents.tracked.set(21);
        let parents = track::ListAccess::of(&bus.parents);
        // SAFETY: `Rc::as_ptr` of the bus's live relation block, on its thread.
        unsafe {
            assert!(!parents.busy());
            assert!(!parents.remove(DelegateHandle::from_id(22)));
            assert!(parents.remove(DelegateHandle::from_id(21)));
        }
        assert_eq!(dropped.get(), 1);
        bus.send_to(&ORDER, 1, 8);
        assert_eq!(
            heard.get(),
            1,
            "no relation: the message stops at its entity"
        );
    }

    /// A payload other threads post.
    struct Note;

    static NOTES_DROPPED: AtomicUsize = AtomicUsize::new(0);

    impl Drop for Note {
        fn drop(&mut self) {
            NOTES_DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    static POSTED: TagKey<Note> = TagKey::new("BusUnit.Posted", false);

    #[test]
    fn r5_an_inbox_sweep_drops_only_what_the_unloading_module_made() {
        let bus = MessageBus::<u32>::new();
        let poster = bus.poster();
        poster.post(&POSTED, Note).unwrap();
        let inbox = &*bus.inbox;
        assert_eq!(inbox.sweep_where(|_| false), 0);
        assert_eq!(NOTES_DROPPED.load(Ordering::SeqCst), 0);
        assert_eq!(inbox.sweep_where(|_| true), 1);
        assert_eq!(NOTES_DROPPED.load(Ordering::SeqCst), 1);
        assert_eq!(bus.deliver_posted(), 0);
    }
}
