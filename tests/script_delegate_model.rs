//! SD3 as a property: native and managed listeners of one script delegate behave as ONE list
//! (M1-M4, M6, M8) under random sequences of binds, unbinds, broadcasts and listeners that bind,
//! unbind, remove themselves or clear while a broadcast runs. A plain model says what must run.
//!
//! (A file of its own: its `clear`s reach the process-wide destroyed hook, which
//! `tests/script_delegates.rs` installs and checks.)

use lumina::{DelegateHandle, ScriptDelegate, script_delegate};
use proptest::prelude::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

/// The payload broadcast in every case.
#[script_delegate]
struct Tick {
    frame: u32,
}

/// What a listener does when it runs.
#[derive(Clone, Copy, Debug)]
enum Action {
    Nothing,
    /// Removes the listener with this key (if it exists).
    Remove(usize),
    RemoveSelf,
    AddNative,
    AddManaged,
    Clear,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    AddNative(Action),
    AddManaged(Action),
    Remove(usize),
    Broadcast,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => Just(Action::Nothing),
        2 => (0..12_usize).prop_map(Action::Remove),
        1 => Just(Action::RemoveSelf),
        1 => Just(Action::AddNative),
        1 => Just(Action::AddManaged),
        1 => Just(Action::Clear),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => action().prop_map(Step::AddNative),
        3 => action().prop_map(Step::AddManaged),
        1 => (0..12_usize).prop_map(Step::Remove),
        2 => Just(Step::Broadcast),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Native,
    Managed,
}

/// The model: every listener ever added, by key (= order added).
#[derive(Default)]
struct Model {
    listeners: Vec<(Kind, Action, bool)>,
    log: Vec<usize>,
}

impl Model {
    fn add(&mut self, kind: Kind, action: Action) {
        self.listeners.push((kind, action, true));
    }

    fn remove(&mut self, key: usize) {
        if let Some(listener) = self.listeners.get_mut(key) {
            listener.2 = false;
        }
    }

    fn broadcast(&mut self) {
        // Present at the start, natives first then managed, each side in the order added.
        let present: Vec<usize> = [Kind::Native, Kind::Managed]
            .into_iter()
            .flat_map(|kind| {
                self.listeners
                    .iter()
                    .enumerate()
                    .filter(move |(_, l)| l.0 == kind && l.2)
                    .map(|(key, _)| key)
                    .collect::<Vec<_>>()
            })
            .collect();
        for key in present {
            if !self.listeners[key].2 {
                continue; // removed or cleared before it was reached (M3, M6)
            }
            self.log.push(key);
            match self.listeners[key].1 {
                Action::Nothing => {}
                Action::Remove(other) => self.remove(other),
                Action::RemoveSelf => self.remove(key),
                Action::AddNative => self.add(Kind::Native, Action::Nothing),
                Action::AddManaged => self.add(Kind::Managed, Action::Nothing),
                Action::Clear => {
                    for listener in &mut self.listeners {
                        listener.2 = false;
                    }
                }
            }
        }
    }

    fn live(&self) -> (usize, usize) {
        let count = |kind| self.listeners.iter().filter(|l| l.0 == kind && l.2).count();
        (count(Kind::Native), count(Kind::Managed))
    }
}

/// How the real delegate knows a listener.
#[derive(Clone, Copy)]
enum Binding {
    Native(DelegateHandle),
    Managed(u64),
}

/// The real side: the delegate, each listener's binding and action, and the call log.
struct Real {
    delegate: ScriptDelegate<Tick>,
    bindings: RefCell<Vec<(Binding, Action)>>,
    log: RefCell<Vec<usize>>,
}

thread_local! {
    static REAL: RefCell<Option<Rc<Real>>> = const { RefCell::new(None) };
}

fn real() -> Rc<Real> {
    REAL.with(|real| real.borrow().clone().expect("a case is running"))
}

impl Real {
    fn add(self: &Rc<Self>, kind: Kind, action: Action) {
        let key = self.bindings.borrow().len();
        let binding = match kind {
            Kind::Native => Binding::Native(self.delegate.add_lambda(move |_| run(key))),
            Kind::Managed => {
                let context = std::ptr::without_provenance_mut::<c_void>(key);
                let id = self.delegate.bind_managed(Some(managed_thunk), context);
                assert_ne!(id, 0);
                Binding::Managed(id)
            }
        };
        self.bindings.borrow_mut().push((binding, action));
    }

    fn remove(&self, key: usize) {
        let binding = self.bindings.borrow().get(key).map(|b| b.0);
        match binding {
            Some(Binding::Native(handle)) => {
                self.delegate.remove(handle);
            }
            Some(Binding::Managed(id)) => {
                self.delegate.unbind_managed(id);
            }
            None => {}
        }
    }
}

extern "C" fn managed_thunk(context: *mut c_void, _payload: *const c_void) {
    run(context.addr());
}

/// A listener's body, on either side.
fn run(key: usize) {
    let real = real();
    real.log.borrow_mut().push(key);
    let action = real.bindings.borrow()[key].1;
    match action {
        Action::Nothing => {}
        Action::Remove(other) => real.remove(other),
        Action::RemoveSelf => real.remove(key),
        Action::AddNative => real.add(Kind::Native, Action::Nothing),
        Action::AddManaged => real.add(Kind::Managed, Action::Nothing),
        Action::Clear => real.delegate.clear(),
    }
}

proptest! {
    #[test]
    fn sd3_native_and_managed_listeners_behave_as_one_list(steps in prop::collection::vec(step(), 1..40)) {
        let real = Rc::new(Real {
            delegate: ScriptDelegate::new(),
            bindings: RefCell::new(Vec::new()),
            log: RefCell::new(Vec::new()),
        });
        REAL.with(|slot| *slot.borrow_mut() = Some(Rc::clone(&real)));
        let mut model = Model::default();
        for step in steps {
            match step {
                Step::AddNative(action) => {
                    real.add(Kind::Native, action);
                    model.add(Kind::Native, action);
                }
                Step::AddManaged(action) => {
                    real.add(Kind::Managed, action);
                    model.add(Kind::Managed, action);
                }
                Step::Remove(key) => {
                    real.remove(key);
                    model.remove(key);
                }
                Step::Broadcast => {
                    real.delegate.broadcast(&Tick { frame: 7 });
                    model.broadcast();
                }
            }
            prop_assert_eq!(&*real.log.borrow(), &model.log);
            let (natives, managed) = model.live();
            prop_assert_eq!(real.delegate.len() - real.delegate.managed_len(), natives);
            prop_assert_eq!(real.delegate.managed_len(), managed);
            prop_assert_eq!(real.delegate.is_bound(), natives + managed > 0);
        }
        REAL.with(|slot| *slot.borrow_mut() = None);
        real.delegate.clear();
    }
}

/// R4 and R1 as a property (R6): every managed binding reaches the host's release hook exactly
/// once, with the reason of the path that removed it, never while its thunk runs, and never runs
/// after its removal, under random sequences of native and managed bindings, owners,
/// clear/remove_all/prune/unbind, script generations begun and unloaded, delegates moved (out of
/// their `Rc` into a new place, through a `Box`, by `mem::replace`) and dropped. User code acts
/// at every point where it runs (a managed thunk, a native capture's `Drop`, the release hook):
/// it binds, unbinds, clears, broadcasts, drops delegates, begins and unloads generations.
mod r6_release_model {
    use lumina::script_delegate::{
        ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
    };
    use lumina::{ScriptDelegate, script_generation};
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::ffi::c_void;
    use std::rc::Rc;

    const SLOTS: usize = 2;
    const OWNERS: usize = 1;

    /// What user code does where it runs (and what a top-level step does).
    #[derive(Clone, Debug)]
    enum Act {
        Nothing,
        /// Binds a managed listener to the delegate in slot 0, whose thunk does the inner act.
        Bind(usize, Box<Act>),
        /// Adds a native listener (a member of the owner, if any) whose capture's `Drop` acts.
        Native(usize, Option<usize>, Box<Act>),
        Unbind(usize),
        Clear(usize),
        RemoveAll(usize, usize),
        DropOwner(usize),
        Broadcast(usize),
        Count(usize),
        Begin,
        Unload(usize),
        Drop(usize),
        /// Moves the delegate out of its `Rc` into a new place.
        Move(usize),
        /// `mem::replace`s the delegate in a `Box` with a fresh one: the old one goes to the
        /// second slot (if empty).
        Replace(usize, usize),
        New(usize),
        /// The next call of the release hook does this.
        OnRelease(Box<Act>),
    }

    fn leaf() -> impl Strategy<Value = Act> {
        prop_oneof![
            2 => Just(Act::Nothing),
            1 => (0..SLOTS).prop_map(|s| Act::Bind(s, Box::new(Act::Nothing))),
            2 => (0..16_usize).prop_map(Act::Unbind),
            2 => (0..SLOTS).prop_map(Act::Clear),
            1 => (0..SLOTS, 0..OWNERS).prop_map(|(s, o)| Act::RemoveAll(s, o)),
            1 => (0..OWNERS).prop_map(Act::DropOwner),
            1 => (0..SLOTS).prop_map(Act::Broadcast),
            1 => (0..SLOTS).prop_map(Act::Count),
            1 => Just(Act::Begin),
            2 => (0..4_usize).prop_map(Act::Unload),
            2 => (0..SLOTS).prop_map(Act::Drop),
            1 => (0..SLOTS).prop_map(Act::Move),
            1 => (0..SLOTS, 0..SLOTS).prop_map(|(a, b)| Act::Replace(a, b)),
            1 => (0..SLOTS).prop_map(Act::New),
        ]
    }

    fn act() -> impl Strategy<Value = Act> {
        leaf().prop_recursive(2, 8, 1, |inner| {
            prop_oneof![
                3 => (0..SLOTS, inner.clone()).prop_map(|(s, a)| Act::Bind(s, Box::new(a))),
                3 => (0..SLOTS, prop::option::weighted(0.7, 0..OWNERS), inner.clone())
                    .prop_map(|(s, o, a)| Act::Native(s, o, Box::new(a))),
                1 => inner.clone().prop_map(|a| Act::OnRelease(Box::new(a))),
                3 => inner,
            ]
        })
    }

    /// The model's view of one managed binding.
    #[derive(Debug)]
    enum State {
        Live,
        Unbound,
        /// Removed; the hook may give any of these reasons. More than one only when a
        /// generation unload was running: it reaches the delegates one at a time, so a path
        /// that user code takes meanwhile on a delegate it has not reached yet removes the
        /// binding first.
        Removed(Vec<ReleaseReason>),
    }

    struct Binding {
        id: u64,
        delegate: usize,
        generation: u64,
        act: Act,
        state: State,
        /// Removed by an unload that is still running (its delegate may not be reached yet).
        soft: bool,
        released: usize,
    }

    #[derive(Default)]
    struct World {
        active: bool,
        /// The delegate in each slot, with its serial number (kept across moves).
        slots: Vec<Option<(Rc<ScriptDelegate<()>>, usize)>>,
        next_serial: usize,
        owners: Vec<Option<Rc<()>>>,
        generations: Vec<u64>,
        unloaded: Vec<u64>,
        bindings: Vec<Binding>,
        running: Vec<usize>,
        on_release: Option<Act>,
        violations: Vec<String>,
    }

    thread_local! {
        static WORLD: RefCell<World> = RefCell::new(World::default());
    }

    fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
        WORLD.with_borrow_mut(f)
    }

    fn violation(message: String) {
        with(|w| w.violations.push(message));
    }

    /// A clone of the delegate in `slot`, with its serial.
    fn delegate(slot: usize) -> Option<(Rc<ScriptDelegate<()>>, usize)> {
        with(|w| w.slots[slot].clone())
    }

    /// The model side of a path that removes the live bindings of `serial` (or, for an unload,
    /// of `generation`) with `reason`.
    fn remove_in_model(select: impl Fn(&Binding) -> bool, reason: ReleaseReason, soft: bool) {
        with(|w| {
            for binding in w.bindings.iter_mut().filter(|b| select(b)) {
                match &mut binding.state {
                    State::Live => {
                        binding.state = State::Removed(vec![reason]);
                        binding.soft = soft;
                    }
                    State::Removed(reasons) if binding.soft => reasons.push(reason),
                    _ => {}
                }
            }
        });
    }

    /// Captured by a native listener: acts when dropped.
    struct OnDrop(Act);

    impl Drop for OnDrop {
        fn drop(&mut self) {
            run(&self.0);
        }
    }

    extern "C" fn thunk(context: *mut c_void, _payload: *const c_void) {
        let key = context.addr();
        let act = with(|w| {
            let binding = &w.bindings[key];
            let removed = match binding.state {
                State::Live => false,
                State::Removed(_) => !binding.soft,
                State::Unbound => true,
            };
            if removed {
                w.violations
                    .push(format!("binding {key} ran after its removal (M3, SD8)"));
            }
            w.running.push(key);
            binding.act.clone()
        });
        run(&act);
        with(|w| {
            let at = w.running.iter().rposition(|&k| k == key);
            if let Some(at) = at {
                w.running.remove(at);
            }
        });
    }

    extern "C" fn hook(
        _delegate: *const ScriptDelegateBase,
        bindings: *const ManagedBinding,
        count: usize,
        reason: ReleaseReason,
    ) {
        if !with(|w| w.active) {
            return; // another test's delegate
        }
        // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
        let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
        let then = with(|w| {
            for released in bindings {
                let key = released.context.addr();
                if w.running.contains(&key) {
                    w.violations
                        .push(format!("binding {key} released while its thunk runs (M4)"));
                }
                let Some(binding) = w.bindings.get_mut(key) else {
                    w.violations.push(format!("unknown binding {key} released"));
                    continue;
                };
                binding.released += 1;
                if binding.released > 1 || binding.id != released.id {
                    w.violations.push(format!(
                        "binding {key} released {} times (R4)",
                        binding.released
                    ));
                }
                match &binding.state {
                    State::Removed(reasons) if reasons.contains(&reason) => {}
                    state => w.violations.push(format!(
                        "binding {key} released as {reason:?}, model: {state:?} (R4)"
                    )),
                }
            }
            w.on_release.take()
        });
        if let Some(act) = then {
            run(&act);
        }
    }

    /// Does `act`, on the real delegates and in the model; nothing deeper than a few nested
    /// acts (a thunk that broadcasts its own delegate would recurse for ever).
    fn run(act: &Act) {
        thread_local!(static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
        if DEPTH.get() > 4 {
            return;
        }
        DEPTH.set(DEPTH.get() + 1);
        run_at_depth(act);
        DEPTH.set(DEPTH.get() - 1);
    }

    fn run_at_depth(act: &Act) {
        match act {
            Act::Nothing => {}
            Act::Bind(slot, inner) => {
                let Some((delegate, serial)) = delegate(*slot) else {
                    return;
                };
                let key = with(|w| w.bindings.len());
                let generation = script_generation::current();
                let context = std::ptr::without_provenance_mut(key);
                let id = delegate.bind_managed(Some(thunk), context);
                with(|w| {
                    w.bindings.push(Binding {
                        id,
                        delegate: serial,
                        generation,
                        act: (**inner).clone(),
                        state: if id == 0 { State::Unbound } else { State::Live },
                        soft: false,
                        released: 0,
                    });
                });
            }
            Act::Native(slot, owner, inner) => {
                let Some((delegate, _)) = delegate(*slot) else {
                    return;
                };
                let capture = OnDrop((**inner).clone());
                let owner = owner.and_then(|o| with(|w| w.owners[o].clone()));
                let _ = match owner {
                    Some(owner) => delegate.add_member(&owner, move |_, ()| {
                        let _ = &capture;
                    }),
                    None => delegate.add_lambda(move |()| {
                        let _ = &capture;
                    }),
                };
            }
            Act::Unbind(key) => {
                let Some((id, serial)) = with(|w| w.bindings.get(*key).map(|b| (b.id, b.delegate)))
                else {
                    return;
                };
                let found = with(|w| {
                    w.slots
                        .iter()
                        .flatten()
                        .find(|(_, s)| *s == serial)
                        .map(|(d, _)| Rc::clone(d))
                });
                let Some(delegate) = found else { return };
                let unbound = delegate.unbind_managed(id);
                with(|w| {
                    let binding = &mut w.bindings[*key];
                    let expected = match binding.state {
                        State::Live => Some(true),
                        State::Removed(_) if binding.soft => None,
                        _ => Some(false),
                    };
                    if expected.is_some_and(|e| e != unbound) {
                        w.violations.push(format!(
                            "unbind of {key} returned {unbound}, model: {:?}",
                            binding.state
                        ));
                    }
                    if unbound {
                        binding.state = State::Unbound;
                    }
                });
            }
            Act::Clear(slot) => {
                let Some((delegate, serial)) = delegate(*slot) else {
                    return;
                };
                remove_in_model(|b| b.delegate == serial, ReleaseReason::Cleared, false);
                delegate.clear();
            }
            Act::RemoveAll(slot, owner) => {
                let Some((delegate, _)) = delegate(*slot) else {
                    return;
                };
                if let Some(owner) = with(|w| w.owners[*owner].clone()) {
                    delegate.remove_all(&owner);
                }
            }
            Act::DropOwner(owner) => {
                let owner = with(|w| w.owners[*owner].take());
                drop(owner);
            }
            Act::Broadcast(slot) => {
                if let Some((delegate, _)) = delegate(*slot) {
                    delegate.broadcast(&());
                }
            }
            Act::Count(slot) => {
                // Prunes native listeners whose owner died (their captures' `Drop` acts).
                if let Some((delegate, _)) = delegate(*slot) {
                    let _ = delegate.managed_len();
                }
            }
            Act::Begin => {
                let generation = script_generation::begin();
                with(|w| w.generations.push(generation));
            }
            Act::Unload(index) => {
                let Some(generation) = with(|w| w.generations.get(*index).copied()) else {
                    return;
                };
                let first = with(|w| {
                    let first = !w.unloaded.contains(&generation);
                    w.unloaded.push(generation);
                    first
                });
                if first {
                    remove_in_model(
                        |b| b.generation == generation,
                        ReleaseReason::GenerationUnloaded,
                        true,
                    );
                }
                let result = script_generation::unload(generation);
                if result.is_some() != first {
                    violation(format!("unload of {generation} returned {result:?}"));
                }
                // The unload that marked them is over (not a nested one that found the
                // generation already unloading: until the outer one returns, a delegate
                // dropped from its release hook still releases them as `Destroyed`).
                if first {
                    with(|w| {
                        for binding in &mut w.bindings {
                            if binding.generation == generation {
                                binding.soft = false;
                            }
                        }
                    });
                }
            }
            Act::Drop(slot) => {
                // Only a delegate no running operation holds: safe code cannot drop one that
                // is borrowed.
                let taken = with(|w| match &w.slots[*slot] {
                    Some((delegate, _)) if Rc::strong_count(delegate) == 1 => w.slots[*slot].take(),
                    _ => None,
                });
                if let Some((delegate, serial)) = taken {
                    remove_in_model(|b| b.delegate == serial, ReleaseReason::Destroyed, false);
                    drop(delegate);
                }
            }
            Act::Move(slot) => {
                let taken = with(|w| match &w.slots[*slot] {
                    Some((delegate, _)) if Rc::strong_count(delegate) == 1 => w.slots[*slot].take(),
                    _ => None,
                });
                if let Some((delegate, serial)) = taken {
                    let Ok(value) = Rc::try_unwrap(delegate) else {
                        unreachable!("the only reference");
                    };
                    let boxed = Box::new(value);
                    let moved = Rc::new(*boxed);
                    with(|w| w.slots[*slot] = Some((moved, serial)));
                }
            }
            Act::Replace(slot, into) => {
                let taken = with(|w| match (&w.slots[*slot], &w.slots[*into]) {
                    (Some((delegate, _)), None) if Rc::strong_count(delegate) == 1 => {
                        w.slots[*slot].take()
                    }
                    _ => None,
                });
                if let Some((delegate, serial)) = taken {
                    let Ok(value) = Rc::try_unwrap(delegate) else {
                        unreachable!("the only reference");
                    };
                    let mut boxed = Box::new(value);
                    let old = std::mem::replace(&mut *boxed, ScriptDelegate::new());
                    with(|w| {
                        let fresh = w.next_serial;
                        w.next_serial += 1;
                        w.slots[*slot] = Some((Rc::new(*boxed), fresh));
                        w.slots[*into] = Some((Rc::new(old), serial));
                    });
                }
            }
            Act::New(slot) => with(|w| {
                if w.slots[*slot].is_none() {
                    let serial = w.next_serial;
                    w.next_serial += 1;
                    w.slots[*slot] = Some((Rc::new(ScriptDelegate::new()), serial));
                }
            }),
            Act::OnRelease(inner) => with(|w| w.on_release = Some((**inner).clone())),
        }
    }

    /// At least 512 cases in a normal run; 3 under Miri (`.ci/run`).
    fn cases() -> u32 {
        if cfg!(miri) { 3 } else { 512 }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: cases(),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        #[test]
        fn r6_r4_each_managed_binding_is_released_once_with_its_reason_never_while_running(
            steps in prop::collection::vec(act(), 1..40)
        ) {
            check(&steps)?;
        }
    }

    /// Runs `steps`, then tears everything down, and checks every binding against the model.
    fn check(steps: &[Act]) -> Result<(), TestCaseError> {
        set_destroyed_hook(Some(hook));
        with(|w| {
            *w = World {
                active: true,
                slots: (0..SLOTS)
                    .map(|serial| Some((Rc::new(ScriptDelegate::new()), serial)))
                    .collect(),
                next_serial: SLOTS,
                owners: (0..OWNERS).map(|_| Some(Rc::new(()))).collect(),
                ..World::default()
            };
        });
        for step in steps {
            run(step);
        }
        // Teardown: everything goes (what it runs may make more, a few rounds at most).
        with(|w| w.on_release = None);
        for _ in 0..8 {
            for slot in 0..SLOTS {
                run(&Act::Drop(slot));
            }
            for owner in 0..OWNERS {
                run(&Act::DropOwner(owner));
            }
            let generations = with(|w| w.generations.len());
            for index in 0..generations {
                run(&Act::Unload(index));
            }
            with(|w| w.on_release = None);
        }
        let world = with(std::mem::take);
        for (key, binding) in world.bindings.iter().enumerate() {
            let expected = usize::from(!matches!(binding.state, State::Unbound));
            prop_assert_eq!(
                binding.released,
                expected,
                "binding {} ({:?}) released {} times",
                key,
                binding.state,
                binding.released
            );
        }
        prop_assert!(world.violations.is_empty(), "{:?}", world.violations);
        Ok(())
    }

    /// A script the property once found: a release hook, while generation 0 unloads, drops a
    /// delegate whose listeners' captures unload generation 0 again (nested, `None`) and drop
    /// the delegate that holds the generation's next bindings, which it releases as
    /// `Destroyed`. The model's nested unload had ended the outer one's window.
    #[test]
    fn r6_r4_a_release_hook_that_drops_a_delegate_during_an_unload() {
        use Act::*;
        let steps = [
            Native(0, Some(0), Box::new(Count(0))),
            Native(0, None, Box::new(Unload(0))),
            Native(1, None, Box::new(Drop(1))),
            Bind(1, Box::new(Native(0, Some(0), Box::new(RemoveAll(0, 0))))),
            Native(0, None, Box::new(Move(1))),
            OnRelease(Box::new(New(1))),
            Drop(1),
            Native(0, Some(0), Box::new(Nothing)),
            Drop(1),
            Bind(0, Box::new(Bind(1, Box::new(Drop(1))))),
            Native(1, None, Box::new(Bind(1, Box::new(Unbind(12))))),
            Replace(0, 1),
            Bind(1, Box::new(Drop(0))),
            Native(0, Some(0), Box::new(Begin)),
            Bind(0, Box::new(Nothing)),
            Native(1, Some(0), Box::new(Unbind(3))),
            Native(0, None, Box::new(DropOwner(0))),
            Native(0, Some(0), Box::new(New(0))),
            Drop(0),
            Bind(
                1,
                Box::new(Native(1, Some(0), Box::new(Bind(0, Box::new(Nothing))))),
            ),
            Native(
                0,
                Some(0),
                Box::new(Native(1, None, Box::new(Broadcast(1)))),
            ),
            Bind(1, Box::new(Clear(0))),
            Native(0, Some(0), Box::new(DropOwner(0))),
            Native(1, None, Box::new(Drop(0))),
            Bind(1, Box::new(Native(0, Some(0), Box::new(Unbind(10))))),
            Bind(1, Box::new(Bind(1, Box::new(Count(1))))),
            OnRelease(Box::new(Drop(1))),
            Native(1, Some(0), Box::new(Native(1, None, Box::new(Move(0))))),
            Replace(0, 0),
            Native(
                0,
                Some(0),
                Box::new(Native(1, Some(0), Box::new(DropOwner(0)))),
            ),
            Bind(0, Box::new(Bind(0, Box::new(New(0))))),
            Bind(0, Box::new(Unbind(12))),
            Native(1, Some(0), Box::new(Count(1))),
            Unload(0),
            Bind(1, Box::new(Move(1))),
            Bind(0, Box::new(New(1))),
            Native(1, Some(0), Box::new(Native(1, None, Box::new(Nothing)))),
            OnRelease(Box::new(Bind(1, Box::new(New(0))))),
        ];
        check(&steps).unwrap();
    }
}
