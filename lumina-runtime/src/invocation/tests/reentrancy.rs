//! M13 at the points only the crate reaches: predicates, filters, clones of subscribers, and a
//! lock held across a settle; and the drops that re-enter a list (settles, `remove_owner`).

use super::*;

// SAFETY: `Reentrant::clone` adds to a list, and never removes or clears.
unsafe impl Subscriber for Reentrant {}

#[test]
fn m13_2_predicates_and_filters_may_reenter_the_list() {
    // The smallest case, and every other query that runs a predicate or filter: no
    // borrow of the lists is held while they run.
    let list: InvocationList<u32> = InvocationList::new();
    let h = list.add(1);
    assert!(list.subscriber_matches(h, |_| {
        let _ = list.add(2);
        true
    }));
    let pending = list.begin().expect("the list has a block"); // locked: adds now go to the pending list
    let _late = list.add(3);
    let counted = list.count_matching(|_| {
        let _ = list.add(4);
        list.remove(h)
    });
    assert_eq!(counted, 1, "only the first call removed h");
    let mut walk = list.begin().expect("the list has a block");
    let filtered = walk.next_matching(|value| {
        let _ = list.add(5);
        *value == 3
    });
    assert_eq!(
        filtered,
        Some(3),
        "pending subscribers are filtered with no borrow held"
    );
    drop(walk);
    drop(pending);
    assert_eq!(list.len(), 1 + 1 + 3 + 2, "2, 3, three 4s and two 5s");
}

thread_local! {
    static REENTER: RefCell<Option<Rc<InvocationList<Reentrant>>>> = const { RefCell::new(None) };
}

/// A subscriber whose `Clone` adds to the list it lives in.
struct Reentrant(u32);

impl Clone for Reentrant {
    fn clone(&self) -> Self {
        if let Some(list) = REENTER.with(|r| r.borrow().clone()) {
            let _ = list.add(Reentrant(100));
        }
        Reentrant(self.0)
    }
}

#[test]
fn m13_2_snapshot_with_a_reentrant_clone() {
    let list = Rc::new(InvocationList::new());
    let _ = list.add(Reentrant(1));
    let _ = list.add(Reentrant(2));
    REENTER.with(|r| *r.borrow_mut() = Some(Rc::clone(&list)));
    let snapshot = list.snapshot();
    REENTER.with(|r| r.borrow_mut().take());
    let values: Vec<u32> = snapshot.iter().map(|(_, r)| r.0).collect();
    assert_eq!(
        values,
        [1, 2],
        "what was added during the snapshot is not in it"
    );
    assert_eq!(list.len(), 4);
}

#[test]
fn m13_3_a_lock_leaked_by_a_drop_during_settle_does_not_abort() {
    // A capture's Drop, run when the list settles, leaks a lock (a `Broadcast` forgotten). The
    // settle must neither panic on its own borrow nor abort; the list keeps working (it settles
    // no more while the leaked lock is held, which only delays drops).
    let list: Rc<InvocationList<Rc<dyn Fn()>>> = Rc::new(InvocationList::new());
    let weak = Rc::downgrade(&list);
    struct Leak(Weak<InvocationList<Rc<dyn Fn()>>>);
    impl Drop for Leak {
        fn drop(&mut self) {
            if let Some(list) = self.0.upgrade() {
                std::mem::forget(list.begin().expect("the list has a block"));
            }
        }
    }
    let leak = Leak(weak);
    let me = Rc::new(Cell::new(DelegateHandle::default()));
    let (inner, handle) = (Rc::clone(&list), Rc::clone(&me));
    me.set(list.add(Rc::new(move || {
        let _ = &leak;
        inner.remove(handle.get());
    })));
    let ran = Rc::new(Cell::new(0));
    let sink = Rc::clone(&ran);
    let _other = list.add(Rc::new(move || sink.set(sink.get() + 1)));
    list.broadcast_with((), |f, ()| f());
    assert!(list.is_broadcasting(), "the leaked lock");
    let _late = list.add(Rc::new(|| {}));
    list.broadcast_with((), |f, ()| f());
    assert_eq!(ran.get(), 2);
    assert_eq!(list.len(), 2);
    list.clear();
    assert_eq!(list.len(), 0);
}

#[test]
fn r1_mb4_a_module_removal_whose_drop_frees_the_list_finishes_on_a_live_block() {
    type Owning = InvocationList<Rc<dyn Any>>;
    let list: Rc<Owning> = Rc::default();
    // The subscriber holds the list: a delegate captured by its own subscriber, a cycle only
    // the removal breaks.
    let handle = list.add(Rc::new(Rc::clone(&list)) as Rc<dyn Any>);
    let access = list.module_access().expect("the list has a block");
    let weak = Rc::downgrade(&list);
    drop(list);
    assert!(weak.upgrade().is_some(), "kept alive by its own subscriber");
    // SAFETY: as the loader calls it: on the list's thread, with the list alive (its record
    // would still be registered). The removal's `Drop` frees the list; the block must outlive
    // the call (Miri reports a use after free otherwise).
    assert!(unsafe { access.remove(handle) });
    assert!(
        weak.upgrade().is_none(),
        "the removal dropped the last reference"
    );
}
/// An argument whose clone removes a subscriber: user code between two calls (M13).
struct RemovingArg {
    list: Rc<Calls>,
    target: Rc<Cell<DelegateHandle>>,
}

impl Clone for RemovingArg {
    fn clone(&self) -> Self {
        self.list.remove(self.target.get());
        RemovingArg {
            list: Rc::clone(&self.list),
            target: Rc::clone(&self.target),
        }
    }
}

/// A call that panics leaves the list as after a normal broadcast (M7): unlocked, so the next
/// broadcast is the outermost one, and a subscriber removed during it (here by the argument's
/// clone) does not run and is dropped when it ends (M3, M4).
#[test]
fn m7_a_broadcast_after_a_panicking_call_drops_its_removals_when_it_ends() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let dropped = Rc::new(Cell::new(false));
    let captures = DropFlag(
        Rc::clone(&dropped),
        String::from("the panicking subscriber"),
    );
    let panicked = Cell::new(false);
    let first = list.add(Rc::new(move |_: u32| {
        let _keep = &captures;
        if !panicked.replace(true) {
            panic!("a subscriber panics");
        }
    }));
    let _last = list.add(Rc::new(|_: u32| {}));
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        list.broadcast_with(1, |subscriber, x| subscriber(x));
    }));
    assert!(caught.is_err(), "the panic reaches the broadcaster");
    // The clone made for the first subscriber removes it: it does not run, and goes when this
    // broadcast ends.
    let arg = RemovingArg {
        list: Rc::clone(&list),
        target: Rc::new(Cell::new(first)),
    };
    let mut calls = 0;
    list.broadcast_with(arg, |subscriber, _| {
        calls += 1;
        subscriber(2);
    });
    assert_eq!(calls, 1, "the removed subscriber does not run");
    assert!(
        dropped.get(),
        "a subscriber removed by an argument's clone is dropped once the broadcast is over"
    );
}

/// `stop_after_call` from inside a call: the loop calling it stops after it; a broadcast nested
/// in that call (which calls the same subscriber) does not; the request does not outlive the
/// call, also when the call panics (X7's early stop asked from inside, the bus's `consume`).
#[test]
fn m5_x7_a_subscriber_stops_the_loop_calling_it_and_no_other() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (weak, sink) = (Rc::downgrade(&list), Rc::clone(&seen));
    let _first = list.add(Rc::new(move |x: u32| {
        sink.borrow_mut().push(format!("first {x}"));
        let list = weak.upgrade().unwrap();
        if x == 1 || x == 4 {
            assert!(list.stop_after_call(), "a loop is calling this subscriber");
        }
        if x == 1 {
            let stopped = list.broadcast_until_with(2, |subscriber, x| {
                subscriber(x);
                false
            });
            assert!(!stopped, "the nested broadcast ran to its end");
        }
        assert!(x != 4, "a subscriber that asked to stop panics");
    }));
    for name in ["second", "third"] {
        let sink = Rc::clone(&seen);
        let _ = list.add(Rc::new(move |x: u32| {
            sink.borrow_mut().push(format!("{name} {x}"))
        }));
    }
    assert!(!list.stop_after_call(), "no loop runs");
    let call = |subscriber: &Rc<dyn Fn(u32)>, x| {
        subscriber(x);
        false
    };
    assert!(list.broadcast_until_with(1, call));
    assert_eq!(
        *seen.borrow(),
        ["first 1", "first 2", "second 2", "third 2"]
    );
    seen.borrow_mut().clear();
    assert!(!list.broadcast_until_with(3, call));
    assert_eq!(*seen.borrow(), ["first 3", "second 3", "third 3"]);
    seen.borrow_mut().clear();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| list.broadcast_until_with(4, call)));
    assert!(caught.is_err());
    assert!(!list.broadcast_until_with(5, call));
    assert_eq!(
        *seen.borrow(),
        ["first 4", "first 5", "second 5", "third 5"]
    );
}

/// The merging walk (a nested broadcast while added subscribers wait) calls clones and does not
/// stop: a stop asked for during its calls is dropped when it ends, and does not stop the
/// enclosing loop either.
#[test]
fn m5_x7_a_stop_asked_in_the_merging_walk_reaches_no_enclosing_loop() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (weak, sink) = (Rc::downgrade(&list), Rc::clone(&seen));
    let _first = list.add(Rc::new(move |x: u32| {
        sink.borrow_mut().push(format!("first {x}"));
        if x == 1 {
            let list = weak.upgrade().unwrap();
            let late = Rc::clone(&sink);
            let _ = list.add(Rc::new(move |x: u32| {
                late.borrow_mut().push(format!("late {x}"))
            }));
            list.broadcast_with(2, |subscriber, x| subscriber(x));
        }
    }));
    let (weak, sink) = (Rc::downgrade(&list), Rc::clone(&seen));
    let _second = list.add(Rc::new(move |x: u32| {
        sink.borrow_mut().push(format!("second {x}"));
        if x == 2 {
            assert!(weak.upgrade().unwrap().stop_after_call(), "recorded");
        }
    }));
    let call = |subscriber: &Rc<dyn Fn(u32)>, x| {
        subscriber(x);
        false
    };
    assert!(!list.broadcast_until_with(1, call));
    assert_eq!(
        *seen.borrow(),
        ["first 1", "first 2", "second 2", "late 2", "second 1"]
    );
}

/// A list of `Shared` callables, as multicast delegates keep them.
type SharedCalls = InvocationList<Shared<dyn Fn(u32)>>;

/// `Shared`, the `Rc` a list keeps as its value's pointer: one strong reference each, the value
/// called through it, and a subscriber that removes itself while it runs is dropped after its
/// call, through `Shared`'s `Drop` (M4; Miri checks the pointer's provenance).
#[test]
fn m4_shared_callables_count_their_references_and_drop_after_their_call() {
    let rc: Rc<dyn Fn(u32) -> u32> = Rc::new(|x| x + 1);
    let weak = Rc::downgrade(&rc);
    let shared = Shared::new(rc);
    assert_eq!(shared(1), 2);
    let clone = shared.clone();
    let back = clone.to_rc();
    assert_eq!(weak.strong_count(), 3);
    drop((clone, back));
    assert_eq!(weak.strong_count(), 1);
    drop(shared);
    assert!(weak.upgrade().is_none());

    let list: Rc<SharedCalls> = Rc::new(InvocationList::new());
    let dropped = Rc::new(Cell::new(false));
    let captures = DropFlag(Rc::clone(&dropped), String::from("self-removing"));
    let own = Rc::new(Cell::new(DelegateHandle::default()));
    let (weak_list, own_handle, seen) =
        (Rc::downgrade(&list), Rc::clone(&own), Rc::clone(&dropped));
    own.set(list.add(Shared::new(Rc::new(move |x: u32| {
        let list = weak_list
            .upgrade()
            .expect("the list outlives its broadcast");
        assert!(list.remove(own_handle.get()));
        assert!(!seen.get(), "not dropped while it runs");
        assert_eq!(captures.1.len() as u32 + x, 14);
    }))));
    let _second = list.add(Shared::new(Rc::new(|_: u32| {})));
    list.broadcast_with(1, |subscriber, x| subscriber(x));
    assert!(dropped.get(), "dropped when the broadcast ends");
    assert_eq!(list.len(), 1);
}

/// A broadcast argument whose `Clone` unblocks `handle` once the subscriber named `after` was
/// the last one called (user code between a walk's check of one subscriber and the next).
struct Unblocker<'a> {
    list: &'a Names,
    seen: &'a RefCell<Vec<&'static str>>,
    unblock: &'a [(&'static str, DelegateHandle)],
}

impl Clone for Unblocker<'_> {
    fn clone(&self) -> Self {
        let last = self.seen.borrow().last().copied();
        for &(after, handle) in self.unblock {
            if last == Some(after) {
                assert!(self.list.set_blocked(handle, false));
            }
        }
        Unblocker { ..*self }
    }
}

#[test]
fn x4_a_merging_walk_never_goes_back_to_a_waiting_subscriber_it_passed_blocked() {
    // The nested broadcast merges subscribers added during the outer one (they wait). `w` and
    // `y` wait, blocked; each is unblocked by the argument's clone made right after the walk
    // passed it (`w` before a main-list subscriber, `y` among waiting ones): neither runs.
    let list = Names::new();
    let _ = list.insert(10, None, "a");
    let _ = list.insert(0, None, "b");
    let _ = list.insert(0, None, "c");
    let nested = RefCell::new(Vec::new());
    let outer = walk(&list, |name| {
        if name != "a" {
            return;
        }
        let w = list.insert(5, None, "w");
        let _ = list.insert(-5, None, "x");
        let y = list.insert(-10, None, "y");
        let _ = list.insert(-10, None, "z");
        let _ = list.insert(-10, None, "z2");
        assert!(list.set_blocked(w, true) && list.set_blocked(y, true));
        let unblock = [("a", w), ("x", y)];
        let args = Unblocker {
            list: &list,
            seen: &nested,
            unblock: &unblock,
        };
        list.broadcast_with(args, |name, _| nested.borrow_mut().push(name));
    });
    assert_eq!(outer, ["a", "b", "c"]);
    assert_eq!(*nested.borrow(), ["a", "b", "c", "x", "z", "z2"]);
    assert_eq!(run(&list), ["a", "w", "b", "c", "x", "y", "z", "z2"]);
}

/// Runs its action when dropped: a capture whose `Drop` re-enters a list.
struct OnDrop(Option<Box<dyn FnOnce()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(action) = self.0.take() {
            action();
        }
    }
}

/// Counts drops: a callable removed during a broadcast is dropped once, when the outermost one
/// ends (M4), never while it runs.
struct DropCount(Rc<Cell<usize>>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// The settle drops a callable removed during the broadcast; that `Drop` broadcasts the list
/// again (the settle's own lock is held), and the subscriber running there removes itself and
/// clears the list, then reads its captures: its callable must stay in its slot until that call
/// returned (the settle's next pass drops it), each dropped exactly once. Miri checks that the
/// running callable's captures are alive (strict provenance, tree borrows).
#[test]
fn m4_a_subscriber_removed_in_a_broadcast_a_settle_drop_started_runs_on_its_captures() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let log = Rc::new(RefCell::new(Vec::new()));
    let x_dropped = Rc::new(Cell::new(0));
    let y_dropped = Rc::new(Cell::new(0));
    let z_dropped = Rc::new(Cell::new(0));
    let weak = Rc::downgrade(&list);
    let guard = OnDrop(Some(Box::new(move || {
        if let Some(list) = weak.upgrade() {
            list.broadcast_with(2, |subscriber, x| subscriber(x));
        }
    })));
    let x_handle = Rc::new(Cell::new(DelegateHandle::default()));
    let (inner, me, count) = (
        Rc::clone(&list),
        Rc::clone(&x_handle),
        DropCount(Rc::clone(&x_dropped)),
    );
    x_handle.set(list.add(Rc::new(move |x: u32| {
        let _ = (&guard, &count);
        if x == 1 {
            assert!(inner.remove(me.get()));
        }
    })));
    let y_handle = Rc::new(Cell::new(DelegateHandle::default()));
    let (inner, me, sink, mine) = (
        Rc::clone(&list),
        Rc::clone(&y_handle),
        Rc::clone(&log),
        Rc::clone(&y_dropped),
    );
    let count = DropCount(Rc::clone(&y_dropped));
    let name = String::from("y");
    y_handle.set(list.add(Rc::new(move |x: u32| {
        let _ = &count;
        if x == 2 {
            assert!(inner.remove(me.get()));
            inner.clear();
            inner.broadcast_with(3, |subscriber, x| subscriber(x));
            assert_eq!(mine.get(), 0, "not dropped while it runs");
            sink.borrow_mut().push(format!("{name} {x}"));
        }
    })));
    let count = DropCount(Rc::clone(&z_dropped));
    let sink = Rc::clone(&log);
    let _z = list.add(Rc::new(move |x: u32| {
        let _ = &count;
        sink.borrow_mut().push(format!("z {x}"));
    }));
    list.broadcast_with(1, |subscriber, x| subscriber(x));
    assert_eq!(*log.borrow(), ["z 1", "y 2"]);
    assert_eq!(
        (x_dropped.get(), y_dropped.get(), z_dropped.get()),
        (1, 1, 1),
        "each removed callable dropped once, by the end of the outermost broadcast"
    );
    assert!(!list.is_broadcasting());
    assert!(list.is_empty());
}

/// `remove_owner` outside a broadcast drops what it removed under its own lock; a `Drop` there
/// broadcasts the list, and the subscriber running in it removes itself by its owner (marked
/// only: the list is locked) and reads its captures. The removal's walk must not take that
/// slot before the call returns; it takes it after (it comes later in the list), once.
#[test]
fn m4_remove_owner_outside_a_broadcast_keeps_a_callable_running_in_a_nested_broadcast() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let first_owner = Rc::new(1_u8);
    let second_owner = Rc::new(2_u8);
    let log = Rc::new(RefCell::new(Vec::new()));
    let w_dropped = Rc::new(Cell::new(0));
    let weak = Rc::downgrade(&list);
    let guard = OnDrop(Some(Box::new(move || {
        if let Some(list) = weak.upgrade() {
            list.broadcast_with(2, |subscriber, x| subscriber(x));
        }
    })));
    let _x = list.add_owned(
        &first_owner,
        Rc::new(move |_: u32| {
            let _ = &guard;
        }),
    );
    let (inner, owner, sink, mine) = (
        Rc::clone(&list),
        Rc::downgrade(&second_owner),
        Rc::clone(&log),
        Rc::clone(&w_dropped),
    );
    let count = DropCount(Rc::clone(&w_dropped));
    let name = String::from("w");
    let _w = list.add_owned(
        &second_owner,
        Rc::new(move |x: u32| {
            let _ = &count;
            let owner = owner.upgrade().expect("alive");
            assert_eq!(inner.remove_owner(&owner), 1);
            assert_eq!(mine.get(), 0, "not dropped while it runs");
            sink.borrow_mut().push(format!("{name} {x}"));
        }),
    );
    assert_eq!(list.remove_owner(&first_owner), 1);
    assert_eq!(*log.borrow(), ["w 2"]);
    assert_eq!(
        w_dropped.get(),
        1,
        "dropped once, before remove_owner returned"
    );
    assert!(list.is_empty());
    assert!(!list.is_broadcasting());
}

/// The settle goes on while its drops remove more: each `Drop` here adds a subscriber of a
/// higher priority (so it lands in the pending list before the settle's place there) and
/// removes it at once. Every one is dropped by the end of the broadcast, and the settle ends.
#[test]
fn m4_a_settle_drops_what_its_drops_add_and_remove_before_its_place() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let dropped = Rc::new(Cell::new(0));
    /// A callable whose `Drop` adds and removes another, `depth` more times.
    fn chained(list: &Rc<Calls>, dropped: &Rc<Cell<usize>>, depth: i32) -> Rc<dyn Fn(u32)> {
        let count = DropCount(Rc::clone(dropped));
        let (weak, sink) = (Rc::downgrade(list), Rc::clone(dropped));
        let guard = OnDrop(Some(Box::new(move || {
            if depth == 0 {
                return;
            }
            if let Some(list) = weak.upgrade() {
                let next = chained(&list, &sink, depth - 1);
                let handle = list.insert(10 - depth, None, next);
                assert!(list.remove(handle));
            }
        })));
        Rc::new(move |_: u32| {
            let _ = (&count, &guard);
        })
    }
    let doomed = Rc::new(Cell::new(DelegateHandle::default()));
    let (inner, me) = (Rc::downgrade(&list), Rc::clone(&doomed));
    let _remover = list.add(Rc::new(move |_: u32| {
        inner.upgrade().expect("alive").remove(me.get());
    }));
    doomed.set(list.insert(-1, None, chained(&list, &dropped, 4)));
    list.broadcast_with(0, |subscriber, x| subscriber(x));
    assert_eq!(
        dropped.get(),
        5,
        "the removed one and the four its drops added"
    );
    assert!(!list.is_broadcasting());
    assert_eq!(list.len(), 1);
    assert_eq!(list.subscriptions().len(), 1, "nothing of them is left");
}
