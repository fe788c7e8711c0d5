//! Rule M13: every place where lumina runs user code inside one of its operations is a
//! re-entrancy point, and the rules hold as if that code ran exactly there. One test per hole
//! found by an adversarial review (the `m13_1`...`m13_4` tests), through the public API only;
//! the model-based tests (`multicast_model.rs`) act at every point at random.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use lumina::{DelegateHandle, MulticastDelegate};

thread_local! {
    static OWNER: RefCell<Option<Rc<u32>>> = const { RefCell::new(None) };
    static ACTION: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// A broadcast argument whose `Clone` runs the thread's `ACTION` (once).
struct Arg;

impl Clone for Arg {
    fn clone(&self) -> Self {
        if let Some(action) = ACTION.with(|a| a.borrow_mut().take()) {
            action();
        }
        Arg
    }
}

#[test]
fn m13_1_an_argument_clone_that_drops_the_owner_stops_the_member_binding() {
    // The reproduction: the clone for the member binding drops the last `Rc` of its
    // owner. Before the fix the binding still ran, and panicked inside lumina (M9).
    let d = MulticastDelegate::<dyn Fn(Arg)>::new();
    let owner = Rc::new(5u32);
    let ran = Rc::new(Cell::new(0));
    let member_ran = Rc::clone(&ran);
    let _m = d.add_member(&owner, move |_o: &u32, _a: Arg| {
        member_ran.set(member_ran.get() + 1)
    });
    let lambda_ran = Rc::clone(&ran);
    let _l = d.add_lambda(move |_a: Arg| lambda_ran.set(lambda_ran.get() + 10));
    OWNER.with(|o| *o.borrow_mut() = Some(owner));
    ACTION.with(|a| {
        *a.borrow_mut() = Some(Box::new(|| drop(OWNER.with(|o| o.borrow_mut().take()))));
    });
    d.broadcast(Arg);
    assert_eq!(
        ran.get(),
        10,
        "only the lambda ran: the member's owner died in the clone"
    );
    assert_eq!(d.len(), 1, "the dead binding no longer counts (M8)");
}

#[test]
fn m13_1_an_argument_clone_that_removes_its_subscriber_stops_it() {
    let d = Rc::new(MulticastDelegate::<dyn Fn(Arg)>::new());
    let log = Rc::new(RefCell::new(Vec::new()));
    let first_log = Rc::clone(&log);
    let first = d.add_lambda(move |_| first_log.borrow_mut().push("first"));
    let second_log = Rc::clone(&log);
    let _second = d.add_lambda(move |_| second_log.borrow_mut().push("second"));
    let inner = Rc::clone(&d);
    // The clone made for `first` removes `first`: M3 says it must not run, and the clone is
    // not wasted (the last subscriber still gets the original, M11).
    ACTION.with(|a| *a.borrow_mut() = Some(Box::new(move || assert!(inner.remove(first)))));
    d.broadcast(Arg);
    assert_eq!(*log.borrow(), ["second"]);
    assert_eq!(d.len(), 1);
}

#[test]
fn m13_1_the_clone_for_a_removed_subscriber_waits_for_the_next_one() {
    // Counts clones: removed in its own clone, a subscriber costs no extra clone (M11: at most
    // N - 1 for N subscribers).
    thread_local!(static CLONES: Cell<usize> = const { Cell::new(0) });
    struct Counted;
    impl Clone for Counted {
        fn clone(&self) -> Self {
            CLONES.with(|c| c.set(c.get() + 1));
            if let Some(action) = ACTION.with(|a| a.borrow_mut().take()) {
                action();
            }
            Counted
        }
    }
    let d = Rc::new(MulticastDelegate::<dyn Fn(Counted)>::new());
    let calls = Rc::new(Cell::new(0));
    let handles: Vec<DelegateHandle> = (0..3)
        .map(|_| {
            let calls = Rc::clone(&calls);
            d.add_lambda(move |_| calls.set(calls.get() + 1))
        })
        .collect();
    let inner = Rc::clone(&d);
    let first = handles[0];
    ACTION.with(|a| *a.borrow_mut() = Some(Box::new(move || assert!(inner.remove(first)))));
    d.broadcast(Counted);
    assert_eq!(calls.get(), 2);
    assert_eq!(
        CLONES.with(Cell::get),
        1,
        "one clone, used by the second subscriber"
    );
}

/// A capture whose `Drop` runs a closure.
struct OnDrop(Option<Box<dyn FnOnce()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(action) = self.0.take() {
            action();
        }
    }
}

fn on_drop(action: impl FnOnce() + 'static) -> OnDrop {
    OnDrop(Some(Box::new(action)))
}

#[test]
fn m13_3_a_drop_during_settle_that_broadcasts_into_a_panic_does_not_abort() {
    // A subscriber removes itself and panics; its capture's Drop (run when the list settles,
    // while the thread unwinds) broadcasts the same delegate, whose other subscriber panics
    // again. Before: "panic in a destructor during cleanup" and an abort.
    let d = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let handle = Rc::new(Cell::new(DelegateHandle::default()));
    let _other = d.add_lambda(|x| {
        if x == 2 {
            panic::panic_any("second panic");
        }
    });
    let (inner, me) = (Rc::clone(&d), Rc::clone(&handle));
    let weak = Rc::downgrade(&d);
    let guard = on_drop(move || {
        if let Some(d) = weak.upgrade() {
            d.broadcast(2);
        }
    });
    handle.set(d.add_lambda(move |x| {
        let _ = &guard;
        if x == 1 {
            inner.remove(me.get());
            panic::panic_any("first panic");
        }
    }));
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let result = panic::catch_unwind(AssertUnwindSafe(|| d.broadcast(1)));
    panic::set_hook(hook);
    let payload = result.expect_err("the first panic reaches the broadcaster");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"first panic"));
    assert!(!d.is_broadcasting());
    assert_eq!(
        d.len(),
        1,
        "the panicking subscriber removed itself; the other stays"
    );
    d.broadcast(0);
}

#[test]
fn m13_3_a_panicking_drop_after_a_self_removal_propagates_when_the_broadcast_ends() {
    // The callable of a subscriber that removed itself is dropped when the broadcast ends (M4):
    // every other subscriber has run by then, and the drop's panic reaches the broadcaster
    // (M13) with the delegate consistent (M7).
    let d = Rc::new(MulticastDelegate::<dyn Fn()>::new());
    let me = Rc::new(Cell::new(DelegateHandle::default()));
    let guard = on_drop(|| panic::panic_any("drop panic"));
    let (inner, handle) = (Rc::clone(&d), Rc::clone(&me));
    me.set(d.add_lambda(move || {
        let _ = &guard;
        inner.remove(handle.get()); // running: dropped when the broadcast ends
    }));
    let later = Rc::new(Cell::new(false));
    let flag = Rc::clone(&later);
    let _after = d.add_lambda(move || flag.set(true));
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let result = panic::catch_unwind(AssertUnwindSafe(|| d.broadcast()));
    panic::set_hook(hook);
    assert_eq!(
        result
            .expect_err("the drop's panic propagates")
            .downcast_ref::<&str>(),
        Some(&"drop panic")
    );
    assert!(later.get(), "the drop comes after every call");
    assert!(!d.is_broadcasting());
    assert_eq!(d.len(), 1);
    later.set(false);
    d.broadcast();
    assert!(later.get());
}

#[test]
fn m13_4_clear_during_a_broadcast_marks_everything_before_any_drop_runs() {
    // A capture dropped by `clear` broadcasts the delegate: it must see nobody of those the
    // same clear removes (outside a broadcast the same code runs nobody either).
    for during_broadcast in [false, true] {
        let d = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
        let runs = Rc::new(RefCell::new(Vec::new()));
        let weak = Rc::downgrade(&d);
        let guard = on_drop(move || {
            if let Some(d) = weak.upgrade() {
                d.broadcast(2);
            }
        });
        let first_runs = Rc::clone(&runs);
        let inner = Rc::clone(&d);
        let _first = d.add_lambda(move |x| {
            let _ = &guard;
            first_runs.borrow_mut().push(("first", x));
            if x == 1 {
                inner.clear();
            }
        });
        for name in ["second", "third"] {
            let runs = Rc::clone(&runs);
            let _ = d.add_lambda(move |x| runs.borrow_mut().push((name, x)));
        }
        if during_broadcast {
            d.broadcast(1);
        } else {
            d.clear();
        }
        let expected: &[(&str, u32)] = if during_broadcast {
            &[("first", 1)]
        } else {
            &[]
        };
        assert_eq!(
            *runs.borrow(),
            expected,
            "during a broadcast: {during_broadcast}"
        );
        assert_eq!(d.len(), 0);
    }
}

#[test]
fn m13_4_a_panicking_drop_inside_clear_still_clears() {
    for during_broadcast in [false, true] {
        let d = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
        let dropped = Rc::new(Cell::new(0));
        for index in 0..3 {
            let dropped = Rc::clone(&dropped);
            let guard = on_drop(move || {
                dropped.set(dropped.get() + 1);
                if index < 2 {
                    panic::panic_any("drop panic");
                }
            });
            let _ = d.add_lambda(move |_| {
                let _ = &guard;
            });
        }
        let inner = Rc::clone(&d);
        let _clearer = d.subscribe().priority(1).add_shared(Rc::new(move |x| {
            if x == 1 {
                inner.clear();
            }
        }));
        let hook = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            if during_broadcast {
                d.broadcast(1);
            } else {
                d.clear();
            }
        }));
        panic::set_hook(hook);
        assert_eq!(
            result
                .expect_err("the first panic propagates")
                .downcast_ref::<&str>(),
            Some(&"drop panic")
        );
        assert_eq!(
            d.len(),
            0,
            "a clear still clears (during a broadcast: {during_broadcast})"
        );
        assert_eq!(
            dropped.get(),
            3,
            "every capture was dropped, the two panics included"
        );
        assert!(!d.is_broadcasting());
        let ran = Rc::new(Cell::new(false));
        let flag = Rc::clone(&ran);
        let _ = d.add_lambda(move |_| flag.set(true));
        d.broadcast(0);
        assert!(ran.get(), "the delegate works normally afterwards");
    }
}

#[test]
fn m13_4_remove_all_during_a_broadcast_is_atomic_too() {
    let d = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let owner = Rc::new(());
    let runs = Rc::new(RefCell::new(Vec::new()));
    let weak = Rc::downgrade(&d);
    let guard = Rc::new(on_drop(move || {
        if let Some(d) = weak.upgrade() {
            d.broadcast(2);
        }
    }));
    for name in ["a", "b", "c"] {
        let runs = Rc::clone(&runs);
        let guard = Rc::clone(&guard);
        let _ = d.add_member(&owner, move |_: &(), x| {
            let _ = &guard;
            runs.borrow_mut().push((name, x));
        });
    }
    drop(guard); // the last member's closure holds the last reference
    let (inner, target) = (Rc::clone(&d), Rc::clone(&owner));
    let _remover = d.subscribe().priority(1).add_shared(Rc::new(move |x| {
        if x == 1 {
            assert_eq!(inner.remove_all(&target), 3);
        }
    }));
    d.broadcast(1);
    assert!(
        runs.borrow().is_empty(),
        "nobody removed ran, not even in the drop's broadcast"
    );
    assert_eq!(d.len(), 1);
    d.clear(); // the remover holds the delegate: break the cycle
}

lumina::declare_multicast_delegate!(OnArgCopy(arg: Arg, count: u32));
lumina::declare_multicast_delegate!(OnArgOwned(arg: Arg, name: String));

/// A declared delegate's argument clone is written by its expansion and runs in the shared loop
/// out of line, on one of two paths (plain arguments; arguments with drop glue, each in its own
/// guard): on both, a clone that removes the subscriber it is made for keeps that subscriber
/// from running (M3, M13), the clone goes to the next one (M11), and the rest run.
#[test]
fn m13_a_declared_delegates_argument_clone_that_removes_its_subscriber_stops_it_on_both_paths() {
    fn check<D>(
        delegate: Rc<D>,
        add: impl Fn(&D, Box<dyn Fn()>) -> DelegateHandle,
        remove: impl Fn(&D, DelegateHandle) -> bool + 'static,
        broadcast: impl Fn(&D),
    ) where
        D: 'static,
    {
        let log = Rc::new(RefCell::new(Vec::new()));
        let push = |name: &'static str| {
            let log = Rc::clone(&log);
            Box::new(move || log.borrow_mut().push(name)) as Box<dyn Fn()>
        };
        let first = add(&delegate, push("first"));
        let _second = add(&delegate, push("second"));
        let _third = add(&delegate, push("third"));
        // The first clone is made for the first subscriber, before its check: it removes that
        // subscriber, which then does not run; the clone waits for the second.
        let target = Rc::clone(&delegate);
        ACTION.with(|a| {
            *a.borrow_mut() = Some(Box::new(move || {
                assert!(remove(&target, first));
            }));
        });
        broadcast(&delegate);
        assert_eq!(*log.borrow(), ["second", "third"]);
        assert!(
            ACTION.with(|a| a.borrow().is_none()),
            "the clone ran its action"
        );
    }
    check(
        Rc::new(OnArgCopy::new()),
        |d, f| d.add_lambda(move |_: Arg, _: u32| f()),
        |d, h| d.remove(h),
        |d| d.broadcast(Arg, 7),
    );
    check(
        Rc::new(OnArgOwned::new()),
        |d, f| d.add_lambda(move |_: Arg, _: String| f()),
        |d, h| d.remove(h),
        |d| d.broadcast(Arg, "owned".to_owned()),
    );
}

/// A subscription waiting in the deferred list (added above every priority, outside a
/// broadcast) is removed by handle: it stays there as a tombstone while its callable is dropped,
/// and once 32 such removals are half of the list, it is swept. The callable's `Drop` re-enters at
/// that point: it removes itself again (refused), removes other waiting subscriptions (whose
/// own drops re-enter the same way, and may start the sweep while an outer removal's tombstone
/// still holds its callable), adds one more above every priority, and broadcasts. Nothing
/// meets lumina's own borrow, and afterwards exactly the subscriptions never removed are called.
#[test]
fn m13_a_deferred_subscriptions_drop_re_enters_its_removal_and_the_sweep() {
    type D = MulticastDelegate<dyn Fn(u32)>;
    let delegate = Rc::new(D::new());
    // A main list large enough that the waiting ones are not merged by their own number.
    for _ in 0..200 {
        let _ = delegate.add_lambda(|_| {});
    }
    let calls = Rc::new(RefCell::new(Vec::new()));
    let handles: Rc<RefCell<Vec<DelegateHandle>>> = Rc::new(RefCell::new(Vec::new()));
    let removed = Rc::new(RefCell::new(std::collections::BTreeSet::new()));
    for i in 0..80_u32 {
        let (weak, list) = (Rc::downgrade(&delegate), Rc::clone(&handles));
        let taken = Rc::clone(&removed);
        let on_drop = OnDrop(Some(Box::new(move || {
            let Some(delegate) = weak.upgrade() else {
                return;
            };
            let own = list.borrow()[i as usize];
            assert!(
                !delegate.remove(own),
                "a removed subscription was removed twice"
            );
            // Every third drop removes the next waiting subscription too.
            let next = list.borrow().get(i as usize + 1).copied();
            if i % 3 == 0
                && let Some(next) = next
                && delegate.remove(next)
            {
                taken.borrow_mut().insert(i as usize + 1);
            }
            if i % 10 == 0 {
                let _ = delegate
                    .subscribe()
                    .priority(1_000 + i32::try_from(i).unwrap())
                    .add_lambda(|_| {});
            }
            // One broadcast, late (a broadcast merges the waiting list).
            if i == 78 {
                delegate.broadcast(0);
            }
        })));
        let seen = Rc::clone(&calls);
        let handle = delegate
            .subscribe()
            .priority(i32::try_from(i).unwrap() + 1)
            .add_lambda(move |_| {
                let _keep = &on_drop;
                seen.borrow_mut().push(i);
            });
        handles.borrow_mut().push(handle);
    }
    // Remove the even ones (each drop may take the next one too), without a broadcast between.
    let all: Vec<DelegateHandle> = handles.borrow().clone();
    for (i, handle) in all.iter().enumerate() {
        if i % 2 == 0 && delegate.remove(*handle) {
            removed.borrow_mut().insert(i);
        }
    }
    // Present: exactly the ones never removed, here or by a drop.
    let listed: std::collections::HashSet<DelegateHandle> = delegate
        .subscriptions()
        .iter()
        .map(|subscription| subscription.handle)
        .collect();
    let present: Vec<usize> = (0..all.len())
        .filter(|&i| listed.contains(&all[i]))
        .collect();
    let kept: Vec<usize> = (0..all.len())
        .filter(|i| !removed.borrow().contains(i))
        .collect();
    assert_eq!(present, kept);
    calls.borrow_mut().clear();
    delegate.broadcast(0);
    let mut heard = calls.borrow().clone();
    heard.sort_unstable();
    assert_eq!(heard, present.iter().map(|&i| i as u32).collect::<Vec<_>>());
}
