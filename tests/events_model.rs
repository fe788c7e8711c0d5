//! P1-P4 as a model-based property test: random scripts of register / unregister / drop /
//! dispatch run against the real `EventProcessor` and against a plain reference model. Handlers
//! pass, consume, mark the event handled, or, mid-dispatch, unregister or register another
//! handler or start a nested dispatch. Every dispatch must call the same handlers in the same
//! order and return the same result.
//!
//! X1: each handler is registered either as a plain `EventHandler` or as a typed handler
//! (`TypedHandler` for the dispatched class, for its category, or for another class, which must
//! never run), all in the one chain: the model only skips the handlers of another class.

use lumina::event::{
    Event, EventHandler, EventProcessor, Key, KeyPressedEvent, KeyboardEvent, Modifiers,
    MouseMovedEvent, TypedHandler, category,
};
use proptest::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

const SLOTS: usize = 5;
const PRIORITIES: [i32; 5] = [-5, 0, 0, 500, 1000];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    Pass,
    Consume,
    MarkHandled,
    /// Unregisters the handler in this slot, if any, then passes.
    Unregister(usize),
    /// Registers the handler in this slot at this priority, if any, then passes.
    Register(usize, i32),
    /// Dispatches another event from inside the handler (one level deep), then passes.
    Nested,
}

/// How a handler is registered (X1).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A plain `EventHandler` on `&mut dyn Event`.
    Dyn,
    /// A typed handler for `KeyPressedEvent`, the class dispatched.
    Class,
    /// A typed handler for the keyboard category.
    Category,
    /// A typed handler for `MouseMovedEvent`: passed by, never called.
    OtherClass,
}

#[derive(Clone, Debug)]
enum Op {
    /// Creates a handler in the slot if it is empty, then registers it.
    Register {
        slot: usize,
        priority: i32,
        behaviour: Behaviour,
        kind: Kind,
    },
    Unregister(usize),
    /// Drops the test's only `Rc` of the slot's handler, without unregistering it.
    Drop(usize),
    Dispatch,
}

type SlotList = RefCell<Vec<Option<Rc<dyn EventHandler>>>>;
type Slots = Rc<SlotList>;

struct Handler {
    id: u64,
    behaviour: Behaviour,
    log: Rc<RefCell<Vec<u64>>>,
    processor: Weak<EventProcessor>,
    slots: Weak<SlotList>,
    depth: Rc<Cell<u32>>,
}

impl EventHandler for Handler {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        self.act(Some(event))
    }
}

impl Handler {
    /// The behaviour; a typed handler has no `dyn Event` to mark handled, so it consumes instead
    /// (the same outcome for the chain).
    fn act(&self, event: Option<&mut dyn Event>) -> bool {
        self.log.borrow_mut().push(self.id);
        match self.behaviour {
            Behaviour::Pass => false,
            Behaviour::Consume => true,
            Behaviour::MarkHandled => match event {
                Some(event) => {
                    event.set_handled(true);
                    false
                }
                None => true,
            },
            Behaviour::Unregister(slot) => {
                let victim = self.slots.upgrade().unwrap().borrow()[slot].clone();
                // A typed handler that unregisters itself: the call goes on (P4).
                if let Some(victim) = victim {
                    self.processor
                        .upgrade()
                        .unwrap()
                        .unregister_event_handler(&victim);
                }
                false
            }
            Behaviour::Register(slot, priority) => {
                let other = self.slots.upgrade().unwrap().borrow()[slot].clone();
                if let Some(other) = other {
                    let _ = self
                        .processor
                        .upgrade()
                        .unwrap()
                        .register_dyn_event_handler(&other, priority);
                }
                false
            }
            Behaviour::Nested => {
                if self.depth.get() == 0 {
                    self.depth.set(1);
                    let event = KeyPressedEvent::new(Key::B, Modifiers::NONE);
                    self.processor.upgrade().unwrap().dispatch(event);
                    self.depth.set(0);
                }
                false
            }
        }
    }
}

/// The reference: what the rules say, with no reentrancy machinery.
#[derive(Default)]
struct Model {
    /// The test's live handlers: (id, behaviour, kind) per slot.
    slots: [Option<(u64, Behaviour, Kind)>; SLOTS],
    /// Registered handlers: (id, priority, registration sequence).
    registered: Vec<(u64, i32, u64)>,
    sequence: u64,
}

impl Model {
    fn is_registered(&self, id: u64) -> bool {
        self.registered.iter().any(|entry| entry.0 == id)
    }

    fn unregister(&mut self, id: u64) -> bool {
        let before = self.registered.len();
        self.registered.retain(|entry| entry.0 != id);
        before != self.registered.len()
    }

    fn register(&mut self, id: u64, priority: i32) -> bool {
        if self.is_registered(id) {
            return false;
        }
        self.sequence += 1;
        self.registered.push((id, priority, self.sequence));
        true
    }

    /// P1 order, P2 consumption, P4: handlers registered during a dispatch wait for the next one
    /// (M2), removed ones not yet reached do not run (M3), a nested dispatch sees the list as it
    /// is when it starts. Calls are appended to `calls` in the order they happen.
    fn dispatch(&mut self, depth: u32, calls: &mut Vec<u64>) -> bool {
        let mut order = self.registered.clone();
        order.sort_by_key(|&(_, priority, sequence)| (-i64::from(priority), sequence));
        for (id, _, registration) in order {
            if !self.registered.iter().any(|entry| entry.2 == registration) {
                continue; // unregistered earlier in this dispatch (maybe registered again since)
            }
            let (_, behaviour, kind) = *self
                .slots
                .iter()
                .flatten()
                .find(|(slot_id, _, _)| *slot_id == id)
                .expect("registered handlers are alive");
            if kind == Kind::OtherClass {
                continue; // X1: another class's handler is passed by
            }
            calls.push(id);
            match behaviour {
                Behaviour::Pass => {}
                Behaviour::Consume | Behaviour::MarkHandled => return true,
                Behaviour::Unregister(slot) => {
                    if let Some((victim, _, _)) = self.slots[slot] {
                        self.unregister(victim);
                    }
                }
                Behaviour::Register(slot, priority) => {
                    if let Some((other, _, _)) = self.slots[slot] {
                        self.register(other, priority);
                    }
                }
                Behaviour::Nested => {
                    if depth == 0 {
                        self.dispatch(1, calls);
                    }
                }
            }
        }
        false
    }
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        3 => Just(Behaviour::Pass),
        1 => Just(Behaviour::Consume),
        1 => Just(Behaviour::MarkHandled),
        2 => (0..SLOTS).prop_map(Behaviour::Unregister),
        2 => (0..SLOTS, prop::sample::select(&PRIORITIES[..]))
            .prop_map(|(slot, priority)| Behaviour::Register(slot, priority)),
        1 => Just(Behaviour::Nested),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        2 => Just(Kind::Dyn),
        2 => Just(Kind::Class),
        1 => Just(Kind::Category),
        1 => Just(Kind::OtherClass),
    ]
}

/// The handler as registered: itself, or inside a typed handler of `kind`.
fn registered_as(handler: Rc<Handler>, kind: Kind) -> Rc<dyn EventHandler> {
    match kind {
        Kind::Dyn => handler,
        Kind::Class => Rc::new(TypedHandler::<KeyPressedEvent, _>::new(move |key| {
            assert!(matches!(key.key, Key::A | Key::B));
            handler.act(None)
        })),
        Kind::Category => Rc::new(TypedHandler::<category::Keyboard, _>::new(move |event| {
            assert!(matches!(event, KeyboardEvent::Pressed(_)));
            handler.act(None)
        })),
        Kind::OtherClass => Rc::new(TypedHandler::<MouseMovedEvent, _>::new(move |_| {
            handler.act(None)
        })),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SLOTS, prop::sample::select(&PRIORITIES[..]), behaviour(), kind())
            .prop_map(|(slot, priority, behaviour, kind)| Op::Register { slot, priority, behaviour, kind }),
        1 => (0..SLOTS).prop_map(Op::Unregister),
        1 => (0..SLOTS).prop_map(Op::Drop),
        3 => Just(Op::Dispatch),
    ]
}

fn run(script: Vec<Op>) -> Result<(), TestCaseError> {
    let processor = Rc::new(EventProcessor::new());
    let slots: Slots = Rc::new(RefCell::new(vec![None; SLOTS]));
    let log = Rc::new(RefCell::new(Vec::new()));
    let depth = Rc::new(Cell::new(0));
    let mut model = Model::default();
    let mut next_id = 0;
    for op in script {
        match op {
            Op::Register {
                slot,
                priority,
                behaviour,
                kind,
            } => {
                if model.slots[slot].is_none() {
                    next_id += 1;
                    model.slots[slot] = Some((next_id, behaviour, kind));
                    let handler = Rc::new(Handler {
                        id: next_id,
                        behaviour,
                        log: Rc::clone(&log),
                        processor: Rc::downgrade(&processor),
                        slots: Rc::downgrade(&slots),
                        depth: Rc::clone(&depth),
                    });
                    slots.borrow_mut()[slot] = Some(registered_as(handler, kind));
                }
                let id = model.slots[slot].unwrap().0;
                let expected = model.register(id, priority);
                let handler = slots.borrow()[slot].clone().unwrap();
                let registered = processor.register_dyn_event_handler(&handler, priority);
                prop_assert_eq!(registered, expected, "P1: duplicates refused");
            }
            Op::Unregister(slot) => {
                let Some((id, _, _)) = model.slots[slot] else {
                    continue;
                };
                let handler = slots.borrow()[slot].clone().unwrap();
                prop_assert_eq!(
                    processor.unregister_event_handler(&handler),
                    model.unregister(id)
                );
            }
            Op::Drop(slot) => {
                if let Some((id, _, _)) = model.slots[slot].take() {
                    model.unregister(id); // P3: as good as unregistered
                }
                slots.borrow_mut()[slot] = None;
            }
            Op::Dispatch => {
                log.borrow_mut().clear();
                let mut expected_calls = Vec::new();
                let expected_consumed = model.dispatch(0, &mut expected_calls);
                let consumed = processor.dispatch(KeyPressedEvent::new(Key::A, Modifiers::NONE));
                prop_assert_eq!(&*log.borrow(), &expected_calls, "P1/P3/P4 order");
                prop_assert_eq!(consumed, expected_consumed, "P2 result");
            }
        }
        prop_assert_eq!(processor.len(), model.registered.len());
        prop_assert!(!processor.is_dispatching());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn p1_p2_p3_p4_x1_random_scripts_match_the_reference_model(script in prop::collection::vec(op(), 1..60)) {
        run(script)?;
    }
}
