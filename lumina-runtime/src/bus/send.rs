//! Sending: a message delivered now through the tag and entity hierarchies (GB3-GB5), with
//! the climb's cycle check (GB4).

use super::*;

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

/// An addressed message's climb reached an entity it went through already (GB4).
#[cold]
#[inline(never)]
pub(super) fn cycle(tag: Tag, steps: usize) {
    tracing::warn!(
        tag = %tag,
        "lumina: a message on `{tag}` reached an entity it had climbed through already, after \
         {steps} entities: the entity parent relation has a cycle; it goes no further"
    );
}

/// A message nobody heard: visible at debug level (GB7).
#[cold]
#[inline(never)]
pub(super) fn unheard(tag: Tag) {
    tracing::debug!(tag = %tag, "lumina: a message on `{tag}` was sent and nobody heard it");
}

impl<E: EntityId> MessageBus<E> {
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
    pub(super) fn deliver<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
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
    pub(super) fn dispatch(&self, message: &Message<'_, E>) {
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
    pub(super) fn bubble(&self, message: &Message<'_, E>, entity: E) -> bool {
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
    pub(super) fn walk_channel(
        &self,
        message: &Message<'_, E>,
        tag: Tag,
        channel: &Channel<E>,
    ) -> bool {
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
}
