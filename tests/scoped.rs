//! Rule B1: scoped subscriptions, a guard that unsubscribes when dropped, for multicast
//! delegates (generic and declared), script delegates' native listeners and processor
//! registrations.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use lumina::event::{
    Event, EventHandler, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers,
};
use lumina::{
    DelegateHandle, MulticastDelegate, ScopedSubscription, ScriptDelegate,
    declare_multicast_delegate, script_delegate,
};

declare_multicast_delegate!(OnHit(damage: u32));

fn counter() -> (Rc<Cell<u32>>, impl Fn(u32) + 'static) {
    let total = Rc::new(Cell::new(0));
    let sink = Rc::clone(&total);
    (total, move |x| sink.set(sink.get() + x))
}

#[test]
fn b1_dropping_the_guard_unsubscribes_generic_and_declared() {
    let generic: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (total, f) = counter();
    let guard = generic.scoped(generic.add_lambda(f));
    generic.broadcast(2);
    drop(guard);
    generic.broadcast(3);
    assert_eq!(total.get(), 2);
    assert!(!generic.is_bound());

    let declared = OnHit::new();
    let (total, f) = counter();
    let guard = declared.scoped(declared.add_lambda(f));
    assert!(guard.handle().is_valid());
    declared.broadcast(4);
    assert!(guard.remove(), "remove reports the removal");
    declared.broadcast(5);
    assert_eq!(total.get(), 4);
}

#[test]
fn b1_m3_a_guard_dropped_during_a_broadcast_stops_a_subscriber_not_yet_reached() {
    let delegate = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let log = Rc::new(RefCell::new(Vec::new()));
    let later_guard: Rc<RefCell<Option<ScopedSubscription>>> = Rc::default();
    let slot = Rc::clone(&later_guard);
    let first_log = Rc::clone(&log);
    let _first = delegate.add_lambda(move |_| {
        first_log.borrow_mut().push("first");
        slot.borrow_mut().take(); // drops the later subscriber's guard
    });
    let later_log = Rc::clone(&log);
    let handle = delegate.add_lambda(move |_| later_log.borrow_mut().push("later"));
    *later_guard.borrow_mut() = Some(delegate.scoped(handle));
    delegate.broadcast(1);
    assert_eq!(*log.borrow(), ["first"]);
    assert_eq!(delegate.len(), 1);
}

#[test]
fn b1_m4_a_subscriber_that_drops_its_own_guard_finishes_safely() {
    let delegate = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let own: Rc<RefCell<Option<ScopedSubscription>>> = Rc::default();
    let slot = Rc::clone(&own);
    let captured = Rc::new(String::from("still here"));
    let seen = Rc::new(RefCell::new(String::new()));
    let sink = Rc::clone(&seen);
    let handle = delegate.add_lambda(move |_| {
        slot.borrow_mut().take();
        // Its own captures are alive until the call ends (M4).
        sink.borrow_mut().push_str(&captured);
    });
    *own.borrow_mut() = Some(delegate.scoped(handle));
    delegate.broadcast(1);
    assert_eq!(*seen.borrow(), "still here");
    assert!(!delegate.is_bound());
}

#[test]
fn b1_into_handle_keeps_the_subscription() {
    let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (total, f) = counter();
    let handle: DelegateHandle = delegate.scoped(delegate.add_lambda(f)).into_handle();
    delegate.broadcast(6);
    assert_eq!(total.get(), 6);
    assert!(delegate.remove(handle));
}

#[test]
fn b1_a_guard_that_outlives_its_delegate_does_nothing() {
    let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (_, f) = counter();
    let guard = delegate.scoped(delegate.add_lambda(f));
    drop(delegate);
    assert!(format!("{guard:?}").contains("delegate_alive: false"));
    assert!(!guard.remove());
}

#[script_delegate]
#[derive(Clone, Copy)]
struct Damage {
    amount: u32,
}

#[test]
fn b1_script_delegate_native_listener_guard() {
    let on_damage: ScriptDelegate<Damage> = ScriptDelegate::new();
    let total = Rc::new(Cell::new(0));
    let sink = Rc::clone(&total);
    let guard = on_damage.scoped(on_damage.add_lambda(move |d| sink.set(sink.get() + d.amount)));
    on_damage.broadcast(&Damage { amount: 3 });
    drop(guard);
    on_damage.broadcast(&Damage { amount: 4 });
    assert_eq!(total.get(), 3);
    assert!(!on_damage.is_bound());
}

struct Consumer(Rc<Cell<u32>>);

impl EventHandler for Consumer {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        self.0.set(self.0.get() + 1);
        true
    }
}

#[test]
fn b1_processor_registration_guard() {
    let processor = EventProcessor::new();
    let calls = Rc::new(Cell::new(0));
    let handler = Rc::new(Consumer(Rc::clone(&calls)));
    assert!(processor.register_event_handler(&handler, InputLayer::Viewport));
    let guard = processor.scoped(processor.handle_of(&handler).expect("registered"));
    assert!(
        !processor.register_event_handler(&handler, InputLayer::Default),
        "P1: a duplicate is refused"
    );
    assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    drop(guard);
    assert!(processor.handle_of(&handler).is_none());
    assert!(!processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    assert_eq!(calls.get(), 1);
}
