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
