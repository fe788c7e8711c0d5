//! Behaviour of the single-cast `Delegate` (rules S1, S2, S3).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use lumina::Delegate;

/// Runs `f`, expecting a panic, and returns its message.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else {
        panic!("panic payload is not a string")
    }
}

struct Counter {
    base: i32,
    calls: Cell<u32>,
}

impl Counter {
    fn add(&self, x: i32) -> i32 {
        self.calls.set(self.calls.get() + 1);
        self.base + x
    }
}

fn double(x: i32) -> i32 {
    x * 2
}

#[test]
fn s1_default_and_new_are_unbound() {
    let by_default: Delegate<dyn Fn(i32) -> i32> = Delegate::default();
    let by_new: Delegate<dyn Fn()> = Delegate::new();
    assert!(!by_default.is_bound());
    assert!(!by_new.is_bound());
    assert!(by_default.callable().is_none());
    assert_eq!(format!("{by_new:?}"), "Delegate { bound: false }");
}

#[test]
fn s1_create_lambda_binds_the_closure() {
    let seen = Rc::new(Cell::new(0));
    let sink = Rc::clone(&seen);
    let delegate = Delegate::<dyn Fn(i32)>::create_lambda(move |x| sink.set(x));
    assert!(delegate.is_bound());
    delegate.execute(42);
    assert_eq!(seen.get(), 42);
}

#[test]
fn s1_create_static_binds_a_plain_function() {
    let delegate = Delegate::<dyn Fn(i32) -> i32>::create_static(double);
    assert!(delegate.is_bound());
    assert_eq!(delegate.execute(21), 42);
}

#[test]
fn s1_create_member_calls_the_method_on_its_object() {
    let counter = Rc::new(Counter {
        base: 100,
        calls: Cell::new(0),
    });
    let delegate = Delegate::<dyn Fn(i32) -> i32>::create_member(&counter, Counter::add);
    assert!(delegate.is_bound());
    assert!(delegate.is_bound_to(&counter));
    assert_eq!(delegate.execute(5), 105);
    assert_eq!(delegate.execute(1), 101);
    assert_eq!(counter.calls.get(), 2);
}

#[test]
fn s1_create_member_holds_its_object_weakly() {
    let counter = Rc::new(Counter {
        base: 0,
        calls: Cell::new(0),
    });
    let delegate = Delegate::<dyn Fn(i32) -> i32>::create_member(&counter, Counter::add);
    let copy = delegate.clone();
    assert_eq!(
        Rc::strong_count(&counter),
        1,
        "the delegate must not keep the object alive"
    );
    let probe = Rc::downgrade(&counter);
    drop(counter);
    assert!(probe.upgrade().is_none(), "the object was dropped");
    assert!(!delegate.is_bound());
    assert!(!copy.is_bound());
    assert!(delegate.callable().is_none());
    assert_eq!(delegate.execute_if_bound(1), None);
}

#[test]
fn s1_is_bound_to_names_only_the_bound_object() {
    let mine = Rc::new(Counter {
        base: 0,
        calls: Cell::new(0),
    });
    let other = Rc::new(Counter {
        base: 0,
        calls: Cell::new(0),
    });
    let member = Delegate::<dyn Fn(i32) -> i32>::create_member(&mine, Counter::add);
    let lambda = Delegate::<dyn Fn(i32) -> i32>::create_lambda(|x| x);
    assert!(member.is_bound_to(&mine));
    assert!(!member.is_bound_to(&other));
    assert!(!lambda.is_bound_to(&mine));
}

#[test]
fn s1_unbind_and_clone_are_independent() {
    let original = Delegate::<dyn Fn() -> u8>::create_lambda(|| 7);
    let mut copy = original.clone();
    copy.unbind();
    assert!(!copy.is_bound());
    assert!(original.is_bound());
    assert_eq!(original.execute(), 7);
    // Rebinding by assignment replaces the callable.
    copy = Delegate::<dyn Fn() -> u8>::create_lambda(|| 9);
    assert_eq!(copy.execute(), 9);
}

#[test]
fn s1_unbind_drops_the_callable() {
    struct Probe(Rc<Cell<u32>>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    let drops = Rc::new(Cell::new(0));
    let probe = Probe(Rc::clone(&drops));
    let mut delegate = Delegate::<dyn Fn()>::create_lambda(move || {
        let _ = &probe;
    });
    assert_eq!(drops.get(), 0);
    delegate.unbind();
    assert_eq!(drops.get(), 1);
}

#[test]
fn s1_every_arity_up_to_six_executes() {
    assert_eq!(Delegate::<dyn Fn() -> u8>::create_lambda(|| 1).execute(), 1);
    assert_eq!(
        Delegate::<dyn Fn(u8) -> u8>::create_lambda(|a| a).execute(2),
        2
    );
    let sum2 = Delegate::<dyn Fn(u8, u8) -> u8>::create_lambda(|a, b| a + b);
    assert_eq!(sum2.execute(1, 2), 3);
    let sum3 = Delegate::<dyn Fn(u8, u8, u8) -> u8>::create_lambda(|a, b, c| a + b + c);
    assert_eq!(sum3.execute(1, 2, 3), 6);
    let sum4 = Delegate::<dyn Fn(u8, u8, u8, u8) -> u8>::create_lambda(|a, b, c, d| a + b + c + d);
    assert_eq!(sum4.execute(1, 2, 3, 4), 10);
    let sum5 = Delegate::<dyn Fn(u8, u8, u8, u8, u8) -> u8>::create_lambda(|a, b, c, d, e| {
        a + b + c + d + e
    });
    assert_eq!(sum5.execute(1, 2, 3, 4, 5), 15);
    let concat =
        Delegate::<dyn Fn(String, u8, char, bool, Vec<u8>, (u8, u8)) -> String>::create_lambda(
            |s, n, c, b, v, (x, y)| format!("{s}{n}{c}{b}{}{x}{y}", v.len()),
        );
    assert_eq!(
        concat.execute("s".to_owned(), 1, 'c', true, vec![0; 3], (4, 5)),
        "s1ctrue345"
    );
}

#[test]
fn s2_execute_unbound_panics_naming_type_and_the_way_out() {
    let unbound: Delegate<dyn Fn(i32) -> bool> = Delegate::new();
    let message = panic_message(|| {
        unbound.execute(1);
    });
    assert!(
        message.contains("Delegate<dyn"),
        "names the delegate type: {message}"
    );
    assert!(message.contains("execute"), "{message}");
    assert!(
        message.contains("is_bound()"),
        "names is_bound(): {message}"
    );
    assert!(
        message.contains("execute_if_bound"),
        "names execute_if_bound: {message}"
    );
}

#[test]
fn s2_execute_after_the_object_died_panics_with_the_same_message() {
    let counter = Rc::new(Counter {
        base: 0,
        calls: Cell::new(0),
    });
    let delegate = Delegate::<dyn Fn(i32) -> i32>::create_member(&counter, Counter::add);
    drop(counter);
    let message = panic_message(|| {
        delegate.execute(1);
    });
    assert!(message.contains("nothing bound"), "{message}");
    assert!(message.contains("object was dropped"), "{message}");
    assert!(message.contains("execute_if_bound"), "{message}");
}

#[test]
fn s2_execute_after_unbind_panics() {
    let mut delegate = Delegate::<dyn Fn()>::create_lambda(|| {});
    delegate.execute();
    delegate.unbind();
    let message = panic_message(|| delegate.execute());
    assert!(message.contains("is_bound()"), "{message}");
}

#[test]
fn s3_execute_if_bound_returns_the_result_for_every_return_type() {
    assert_eq!(
        Delegate::<dyn Fn(i32) -> bool>::create_lambda(|x| x > 0).execute_if_bound(3),
        Some(true)
    );
    assert_eq!(
        Delegate::<dyn Fn() -> String>::create_lambda(|| "hi".to_owned()).execute_if_bound(),
        Some("hi".to_owned())
    );
    assert_eq!(
        Delegate::<dyn Fn(i32)>::create_lambda(|_| {}).execute_if_bound(3),
        Some(())
    );
    let counter = Rc::new(Counter {
        base: 10,
        calls: Cell::new(0),
    });
    assert_eq!(
        Delegate::<dyn Fn(i32) -> i32>::create_member(&counter, Counter::add).execute_if_bound(1),
        Some(11)
    );
}

#[test]
fn s3_execute_if_bound_unbound_returns_none_without_calling_or_panicking() {
    assert_eq!(
        Delegate::<dyn Fn(i32) -> bool>::new().execute_if_bound(3),
        None
    );
    assert_eq!(
        Delegate::<dyn Fn() -> String>::default().execute_if_bound(),
        None
    );
    assert_eq!(Delegate::<dyn Fn()>::new().execute_if_bound(), None);
    let counter = Rc::new(Counter {
        base: 0,
        calls: Cell::new(0),
    });
    let delegate = Delegate::<dyn Fn(i32) -> i32>::create_member(&counter, Counter::add);
    let weak = Rc::downgrade(&counter);
    drop(counter);
    assert_eq!(delegate.execute_if_bound(1), None);
    assert!(weak.upgrade().is_none());
}

#[test]
fn s3_callable_stays_alive_while_it_runs_even_if_the_delegate_is_replaced() {
    // The callable clones itself out of the delegate before running, so a callable that replaces
    // the delegate holding it (through a RefCell the game owns) finishes on live captures.
    use std::cell::RefCell;
    struct Probe(Rc<Cell<bool>>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let slot: Rc<RefCell<Delegate<dyn Fn() -> bool>>> = Rc::new(RefCell::new(Delegate::new()));
    let dropped = Rc::new(Cell::new(false));
    let probe = Probe(Rc::clone(&dropped));
    let inner_slot = Rc::clone(&slot);
    *slot.borrow_mut() = Delegate::<dyn Fn() -> bool>::create_lambda(move || {
        *inner_slot.borrow_mut() = Delegate::new();
        // Still running: our captures are alive.
        !probe.0.get()
    });
    let callable = slot.borrow().callable().expect("bound");
    assert!(callable(), "captures must outlive the replacement");
    assert!(!slot.borrow().is_bound());
    assert!(!dropped.get());
    drop(callable);
    assert!(dropped.get(), "dropped once the last clone is gone");
}

thread_local! {
    /// Where the last panic on this thread happened, when a test asked to record it.
    static PANIC_LOCATION: std::cell::RefCell<Option<Option<(String, u32)>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f`, expecting a panic, and returns the file and line the panic reports.
fn panic_location(f: impl FnOnce()) -> (String, u32) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let recorded = PANIC_LOCATION.with(|slot| {
                let mut slot = slot.borrow_mut();
                match slot.as_mut() {
                    Some(location) => {
                        *location = info.location().map(|l| (l.file().to_owned(), l.line()));
                        true
                    }
                    None => false,
                }
            });
            if !recorded {
                default(info);
            }
        }));
    });
    PANIC_LOCATION.with(|slot| *slot.borrow_mut() = Some(None));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    let location = PANIC_LOCATION.with(|slot| slot.borrow_mut().take());
    assert!(result.is_err(), "expected a panic");
    location.flatten().expect("the hook saw the panic")
}

#[test]
fn s2_execute_unbound_panic_points_at_the_callers_line() {
    let unbound: Delegate<dyn Fn(u8)> = Delegate::new();
    let expected_line = line!() + 1;
    let (file, line) = panic_location(|| unbound.execute(1));
    assert!(
        file.ends_with("delegate.rs") && file.contains("tests"),
        "{file}"
    );
    assert_eq!(
        line, expected_line,
        "the panic names the call of execute, not lumina's code"
    );
}
