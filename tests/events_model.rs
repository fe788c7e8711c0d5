//! P1-P4 as a model-based property test: random scripts of register / unregister / drop /
//! dispatch run against the real `EventProcessor` and against a plain reference model. Handlers
//! pass, consume, mark the event handled, or, mid-dispatch, unregister or register another
//! handler or start a nested dispatch. Every dispatch must call the same handlers in the same
//! order and return the same result.
//!
//! X1: each handler is registered either as a plain `EventHandler` or as a typed handler
//! (`TypedHandler` for the dispatched class, for its category, or for another class, which must
//! never run), all in the one chain: the model only skips the handlers of another class.
//!
//! X4 and X6: scripts block and unblock registrations by handle and by guard (`ScopedBlock`),
//! from the test and from inside handlers; self-aware handlers (untyped and typed) remove, block
//! or re-prioritize their own registration mid-dispatch. A blocked handler keeps its place and
//! priority and is skipped; a new priority applies when the outermost dispatch ends.
//!
//! Every point where game code runs acts: a handler's call (above), its `Drop` (each handler
//! has a drop action: block, unblock, unregister or register another, or dispatch, run when its
//! last `Rc` goes, by the test or by another handler mid-dispatch), and a panic in a call, which
//! must leave the processor consistent (the model stops that dispatch where it panicked).

use lumina::event::{
    Event, EventHandler, EventProcessor, EventSubscription, Key, KeyPressedEvent, KeyboardEvent,
    Modifiers, MouseMovedEvent, TypedHandler, category,
};
use lumina::{ScopedBlock, ThisSubscription};
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
    /// Blocks the current registration of the handler in this slot, if any (X4), then passes.
    Block(usize),
    /// Unblocks it (X4), then passes.
    Unblock(usize),
    /// Drops the test's `Rc` (and subscription) of the slot's handler, unless that handler is
    /// running: its `Drop` (and drop action) runs right there. Then passes.
    DropSlot(usize),
    /// Panics after logging.
    Panic,
    /// Self-aware handlers (X6): remove their own registration, then pass.
    SelfRemove,
    /// Self-aware handlers: block their own registration, then pass.
    SelfBlock,
    /// Self-aware handlers: move their own registration to this priority, then pass.
    SelfPriority(i32),
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
    /// Self-aware on `&mut dyn Event` (X6), first registered by `add_event_handler_self_aware`.
    SelfAwareDyn,
    /// Self-aware typed for `KeyPressedEvent`, first registered by `add_handler_self_aware`.
    SelfAwareClass,
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
    /// Blocks the slot's current registration by handle (X4).
    Block(usize),
    /// Unblocks it by handle.
    Unblock(usize),
    /// Blocks it with a guard the test keeps (X4).
    BlockScoped(usize),
    /// Drops every guard, oldest first.
    ReleaseGuards,
}

/// A slot: the handler's id, the handler as the test holds it, and the subscription of a
/// self-aware handler.
type Slot = Option<(u64, Rc<dyn EventHandler>, Option<EventSubscription>)>;
type SlotList = RefCell<Vec<Slot>>;
type Slots = Rc<SlotList>;

struct Handler {
    id: u64,
    behaviour: Behaviour,
    /// What its `Drop` does (a behaviour that does not log; `Pass` does nothing).
    on_drop: Behaviour,
    log: Rc<RefCell<Vec<u64>>>,
    processor: Weak<EventProcessor>,
    slots: Weak<SlotList>,
    depth: Rc<Cell<u32>>,
    /// The ids of the handlers whose calls are running, innermost last.
    running: Rc<RefCell<Vec<u64>>>,
}

impl EventHandler for Handler {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        self.act(Some(event), None)
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        self.effect(self.on_drop, None);
    }
}

/// Takes a slot's handler out (so no borrow of the slots is held when it drops).
fn take_slot(slots: &SlotList, slot: usize) -> Slot {
    slots.borrow_mut()[slot].take()
}

fn slot_handler(slots: &SlotList, slot: usize) -> Option<Rc<dyn EventHandler>> {
    slots.borrow()[slot]
        .as_ref()
        .map(|(_, handler, _)| Rc::clone(handler))
}

impl Handler {
    /// The behaviour; a typed handler has no `dyn Event` to mark handled, so it consumes instead
    /// (the same outcome for the chain). `this` is the registration of a self-aware handler.
    fn act(&self, event: Option<&mut dyn Event>, this: Option<&ThisSubscription>) -> bool {
        self.log.borrow_mut().push(self.id);
        match self.behaviour {
            Behaviour::Consume => true,
            Behaviour::MarkHandled => match event {
                Some(event) => {
                    event.set_handled(true);
                    false
                }
                None => true,
            },
            Behaviour::Panic => panic!("handler {} panics", self.id),
            behaviour => {
                self.running.borrow_mut().push(self.id);
                self.effect(behaviour, this);
                self.running.borrow_mut().pop();
                false
            }
        }
    }

    /// What a behaviour does besides logging and its result: in a call, or in `Drop`.
    fn effect(&self, behaviour: Behaviour, this: Option<&ThisSubscription>) {
        let Some(processor) = self.processor.upgrade() else {
            return;
        };
        let Some(slots) = self.slots.upgrade() else {
            return;
        };
        match behaviour {
            Behaviour::Pass | Behaviour::Consume | Behaviour::MarkHandled | Behaviour::Panic => {}
            Behaviour::Unregister(slot) => {
                // A handler that unregisters itself: the call goes on (P4).
                if let Some(victim) = slot_handler(&slots, slot) {
                    processor.unregister_event_handler(&victim);
                }
            }
            Behaviour::Register(slot, priority) => {
                if let Some(other) = slot_handler(&slots, slot) {
                    let _ = processor.register_event_handler(&other, priority);
                }
            }
            Behaviour::Nested => {
                if self.depth.get() == 0 {
                    self.depth.set(1);
                    let event = KeyPressedEvent::new(Key::B, Modifiers::NONE);
                    processor.dispatch(event);
                    self.depth.set(0);
                }
            }
            Behaviour::Block(slot) | Behaviour::Unblock(slot) => {
                let handle = slot_handler(&slots, slot).and_then(|h| processor.handle_of(&h));
                if let Some(handle) = handle {
                    if behaviour == Behaviour::Block(slot) {
                        assert!(processor.block(handle));
                    } else {
                        // `false` when it was not blocked (A2): the model's state is compared
                        // after the dispatch.
                        let _ = processor.unblock(handle);
                    }
                }
            }
            Behaviour::DropSlot(slot) => {
                let victim = slots.borrow()[slot].as_ref().map(|(id, _, _)| *id);
                if victim.is_some_and(|id| !self.running.borrow().contains(&id)) {
                    drop(take_slot(&slots, slot));
                }
            }
            Behaviour::SelfRemove => {
                if let Some(this) = this {
                    this.remove();
                }
            }
            Behaviour::SelfBlock => {
                if let Some(this) = this {
                    this.block();
                }
            }
            Behaviour::SelfPriority(priority) => {
                if let Some(this) = this {
                    this.set_priority(priority);
                }
            }
        }
    }
}

/// The model's view of a dispatch that panicked: it stops where the panic was.
#[derive(Debug, PartialEq)]
struct Panicked;

/// One slot of the model.
#[derive(Clone, Copy, Debug)]
struct SlotModel {
    id: u64,
    behaviour: Behaviour,
    on_drop: Behaviour,
    kind: Kind,
    /// The registration a self-aware handler's `ThisSubscription` names: its first.
    this_seq: Option<u64>,
}

/// The reference: what the rules say, with no reentrancy machinery.
#[derive(Default)]
struct Model {
    slots: [Option<SlotModel>; SLOTS],
    /// Registered handlers: (id, priority, registration sequence = handle order).
    registered: Vec<(u64, i32, u64)>,
    /// Blocked registrations, by sequence (X4).
    blocked: Vec<u64>,
    /// Moves of priority waiting for the outermost dispatch to end (X6).
    moves: Vec<(u64, i32)>,
    sequence: u64,
    dispatching: u32,
    /// Ids of the handlers whose calls run.
    running: Vec<u64>,
}

impl Model {
    fn registration(&self, id: u64) -> Option<u64> {
        self.registered
            .iter()
            .find(|entry| entry.0 == id)
            .map(|entry| entry.2)
    }

    fn present(&self, seq: u64) -> bool {
        self.registered.iter().any(|entry| entry.2 == seq)
    }

    fn is_blocked(&self, seq: u64) -> bool {
        self.present(seq) && self.blocked.contains(&seq)
    }

    /// A2: blocks are counted (`blocked` holds one `seq` per block in force): `true` adds one,
    /// `false` lifts one; whether something was lifted.
    fn set_blocked(&mut self, seq: u64, blocked: bool) -> bool {
        if blocked {
            self.blocked.push(seq);
            return true;
        }
        match self.blocked.iter().position(|&found| found == seq) {
            Some(index) => {
                self.blocked.swap_remove(index);
                true
            }
            None => false,
        }
    }

    fn unregister(&mut self, id: u64) -> bool {
        let before = self.registered.len();
        self.registered.retain(|entry| entry.0 != id);
        before != self.registered.len()
    }

    fn register(&mut self, id: u64, priority: i32) -> bool {
        if self.registration(id).is_some() {
            return false;
        }
        self.sequence += 1;
        self.registered.push((id, priority, self.sequence));
        true
    }

    /// Drops the slot's handler: unregistered (P3), then its drop action runs.
    fn drop_slot(&mut self, slot: usize, depth: u32, calls: &mut Vec<u64>) -> Result<(), Panicked> {
        let Some(dropped) = self.slots[slot].take() else {
            return Ok(());
        };
        self.unregister(dropped.id);
        self.effect(dropped.on_drop, None, depth, calls)
    }

    /// A behaviour's effect, in a call (`this` is a self-aware handler's registration) or in
    /// a drop, at dispatch depth `depth`.
    fn effect(
        &mut self,
        behaviour: Behaviour,
        this: Option<u64>,
        depth: u32,
        calls: &mut Vec<u64>,
    ) -> Result<(), Panicked> {
        match behaviour {
            Behaviour::Pass | Behaviour::Consume | Behaviour::MarkHandled | Behaviour::Panic => {}
            Behaviour::Unregister(slot) => {
                if let Some(victim) = self.slots[slot] {
                    self.unregister(victim.id);
                }
            }
            Behaviour::Register(slot, priority) => {
                if let Some(other) = self.slots[slot] {
                    self.register(other.id, priority);
                }
            }
            Behaviour::Nested => {
                if depth == 0 {
                    self.dispatch(1, calls)?;
                }
            }
            Behaviour::Block(slot) | Behaviour::Unblock(slot) => {
                if let Some(seq) = self.slots[slot].and_then(|other| self.registration(other.id)) {
                    let _ = self.set_blocked(seq, behaviour == Behaviour::Block(slot));
                }
            }
            Behaviour::DropSlot(slot) => {
                if self.slots[slot].is_some_and(|victim| !self.running.contains(&victim.id)) {
                    self.drop_slot(slot, depth, calls)?;
                }
            }
            Behaviour::SelfRemove => {
                if let Some(seq) = this {
                    self.registered.retain(|entry| entry.2 != seq);
                }
            }
            Behaviour::SelfBlock => {
                if let Some(seq) = this.filter(|&seq| self.present(seq)) {
                    let _ = self.set_blocked(seq, true);
                }
            }
            Behaviour::SelfPriority(priority) => {
                if let Some(seq) = this.filter(|&seq| self.present(seq)) {
                    self.moves.push((seq, priority));
                }
            }
        }
        Ok(())
    }

    /// P1 order, P2 consumption, P4: handlers registered during a dispatch wait for the next one
    /// (M2), removed ones not yet reached do not run (M3), a nested dispatch sees the list as it
    /// is when it starts. X4: blocked ones are passed by when reached. X6: moves of priority
    /// apply when the outermost dispatch ends, even by a panic. Calls are appended to `calls` in
    /// the order they happen.
    fn dispatch(&mut self, depth: u32, calls: &mut Vec<u64>) -> Result<bool, Panicked> {
        self.dispatching += 1;
        let result = self.walk(depth, calls);
        self.dispatching -= 1;
        if self.dispatching == 0 {
            for (seq, priority) in std::mem::take(&mut self.moves) {
                if let Some(entry) = self.registered.iter_mut().find(|entry| entry.2 == seq) {
                    entry.1 = priority;
                }
            }
        }
        result
    }

    fn walk(&mut self, depth: u32, calls: &mut Vec<u64>) -> Result<bool, Panicked> {
        let mut order = self.registered.clone();
        order.sort_by_key(|&(_, priority, sequence)| (-i64::from(priority), sequence));
        for (id, _, registration) in order {
            if !self.present(registration) {
                continue; // unregistered earlier in this dispatch (maybe registered again since)
            }
            if self.blocked.contains(&registration) {
                continue; // X4: muted, skipped
            }
            let handler = self
                .slots
                .iter()
                .flatten()
                .find(|slot| slot.id == id)
                .copied()
                .expect("registered handlers are alive");
            if handler.kind == Kind::OtherClass {
                continue; // X1: another class's handler is passed by
            }
            calls.push(id);
            match handler.behaviour {
                Behaviour::Consume | Behaviour::MarkHandled => return Ok(true),
                Behaviour::Panic => return Err(Panicked),
                behaviour => {
                    self.running.push(id);
                    let result = self.effect(behaviour, handler.this_seq, depth, calls);
                    self.running.pop();
                    result?;
                }
            }
        }
        Ok(false)
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
        2 => (0..SLOTS).prop_map(Behaviour::Block),
        1 => (0..SLOTS).prop_map(Behaviour::Unblock),
        1 => (0..SLOTS).prop_map(Behaviour::DropSlot),
        1 => Just(Behaviour::Panic),
        1 => Just(Behaviour::SelfRemove),
        1 => Just(Behaviour::SelfBlock),
        1 => prop::sample::select(&PRIORITIES[..]).prop_map(Behaviour::SelfPriority),
    ]
}

/// What a handler's `Drop` does: no panic of its own, no self (it has no registration then).
fn drop_action() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        4 => Just(Behaviour::Pass),
        1 => (0..SLOTS).prop_map(Behaviour::Unregister),
        1 => (0..SLOTS, prop::sample::select(&PRIORITIES[..]))
            .prop_map(|(slot, priority)| Behaviour::Register(slot, priority)),
        1 => Just(Behaviour::Nested),
        1 => (0..SLOTS).prop_map(Behaviour::Block),
        1 => (0..SLOTS).prop_map(Behaviour::Unblock),
        1 => (0..SLOTS).prop_map(Behaviour::DropSlot),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        2 => Just(Kind::Dyn),
        2 => Just(Kind::Class),
        1 => Just(Kind::Category),
        1 => Just(Kind::OtherClass),
        2 => Just(Kind::SelfAwareDyn),
        2 => Just(Kind::SelfAwareClass),
    ]
}

/// The handler as registered: itself, or inside a typed handler of `kind`. Self-aware kinds are
/// made by the processor (see `run`).
fn registered_as(handler: Rc<Handler>, kind: Kind) -> Rc<dyn EventHandler> {
    match kind {
        Kind::Dyn => handler,
        Kind::Class => Rc::new(TypedHandler::<KeyPressedEvent, _>::new(move |key| {
            assert!(matches!(key.key, Key::A | Key::B));
            handler.act(None, None)
        })),
        Kind::Category => Rc::new(TypedHandler::<category::Keyboard, _>::new(move |event| {
            assert!(matches!(event, KeyboardEvent::Pressed(_)));
            handler.act(None, None)
        })),
        Kind::OtherClass => Rc::new(TypedHandler::<MouseMovedEvent, _>::new(move |_| {
            handler.act(None, None)
        })),
        Kind::SelfAwareDyn | Kind::SelfAwareClass => unreachable!("made by the processor"),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SLOTS, prop::sample::select(&PRIORITIES[..]), behaviour(), kind())
            .prop_map(|(slot, priority, behaviour, kind)| Op::Register { slot, priority, behaviour, kind }),
        1 => (0..SLOTS).prop_map(Op::Unregister),
        1 => (0..SLOTS).prop_map(Op::Drop),
        4 => Just(Op::Dispatch),
        1 => (0..SLOTS).prop_map(Op::Block),
        1 => (0..SLOTS).prop_map(Op::Unblock),
        1 => (0..SLOTS).prop_map(Op::BlockScoped),
        1 => Just(Op::ReleaseGuards),
    ]
}

/// Silences the handlers' own panics (expected), not the test's.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let planned = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|text| text.starts_with("handler ") && text.ends_with(" panics"));
            if !planned {
                default(info);
            }
        }));
    });
}

/// Runs `op` on the real processor; `Err` if it panicked.
fn catching(op: impl FnOnce() -> bool) -> Result<bool, Panicked> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(op)).map_err(|_| Panicked)
}

fn run(script: Vec<(Op, Behaviour)>) -> Result<(), TestCaseError> {
    quiet_panics();
    let processor = Rc::new(EventProcessor::new());
    let slots: Slots = Rc::new(RefCell::new((0..SLOTS).map(|_| None).collect()));
    let log = Rc::new(RefCell::new(Vec::new()));
    let depth = Rc::new(Cell::new(0));
    let running = Rc::new(RefCell::new(Vec::new()));
    let mut guards: Vec<(ScopedBlock, u64)> = Vec::new();
    let mut model = Model::default();
    let mut next_id = 0;
    for (op, on_drop) in script {
        log.borrow_mut().clear();
        let mut expected_calls = Vec::new();
        let (real, expected) = match op {
            Op::Register {
                slot,
                priority,
                behaviour,
                kind,
            } => {
                if model.slots[slot].is_none() {
                    next_id += 1;
                    let handler = Rc::new(Handler {
                        id: next_id,
                        behaviour,
                        on_drop,
                        log: Rc::clone(&log),
                        processor: Rc::downgrade(&processor),
                        slots: Rc::downgrade(&slots),
                        depth: Rc::clone(&depth),
                        running: Rc::clone(&running),
                    });
                    let mut this_seq = None;
                    let entry = match kind {
                        Kind::SelfAwareDyn | Kind::SelfAwareClass => {
                            let subscription = if kind == Kind::SelfAwareDyn {
                                processor.subscribe().priority(priority).self_aware().add_handler::<lumina::event::category::All>(move |this, event| {
                                        handler.act(Some(event), Some(this))
                                    })
                            } else {
                                processor
                                    .subscribe()
                                    .priority(priority)
                                    .self_aware()
                                    .add_handler::<KeyPressedEvent>(move |this, key| {
                                        assert!(matches!(key.key, Key::A | Key::B));
                                        handler.act(None, Some(this))
                                    })
                            };
                            prop_assert!(model.register(next_id, priority));
                            this_seq = Some(model.sequence);
                            (
                                next_id,
                                Rc::clone(subscription.handler()),
                                Some(subscription),
                            )
                        }
                        _ => (next_id, registered_as(handler, kind), None),
                    };
                    model.slots[slot] = Some(SlotModel {
                        id: next_id,
                        behaviour,
                        on_drop,
                        kind,
                        this_seq,
                    });
                    let made_registered = entry.2.is_some();
                    slots.borrow_mut()[slot] = Some(entry);
                    if made_registered {
                        continue;
                    }
                }
                let id = model.slots[slot].unwrap().id;
                let expected = model.register(id, priority);
                let handler = slot_handler(&slots, slot).unwrap();
                let registered = processor.register_event_handler(&handler, priority);
                prop_assert_eq!(registered, expected, "P1: duplicates refused");
                (Ok(registered), Ok(expected))
            }
            Op::Unregister(slot) => {
                let Some(handler) = slot_handler(&slots, slot) else {
                    continue;
                };
                let id = model.slots[slot].unwrap().id;
                (
                    Ok(processor.unregister_event_handler(&handler)),
                    Ok(model.unregister(id)),
                )
            }
            Op::Drop(slot) => {
                let real = catching(|| {
                    drop(take_slot(&slots, slot));
                    true
                });
                let expected = model.drop_slot(slot, 0, &mut expected_calls).map(|()| true);
                (real, expected)
            }
            Op::Dispatch => {
                let real =
                    catching(|| processor.dispatch(KeyPressedEvent::new(Key::A, Modifiers::NONE)));
                (real, model.dispatch(0, &mut expected_calls))
            }
            Op::Block(slot) | Op::Unblock(slot) => {
                let block = matches!(op, Op::Block(_));
                let handle = slot_handler(&slots, slot).and_then(|h| processor.handle_of(&h));
                let real = handle.is_some_and(|handle| {
                    if block {
                        processor.block(handle)
                    } else {
                        processor.unblock(handle)
                    }
                });
                let seq = model.slots[slot].and_then(|found| model.registration(found.id));
                // A2: an unblock of an unblocked handler is `false`.
                let lifted = seq.is_some_and(|seq| model.set_blocked(seq, block));
                (Ok(real), Ok(lifted))
            }
            Op::BlockScoped(slot) => {
                let handle = slot_handler(&slots, slot).and_then(|h| processor.handle_of(&h));
                let seq = model.slots[slot].and_then(|found| model.registration(found.id));
                prop_assert_eq!(handle.is_some(), seq.is_some());
                if let (Some(handle), Some(seq)) = (handle, seq) {
                    // A2: every guard adds its own block, blocked already or not.
                    let _ = model.set_blocked(seq, true);
                    guards.push((processor.block_scoped(handle), seq));
                }
                (Ok(true), Ok(true))
            }
            Op::ReleaseGuards => {
                // In the order made, every other one first: guards drop in any order (A2).
                let (even, odd): (Vec<_>, Vec<_>) = guards
                    .drain(..)
                    .enumerate()
                    .partition(|(index, _)| index % 2 == 0);
                for (_, (guard, seq)) in odd.into_iter().chain(even) {
                    drop(guard);
                    if model.present(seq) {
                        let _ = model.set_blocked(seq, false);
                    }
                }
                (Ok(true), Ok(true))
            }
        };
        // A panic skipped the resets of the handlers' own bookkeeping.
        depth.set(0);
        running.borrow_mut().clear();
        prop_assert_eq!(&*log.borrow(), &expected_calls, "P1/P3/P4/X4/X6 order");
        prop_assert_eq!(real, expected, "P2 result, or the same panic");
        prop_assert_eq!(processor.len(), model.registered.len());
        prop_assert!(!processor.is_broadcasting());
        for slot in 0..SLOTS {
            let Some(handler) = slot_handler(&slots, slot) else {
                continue;
            };
            let seq = model.registration(model.slots[slot].unwrap().id);
            let handle = processor.handle_of(&handler);
            prop_assert_eq!(handle.is_some(), seq.is_some(), "registered");
            if let (Some(handle), Some(seq)) = (handle, seq) {
                prop_assert_eq!(
                    processor.is_blocked(handle),
                    model.is_blocked(seq),
                    "X4 blocked"
                );
            }
        }
    }
    // The slots go first: the handlers' drop actions then find no slots and do nothing.
    drop(guards);
    drop(slots);
    Ok(())
}

proptest! {
    // Fewer cases under Miri (`.ci/run`), where each costs seconds, and no regression file
    // there (Miri isolates the test from the file system).
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn p1_p2_p3_p4_x1_x4_x6_random_scripts_match_the_reference_model(
        script in prop::collection::vec((op(), drop_action()), 1..60)
    ) {
        run(script)?;
    }
}
