//! Listening and removing: what `listen`, `next` and the builder's finishes come to (`add`,
//! `next_of`), the callables they make (exact, partial, one-shot, future), the retained messages
//! a new listener hears (GB6), removal by handle, the listing (GB7) and `forget_entity`. (The
//! plain `listen`, `subscribe` and `next` stay beside the type in `mod.rs`, so that rustc names
//! them `MessageBus::listen` in its errors.)

use super::*;

/// The callable of an exact listener: runs only while the message's own tag is walked, and
/// only for a payload of the type declared with the tag, which is `P`.
pub(super) fn exact<P: 'static, E: EntityId>(
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
pub(super) fn partial<E: EntityId>(
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
pub(super) fn once<E: EntityId>(
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
pub(super) fn once_exact<P: 'static, E: EntityId>(
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
pub(super) fn future<P: Clone + 'static, T: 'static, E: EntityId>(
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

impl<E: EntityId> MessageBus<E> {
    #[track_caller]
    pub(super) fn next_of<P: Clone + 'static, T: 'static>(
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
        let subscribed = self.add_with(
            tag,
            entity,
            is_partial,
            priority,
            false,
            future(exact_tag, sender, value),
        );
        // Listed as a future (V1); no retained message is replayed to it, so it is still there.
        if let Some(record) = self.records.borrow_mut().get_mut(&subscribed.id()) {
            record.future = true;
        }
        next
    }

    /// Adds the listener `make` builds once its handle (and a weak reference to its channel's
    /// list) is known: what every `listen*` and `next*` method comes to. A listener on a
    /// retained tag, or a partial one, hears the retained messages it matches at once, unless
    /// `replay` is false (futures wait for the next message).
    #[track_caller]
    pub(super) fn add(
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
    pub(super) fn add_quietly(
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
                once: false,
                future: false,
            },
        );
        (handle, made)
    }

    /// Records that `handle`'s listener is a one-shot, for [`subscriptions`](Self::subscriptions) (V1);
    /// its one-shot behaviour is its callable's own. Returns `handle`.
    pub(super) fn mark_once(&self, handle: DelegateHandle) -> DelegateHandle {
        // Gone already if a retained message it heard at once spent it.
        if let Some(record) = self.records.borrow_mut().get_mut(&handle.id()) {
            record.once = true;
        }
        handle
    }

    /// The retained messages a listener just added hears at once (GB6).
    pub(super) fn replay_to(
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

    /// Whether the listener of `handle` is still listening: the question every delegate's
    /// `contains` answers for its subscriptions.
    pub fn contains(&self, handle: DelegateHandle) -> bool {
        let record = self.records.borrow().get(&handle.id()).copied();
        record.is_some_and(|record| self.is_listening_with(handle.id(), &record))
    }

    /// Every listener, by tag, then entity-less before per-entity, then dispatch order, with
    /// where it was made (GB7, B5): the bus's listing, as every delegate's `subscriptions`, with
    /// each listener's tag, partial flag and entity filter beside its
    /// [`Subscription`]. Allocates: for diagnostics.
    pub fn subscriptions(&self) -> Vec<ListenerInfo<E>> {
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
            for mut subscription in channel.list.subscriptions() {
                let record = records.get(&subscription.handle.id());
                let partial = record.is_some_and(|record| record.partial);
                // A one-shot listener removes itself: its entry is not one-shot, its record is.
                subscription.one_shot |= record.is_some_and(|record| record.once);
                listed.push(ListenerInfo {
                    tag,
                    entity,
                    partial,
                    subscription,
                    future: record.is_some_and(|record| record.future),
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
}
