//! Retained messages (GB6) and posted ones (GB5): what a tag keeps, the per-tag queues,
//! `post` and `deliver_posted`, and what other threads' posters send in.

use super::*;

/// The queue of one tag's posted messages, erased to the bus.
pub(super) trait Posted<E: EntityId>: Any {
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
pub(super) type Item<P, E> = (u64, Option<E>, P, u64);

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

/// The posted queue of `channel`'s tag, made by its first post; recorded with the module loader
/// when its code is a game module's (R5).
#[cold]
pub(super) fn new_queue<P: 'static, E: EntityId>(channel: &Rc<Channel<E>>) -> Rc<dyn Posted<E>> {
    let queue: Rc<dyn Posted<E>> = Rc::new(TypedQueue::<P, E> {
        items: RefCell::new(VecDeque::new()),
    });
    *channel.queue.borrow_mut() = Some(Rc::clone(&queue));
    channel.track(QUEUE, track::code_of(&*queue));
    queue
}

impl<E: EntityId> MessageBus<E> {
    pub(super) fn retain<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
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
    pub(super) fn retain_keeping<P: 'static>(
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

    pub(super) fn enqueue<P: 'static>(&self, tag: Tag, entity: Option<E>, payload: P) {
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

    pub(super) fn drain_inbox(&self) {
        if !self.inbox.has_items() {
            return;
        }
        let mut spare = self.spare.borrow_mut();
        self.inbox.drain(self, &mut spare);
    }
}
