//! The message a listener hears ([`Message`]): its tag, entity, payload and consumption
//! (GB3), and what its delivery keeps in it (the walk's gate and limit, M2, GB9).

use super::*;

/// The message a listener hears: its tag, the entity it is addressed to, its payload, and the
/// power to stop it going further (GB3).
pub struct Message<'a, E: EntityId = u64> {
    pub(super) tag: Tag,
    pub(super) entity: Option<E>,
    /// The payload's address: a value of type `payload_type`, borrowed for `'a` (from Rust, or
    /// the bus's aligned copy of a managed sender's bytes, GB8).
    pub(super) payload: NonNull<()>,
    pub(super) borrow: PhantomData<&'a ()>,
    /// The `TypeId` of the value `payload` points at, read once per message, so a listener
    /// checks its payload type without a dynamic call (GB9).
    pub(super) payload_type: TypeId,
    /// The tag whose listeners run now (the message's tag or an ancestor).
    pub(super) at: Cell<Tag>,
    /// What an exact listener checks, with one comparison for its tag, its payload type and
    /// the M2 `limit` (GB9; set by [`Message::enter`] for each channel walked). While the
    /// listeners of the message's own tag run and the payload has the type declared with it,
    /// the tag's [`addr`](Tag::addr), with the low bit set if the channel may hold listeners
    /// added after the message started (then each exact listener compares its id with `limit`
    /// too); 0 otherwise.
    pub(super) gate: Cell<usize>,
    /// The entity whose listeners run now (`None`: listeners of no particular entity).
    pub(super) at_entity: Cell<Option<E>>,
    pub(super) consumed: Cell<bool>,
    /// Whether a listener heard it. A flag, not a count: each listener stores `true`, which
    /// the next one does not have to wait for (an increment would chain them, GB9).
    pub(super) heard: Cell<bool>,
    /// Heard as a retained message by a listener added after it was sent (GB6).
    pub(super) replayed: bool,
    /// The handle ids of the listeners added before this message started: only they hear it
    /// (M2 across channels: a listener added to an ancestor's or another entity's channel while
    /// the message walks an earlier one does not hear it). `u64::MAX` for a replay; 0 once
    /// consumed (nobody hears it any more).
    pub(super) limit: Cell<u64>,
    /// The channel whose listeners run now, while they run (null otherwise): what
    /// [`consume`](Self::consume) stops. Set and cleared by `MessageBus::walk_channel`, whose
    /// caller holds the channel meanwhile (src/addresses.md).
    pub(super) walking: Cell<*const Channel<E>>,
}

impl<'a, E: EntityId> Message<'a, E> {
    /// A message whose payload is a `P`.
    #[inline(always)]
    pub(super) fn new<P: 'static>(tag: Tag, entity: Option<E>, payload: &'a P) -> Self {
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
    pub(super) fn new_erased(tag: Tag, entity: Option<E>, payload: &'a dyn Any) -> Self {
        let payload_type = payload.type_id();
        // SAFETY: the data pointer of `payload` points at a live value of the type whose
        // `TypeId` its own vtable gives, borrowed for `'a`.
        unsafe { Self::with_type(tag, entity, NonNull::from(payload).cast(), payload_type) }
    }

    /// # Safety
    /// `payload` must point at a live, initialized value of the type whose `TypeId` is
    /// `payload_type`, valid for shared reads for `'a` (see `payload`).
    #[inline(always)]
    pub(super) unsafe fn with_type(
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
    pub(super) fn enter(&self, tag: Tag, newest: u64) {
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
    pub(super) unsafe fn payload_unchecked<P: 'static>(&self) -> &'a P {
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

/// Clears the channel a message walks ([`Message::walking`]) when its walk ends or unwinds.
pub(super) struct Walking<'m, 'a, E: EntityId>(pub(super) &'m Message<'a, E>);

impl<E: EntityId> Drop for Walking<'_, '_, E> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.walking.set(std::ptr::null());
    }
}

/// Whether the listener `id` hears `message` at all: it was added before the message started
/// (M2), and, for an exact listener, the message's own tag is being walked.
#[inline(always)]
pub(super) fn hears<E: EntityId>(
    id: u64,
    exact_tag: Option<Tag>,
    message: &Message<'_, E>,
) -> bool {
    id < message.limit.get() && exact_tag.is_none_or(|tag| message.tag == tag)
}
