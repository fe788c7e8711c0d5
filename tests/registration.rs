//! Bind-only views (rule B2): the owner of a delegate hands out a registration that subscribes
//! and unsubscribes but cannot broadcast or clear. The compile-fail half is in
//! `ui-tests/registration/`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use lumina::MulticastDelegate;
use lumina::multicast::Registration;

/// A door of the game; its delegates are private, its registrations public.
mod game {
    use lumina::multicast::Registration;
    use lumina::{MulticastDelegate, declare_multicast_delegate};

    declare_multicast_delegate!(pub DoorOpened(door: &Door, by: &str));

    /// Owns its delegates: only it broadcasts.
    #[derive(Default)]
    pub struct Door {
        pub name: String,
        on_opened: DoorOpened,
        on_locked: MulticastDelegate<dyn Fn(bool)>,
    }

    impl Door {
        pub fn new(name: &str) -> Self {
            Door {
                name: name.to_owned(),
                ..Door::default()
            }
        }

        pub fn on_opened(&self) -> DoorOpenedRegistration<'_> {
            self.on_opened.registration()
        }

        pub fn on_locked(&self) -> Registration<'_, dyn Fn(bool)> {
            self.on_locked.registration()
        }

        pub fn open(&self, by: &str) {
            self.on_opened.broadcast(self, by);
        }

        pub fn lock(&self, locked: bool) {
            self.on_locked.broadcast(locked);
        }
    }
}

use game::Door;

#[test]
fn b2_declared_registration_subscribes_and_unsubscribes() {
    let door = Door::new("cellar");
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&seen);
    let handle = door
        .on_opened()
        .add_lambda(move |door, by| sink.borrow_mut().push(format!("{} by {by}", door.name)));
    assert!(door.on_opened().is_bound());
    assert_eq!(door.on_opened().len(), 1);
    door.open("player");
    assert_eq!(*seen.borrow(), ["cellar by player"]);

    assert!(door.on_opened().remove(handle));
    assert!(!door.on_opened().remove(handle));
    assert!(door.on_opened().is_empty());
    door.open("ghost");
    assert_eq!(seen.borrow().len(), 1);
}

#[test]
fn b2_declared_registration_binds_members_statics_and_priorities() {
    thread_local! {
        static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }
    fn record(entry: String) {
        LOG.with(|log| log.borrow_mut().push(entry));
    }
    struct Guard(&'static str);
    let door = Door::default();
    let events = door.on_opened();
    let guard = Rc::new(Guard("guard"));
    let _member = events.add_member(&guard, |guard, _, by| {
        record(format!("{} sees {by}", guard.0))
    });
    let _early = events
        .subscribe()
        .priority(9)
        .add_member(&guard, |guard, _, _| {
            record(format!("{} first", guard.0));
        });
    let _static = events.add_static(|_, by| record(format!("static {by}")));
    let _late = events
        .subscribe()
        .priority(-1)
        .add_static(|_, _| record("static last".into()));
    let _lambda = events
        .subscribe()
        .priority(5)
        .add_lambda(|_, by| record(format!("lambda {by}")));
    door.open("thief");
    assert_eq!(
        LOG.with(|log| log.take()),
        [
            "guard first",
            "lambda thief",
            "guard sees thief",
            "static thief",
            "static last"
        ]
    );
    assert!(events.is_bound_to(&guard));
    assert_eq!(events.remove_all(&guard), 2);
    assert!(!events.is_bound_to(&guard));
    assert_eq!(events.len(), 3);
}

#[test]
fn b2_declared_registration_is_copy_and_shows_its_delegate() {
    let door = Door::default();
    let events = door.on_opened();
    let copy = events;
    let _a = events.add_lambda(|_, _| {});
    let _b = copy.add_lambda(|_, _| {});
    assert_eq!(events.len(), 2);
    let shown = format!("{copy:?}");
    assert!(shown.starts_with("DoorOpenedRegistration("), "{shown}");
    assert!(shown.contains("len: 2"), "{shown}");
}

#[test]
fn b2_generic_registration_subscribes_and_unsubscribes() {
    let door = Door::default();
    let locked = Rc::new(Cell::new(None));
    let sink = Rc::clone(&locked);
    let handle = door
        .on_locked()
        .add_lambda(move |state| sink.set(Some(state)));
    struct Alarm(Cell<u32>);
    let alarm = Rc::new(Alarm(Cell::new(0)));
    let _alarm = door
        .on_locked()
        .subscribe()
        .priority(1)
        .add_member(&alarm, |alarm, _| alarm.0.set(alarm.0.get() + 1));
    let _static = door.on_locked().add_static(|_| {});
    assert_eq!(door.on_locked().len(), 3);
    door.lock(true);
    assert_eq!(locked.get(), Some(true));
    assert_eq!(alarm.0.get(), 1);

    let events: Registration<'_, dyn Fn(bool)> = door.on_locked();
    assert!(events.remove(handle));
    assert!(events.is_bound_to(&alarm));
    assert_eq!(events.remove_all(&alarm), 1);
    assert_eq!(events.len(), 1);
    door.lock(false);
    assert_eq!(locked.get(), Some(true));
    assert_eq!(format!("{events:?}"), "Registration { len: 1 }");
}

#[test]
fn b2_generic_registration_adds_shared_callables_with_priorities() {
    let delegate: MulticastDelegate<dyn Fn() -> u8> = MulticastDelegate::new();
    let events = delegate.registration();
    let shared: Rc<dyn Fn() -> u8> = Rc::new(|| 1);
    let _one = events.add_shared(Rc::clone(&shared));
    let _two = events.subscribe().priority(2).add_shared(Rc::new(|| 2));
    let owner = Rc::new(());
    let _three = events
        .subscribe()
        .priority(3)
        .add_shared_member(&owner, Rc::new(|| 3));
    let _four = events.add_shared_member(&owner, Rc::new(|| 4));
    let _five = events.subscribe().priority(-1).add_lambda(|| 5);
    assert_eq!(delegate.broadcast_collect(), [3, 2, 1, 4, 5]);
    drop(owner);
    assert_eq!(delegate.broadcast_collect(), [2, 1, 5]);
}

#[test]
fn b2_a_registration_used_during_a_broadcast_follows_the_reentrancy_rules() {
    // A subscriber holding only the view removes itself and adds another: the new one waits for
    // the next broadcast (M2), the removed one never runs again.
    let delegate: Rc<MulticastDelegate<dyn Fn()>> = Rc::new(MulticastDelegate::new());
    let ran = Rc::new(RefCell::new(Vec::new()));
    let slot = Rc::new(Cell::new(None));
    let (weak, log, me) = (Rc::downgrade(&delegate), Rc::clone(&ran), Rc::clone(&slot));
    let handle = delegate.add_lambda(move || {
        log.borrow_mut().push("once");
        if let (Some(delegate), Some(handle)) = (weak.upgrade(), me.take()) {
            let events = delegate.registration();
            assert!(events.remove(handle));
            let log = Rc::clone(&log);
            let _ = events.add_lambda(move || log.borrow_mut().push("added"));
        }
    });
    slot.set(Some(handle));
    delegate.broadcast();
    delegate.broadcast();
    assert_eq!(*ran.borrow(), ["once", "added"]);
}

#[test]
fn b2_a_registration_is_one_reference_and_the_delegates_keep_their_size() {
    use std::mem::size_of;
    let pointer = size_of::<usize>();
    assert_eq!(size_of::<game::DoorOpenedRegistration<'_>>(), pointer);
    assert_eq!(size_of::<Registration<'_, dyn Fn(bool)>>(), pointer);
    assert_eq!(
        size_of::<lumina::main_thread::QueuedSender<(u32,)>>(),
        pointer
    );
    // The views and senders add no field to the delegates they serve.
    assert_eq!(
        size_of::<game::DoorOpened>(),
        size_of::<MulticastDelegate<dyn Fn(bool)>>()
    );
}
