//! The bus's storage: a channel per tag (and per tag and entity), its listeners, retained
//! message and posted queue, how they are found, made and unlinked, and their records with the
//! module loader (R5).

use super::*;

/// A retained message: the entity it was addressed to, and its payload.
pub(super) type Retained<E> = (Option<E>, Rc<dyn Any>);
/// The channels of listeners of one entity, by tag id and the entity's hash (made by the bus's
/// [`RandomState`], outside any borrow), each with its entity: the map itself runs no user code
/// (M13). Almost always one channel per key: more only when two entities' hashes collide.
pub(super) type EntityChannels<E> = HashMap<(u32, u64), SmallVec<[(E, Rc<Channel<E>>); 1]>>;
/// The tag ids that have a channel in [`EntityChannels`] for an entity hash: what
/// [`MessageBus::forget_entity`] looks up, O(k) in the entity's own channels (rule N4).
pub(super) type EntityTags = HashMap<u64, SmallVec<[u32; 2]>>;
/// The message a retained tag kept before a new one: its payload, when replaced in place, or
/// the kept pair, when replaced whole.
pub(super) type Replaced<P, E> = (Option<P>, Option<Retained<E>>);
/// The engine's entity parent relation (GB4).
pub(super) type ParentRelation<E> = Rc<dyn Fn(E) -> Option<E>>;

/// The listeners of one tag (for one entity, or for none), with the tag's retained message and
/// posted queue.
pub(super) struct Channel<E: EntityId> {
    pub(super) tag: Tag,
    pub(super) list: InvocationList<Stored<E>>,
    /// How many partial listeners were ever added: 0 lets a message on a descendant skip this
    /// channel.
    pub(super) partials: Cell<u32>,
    /// The largest handle id of a listener ever added: when it is below a message's `limit`,
    /// every listener of the channel was added before the message started, and its exact
    /// listeners need not compare their ids with the limit (M2, GB9).
    pub(super) newest: Cell<u64>,
    /// The last message of a retained tag (GB6), shared so a listener hearing it at once can
    /// send on the tag meanwhile. Reused in place when nothing else holds it.
    pub(super) retained: RefCell<Option<Retained<E>>>,
    /// The messages posted on this tag, typed (GB5); created by the first post.
    pub(super) queue: RefCell<Option<Rc<dyn Posted<E>>>>,
    /// The ids under which the module loader knows the retained message ([`RETAINED`]) and
    /// the posted queue ([`QUEUE`]) when their code lies in a game module's library; 0 when
    /// not recorded (R5, see [`Channel::track`]).
    pub(super) tracked: Cell<[u64; 2]>,
}

/// Which value of a channel a module record names: the retained message...
pub(super) const RETAINED: usize = 0;
/// ... or the posted queue.
pub(super) const QUEUE: usize = 1;

/// Shrinks `map` when it holds less than a quarter of its capacity (tables do not keep the
/// storage of a burst).
pub(super) fn shrink<K: Eq + Hash, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

impl<E: EntityId> Channel<E> {
    /// Whether the channel holds nothing: no listener, retained message or posted queue (an
    /// entity's channel then goes).
    pub(super) fn is_unused(&self) -> bool {
        self.list.is_empty()
            && self.retained.try_borrow().is_ok_and(|slot| slot.is_none())
            && self.queue.try_borrow().is_ok_and(|slot| slot.is_none())
    }

    pub(super) fn new(tag: Tag) -> Self {
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
    pub(super) fn track(self: &Rc<Self>, which: usize, code: Option<track::Code>) {
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
pub(super) struct Parents<E> {
    pub(super) relation: RefCell<Option<ParentRelation<E>>>,
    /// The id under which the module loader knows the relation; 0 when not recorded.
    pub(super) tracked: Cell<u64>,
}

impl<E: EntityId> Parents<E> {
    /// Records the relation with the module loader when `code` lies in a loaded module.
    pub(super) fn track(self: &Rc<Self>, code: Option<track::Code>) {
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

/// Clears `channels` as one operation (M13, what [`MessageBus::clear`] and
/// [`MessageBus::forget_entity`] do): every list is emptied, or while it is walked its listeners
/// marked, before the first listener's `Drop` runs, so that code reaches none of the listeners
/// this removes and a listener it adds stays (M6). The listeners are dropped in the order they
/// were added (those of a channel being walked when that walk ends, M4). Every `Drop` runs even
/// if one panics; the first panic resumes at the end (R3).
pub(super) fn clear_channels<E: EntityId>(channels: Vec<Rc<Channel<E>>>) {
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

impl<E: EntityId> MessageBus<E> {
    // ---- channels --------------------------------------------------------------------------

    /// Indexes `tag` as one whose channel retains a message (its first, or its first since
    /// [`clear_retained`](Self::clear_retained)). O(log n) in the tags retaining.
    pub(super) fn note_retained(&self, tag: Tag) {
        self.retaining.borrow_mut().insert(tag.name(), tag);
    }

    #[inline(always)]
    pub(super) fn channel(&self, tag: Tag) -> Option<Rc<Channel<E>>> {
        self.channels
            .borrow()
            .get(tag.id() as usize)
            .and_then(Option::clone)
    }

    pub(super) fn channel_of(&self, tag: Tag, entity: Option<E>) -> Option<Rc<Channel<E>>> {
        match entity {
            None => self.channel(tag),
            Some(entity) => self.entity_channel(tag, entity, self.entity_hasher.hash_one(entity)),
        }
    }

    /// The channel of `tag` for `entity`, whose hash is `hash`. The id's `PartialEq` is user
    /// code: each candidate is copied out of the map, and compared once the borrow is over
    /// (M13). One candidate, unless hashes collide.
    pub(super) fn entity_channel(&self, tag: Tag, entity: E, hash: u64) -> Option<Rc<Channel<E>>> {
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
    pub(super) fn entity_channel_or_new(&self, tag: Tag, entity: E) -> Rc<Channel<E>> {
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
    pub(super) fn unlink_entity_channel(&self, tag: u32, hash: u64, channel: &Rc<Channel<E>>) {
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

    pub(super) fn channel_or_new(&self, tag: Tag) -> Rc<Channel<E>> {
        let mut channels = self.channels.borrow_mut();
        let index = tag.id() as usize;
        if channels.len() <= index {
            channels.resize_with(index + 1, || None);
        }
        Rc::clone(channels[index].get_or_insert_with(|| Rc::new(Channel::new(tag))))
    }
}
