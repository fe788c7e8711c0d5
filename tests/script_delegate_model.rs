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
            prop_assert_eq!(real.delegate.native_len(), natives);
            prop_assert_eq!(real.delegate.managed_len(), managed);
            prop_assert_eq!(real.delegate.is_bound(), natives + managed > 0);
        }
        REAL.with(|slot| *slot.borrow_mut() = None);
        real.delegate.clear();
    }
}
