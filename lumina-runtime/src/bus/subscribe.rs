//! [`BusSubscribe`]: the bus's listeners with options, in the one builder shape of rule A1.
//!
//! A plain listener reads as it always did: `bus.listen(&TAG, f)`. A listener with options
//! starts with [`MessageBus::subscribe`], takes the options one method each
//! ([`priority`](BusSubscribe::priority), [`once`](BusSubscribe::once),
//! [`partial`](BusSubscribe::partial), [`entity`](BusSubscribe::entity)), and finishes with the
//! bus's verb: [`listen`](BusSubscribe::listen) for a listener, [`next`](BusSubscribe::next) for
//! the future of the next message (X5). The callable follows the mode: an exact listener takes
//! `(&payload, &message)`, a partial one (after `.partial()`) the message only.
//!
//! ```
//! use lumina::bus::MessageBus;
//! use lumina::gameplay_tags;
//! use std::cell::RefCell;
//! use std::rc::Rc;
//!
//! gameplay_tags! {
//!     pub mod tags {
//!         Combat {
//!             Hit: u32,
//!         },
//!     }
//! }
//!
//! let bus: MessageBus<u32> = MessageBus::new();
//! let log = Rc::new(RefCell::new(Vec::new()));
//! let (plain, first) = (Rc::clone(&log), Rc::clone(&log));
//! let _ = bus.listen(&tags::COMBAT_HIT, move |hit, _| plain.borrow_mut().push(("plain", *hit)));
//! // Every `Combat.*` message addressed to entity 7, before the priority-0 listeners, once.
//! let _ = bus
//!     .subscribe()
//!     .priority(10)
//!     .once()
//!     .partial()
//!     .entity(7)
//!     .listen(&tags::COMBAT, move |message| {
//!         first.borrow_mut().push(("squad", *message.get(&tags::COMBAT_HIT).unwrap()))
//!     });
//! bus.send_to(&tags::COMBAT_HIT, 7, 1);
//! bus.send_to(&tags::COMBAT_HIT, 7, 2);
//! assert_eq!(*log.borrow(), [("squad", 1), ("plain", 1), ("plain", 2)]);
//! ```
//!
//! The builder is the bus's address, the priority, the one-shot flag and the entity, on the
//! stack; every method is `#[inline]`, and a finish costs what the listener's plain form costs.

use std::fmt;
use std::marker::PhantomData;

use super::{
    EntityId, Message, MessageBus, Tag, TagKey, exact, once, once_exact, partial, resolve,
};
use crate::handle::DelegateHandle;
use crate::next_broadcast::NextBroadcast;

/// The mode of a bus builder whose listener hears its tag exactly, with its payload typed (the
/// default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exact {}

/// The mode of a bus builder after [`partial`](BusSubscribe::partial): the listener hears its
/// tag and every descendant, and is handed the [`Message`] only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partial {}

/// The addressing of a bus builder whose listener hears messages whatever entity they are
/// addressed to (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnyEntity {}

/// The addressing of a bus builder after [`entity`](BusSubscribe::entity): the listener hears
/// only messages addressed to that entity or bubbling up through it (GB4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneEntity {}

mod sealed {
    /// Keeps the bus builder's markers unimplementable outside the crate.
    pub trait Sealed {}
    impl Sealed for super::Exact {}
    impl Sealed for super::Partial {}
    impl Sealed for super::AnyEntity {}
    impl Sealed for super::OneEntity {}
}

/// Not public API; used by the bus builder: the bound of [`partial`](BusSubscribe::partial), so
/// that saying it twice is one error in our words (A1).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this listener is partial already",
    label = "`.partial()` is said once",
    note = "remove the second `.partial()`"
)]
pub trait NotPartial: sealed::Sealed {}

impl NotPartial for Exact {}

/// Not public API; used by the bus builder: the bound of [`entity`](BusSubscribe::entity), so
/// that naming a second entity is one error in our words (A1): a listener hears one entity.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this listener hears one entity already",
    label = "a listener hears the messages of one entity at most",
    note = "keep one `.entity(..)`; to hear several entities, make one listener each (copy the builder before `.entity(..)`)"
)]
pub trait NotAddressed: sealed::Sealed {}

impl NotAddressed for AnyEntity {}

/// A bus listener being made (A1): the bus and the options so far, in mode `M` ([`Exact`] or
/// [`Partial`]) and addressing `A` ([`AnyEntity`] or [`OneEntity`]). Made by
/// [`MessageBus::subscribe`]; finished by [`listen`](Self::listen), which returns the handle
/// (see [`remove`](MessageBus::remove)), or by [`next`](Self::next), which returns the future
/// of the next message. Any option combines with any other; `.partial()` and `.entity(..)` are
/// said once each.
///
/// Cost: building is free (a few words on the stack, no allocation); the finish costs what the
/// plain form costs (N4).
#[must_use = "a listener is made only by a finish, `listen` or `next`: nothing listens yet"]
pub struct BusSubscribe<'a, E: EntityId, M = Exact, A = AnyEntity> {
    bus: &'a MessageBus<E>,
    priority: i32,
    once: bool,
    entity: Option<E>,
    mode: PhantomData<fn() -> (M, A)>,
}

impl<E: EntityId, M, A> Clone for BusSubscribe<'_, E, M, A> {
    fn clone(&self) -> Self {
        *self
    }
}

/// A builder is a few words: copy it to make several listeners with the same options.
impl<E: EntityId, M, A> Copy for BusSubscribe<'_, E, M, A> {}

impl<E: EntityId, M, A> fmt::Debug for BusSubscribe<'_, E, M, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BusSubscribe")
            .field("priority", &self.priority)
            .field("once", &self.once)
            .field("entity", &self.entity)
            .field("mode", &std::any::type_name::<M>())
            .finish()
    }
}

impl<'a, E: EntityId> BusSubscribe<'a, E> {
    /// A builder for `bus` with no options: exact, priority 0, every message, any entity.
    #[inline]
    pub(super) fn new(bus: &'a MessageBus<E>) -> Self {
        BusSubscribe {
            bus,
            priority: 0,
            once: false,
            entity: None,
            mode: PhantomData,
        }
    }
}

impl<'a, E: EntityId, M, A> BusSubscribe<'a, E, M, A> {
    /// Runs before every listener of its tag (and entity) of a lower `priority`: higher
    /// priorities run first, equal ones in the order added; the plain form is priority 0 (GB3).
    /// Cost: none.
    #[inline]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Hears one message only (X3): removed right before its call starts, so a send nested in
    /// that call never runs it again, and its handle names nothing from then on. A message it
    /// would not hear (another tag's, for an exact listener) leaves it waiting. On a retained
    /// tag with a message, it hears that message at once and is gone when `listen` returns. A
    /// future ([`next`](Self::next)) hears one message anyway. Cost: none.
    #[inline]
    pub fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// Hears the tag and every descendant (GB3): the finish then takes a [`Tag`] (or a key) and
    /// a listener of the [`Message`] alone, told the actual tag ([`Message::tag`]) and reading
    /// the payload with [`Message::get`]. Said once. Cost: none here; the finish finds the k
    /// retained messages of descendants it hears at once in O(log t + k).
    #[inline]
    pub fn partial(self) -> BusSubscribe<'a, E, Partial, A>
    where
        M: NotPartial,
    {
        self.retyped()
    }

    /// Hears only messages addressed to `entity` or bubbling up through it (GB4). Said once.
    /// Cost: none here; the finish hashes `entity` once.
    #[inline]
    pub fn entity(self, entity: E) -> BusSubscribe<'a, E, M, OneEntity>
    where
        A: NotAddressed,
    {
        let mut addressed = self.retyped();
        addressed.entity = Some(entity);
        addressed
    }

    /// The same options in another mode or addressing.
    #[inline]
    fn retyped<N, B>(self) -> BusSubscribe<'a, E, N, B> {
        BusSubscribe {
            bus: self.bus,
            priority: self.priority,
            once: self.once,
            entity: self.entity,
            mode: PhantomData,
        }
    }
}

impl<E: EntityId, A> BusSubscribe<'_, E, Exact, A> {
    /// Finishes: listens to `key`'s tag exactly with the options, `listener(payload, message)`
    /// for each message it hears; [`MessageBus::listen`] with options. If the tag is retained
    /// and has a message, the listener hears it before this returns (GB6). Cost: as `listen`.
    #[track_caller]
    #[inline]
    pub fn listen<P: 'static>(
        self,
        key: &TagKey<P>,
        listener: impl Fn(&P, &Message<'_, E>) + 'static,
    ) -> DelegateHandle {
        let (tag, listener) = resolve(key, listener);
        if self.once {
            let handle = self.bus.add(
                tag,
                self.entity,
                false,
                self.priority,
                once_exact(tag, listener),
            );
            self.bus.mark_once(handle)
        } else {
            self.bus
                .add(tag, self.entity, false, self.priority, exact(tag, listener))
        }
    }

    /// Finishes with the future of the next message on `key`'s tag exactly that the options let
    /// through (X5): resolves to `Ok` with a clone of its payload, or to
    /// `Err(`[`Gone`](crate::Gone)`)` if the bus is dropped (or the entity forgotten) first. See
    /// [`MessageBus::next`].
    #[track_caller]
    #[inline]
    pub fn next<P: Clone + 'static>(self, key: &TagKey<P>) -> NextBroadcast<P> {
        self.bus.next_of(
            key.tag(),
            self.entity,
            false,
            self.priority,
            |_, payload| payload,
        )
    }
}

impl<E: EntityId, A> BusSubscribe<'_, E, Partial, A> {
    /// Finishes: listens to `tag` and every descendant with the options, `listener(message)`
    /// for each message it hears. Takes a [`Tag`], so a tag found by name works too, or a key
    /// (`&tags::COMBAT`). It hears the retained messages of the tag and its descendants at
    /// once, in tag order (GB6). Cost: O(1), plus O(log t + k) to find the k retained messages
    /// it hears at once (t the tags retaining).
    #[track_caller]
    #[inline]
    pub fn listen(
        self,
        tag: impl Into<Tag>,
        listener: impl Fn(&Message<'_, E>) + 'static,
    ) -> DelegateHandle {
        let (tag, listener) = resolve(tag, listener);
        if self.once {
            let handle = self.bus.add(
                tag,
                self.entity,
                true,
                self.priority,
                once(None, |_| true, listener),
            );
            self.bus.mark_once(handle)
        } else {
            self.bus
                .add(tag, self.entity, true, self.priority, partial(listener))
        }
    }

    /// Finishes with the future of the next message on `tag` or a descendant whose payload is
    /// a `P` (X5): resolves to `Ok((actual tag, payload clone))`, or `Err(Gone)` if the bus is
    /// dropped (or the entity forgotten) first. Messages of other payload types pass it by.
    #[track_caller]
    #[inline]
    pub fn next<P: Clone + 'static>(self, tag: impl Into<Tag>) -> NextBroadcast<(Tag, P)> {
        self.bus.next_of(
            tag.into(),
            self.entity,
            true,
            self.priority,
            |tag, payload| (tag, payload),
        )
    }
}
