//! Unit tests of the invocation list: priorities and custom broadcast loops, what the event
//! processor and script delegates build on (rules M1-M3, M5, M7, M10, H2 with `insert`), the
//! dispatch loop (P2), and the re-entrancy points of M13 that only the crate itself can reach
//! (filters and predicates).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::rc::{Rc, Weak};

use super::{InvocationList, Shared, Subscriber};
use crate::handle::DelegateHandle;

// SAFETY: copies: no code runs.
unsafe impl Subscriber for &'static str {}
// SAFETY: as above.
unsafe impl Subscriber for u32 {}
// SAFETY: as above.
unsafe impl Subscriber for (&'static str, bool) {}

/// A subscriber here is just a name: the tests drive the broadcast loop themselves.
type Names = InvocationList<&'static str>;

/// At most this many names per walk, so a cursor that loses its place fails instead of looping.
const WALK_LIMIT: usize = 1000;

fn run(list: &Names) -> Vec<&'static str> {
    list.begin()
        .expect("the list has a block")
        .take(WALK_LIMIT)
        .collect()
}

/// Walks a broadcast, calling `on_each` for every yielded name (the "subscriber" runs there).
fn walk(list: &Names, mut on_each: impl FnMut(&'static str)) -> Vec<&'static str> {
    let mut seen = Vec::new();
    for name in list.begin().expect("the list has a block").take(WALK_LIMIT) {
        seen.push(name);
        on_each(name);
    }
    seen
}

#[test]
fn m1_insert_runs_higher_priority_first_and_ties_in_add_order() {
    let list = Names::new();
    let _ = list.insert(0, None, "default-1");
    let _ = list.insert(1000, None, "viewport-1");
    let _ = list.insert(500, None, "chrome-1");
    let _ = list.add("default-2"); // add = priority 0
    let _ = list.insert(1000, None, "viewport-2");
    let _ = list.insert(-5, None, "low");
    let _ = list.insert(500, None, "chrome-2");
    let _ = list.insert(i32::MAX, None, "max");
    let _ = list.insert(i32::MIN, None, "min");
    assert_eq!(
        run(&list),
        [
            "max",
            "viewport-1",
            "viewport-2",
            "chrome-1",
            "chrome-2",
            "default-1",
            "default-2",
            "low",
            "min"
        ]
    );
    assert_eq!(list.len(), 9);
}

#[test]
fn h2_remove_in_a_prioritized_list_removes_exactly_that_entry() {
    let list = Names::new();
    let a = list.insert(0, None, "a");
    let b = list.insert(10, None, "b");
    let c = list.insert(5, None, "c");
    let d = list.insert(10, None, "d");
    assert_eq!(run(&list), ["b", "d", "c", "a"]);
    assert!(list.remove(c));
    assert!(!list.remove(c));
    assert!(!list.remove(DelegateHandle::default()));
    assert!(!list.remove(DelegateHandle::new_unique()));
    assert_eq!(run(&list), ["b", "d", "a"]);
    assert!(list.remove(b));
    assert!(list.remove(a));
    assert_eq!(run(&list), ["d"]);
    assert!(list.remove(d));
    assert!(list.is_empty());
    // Emptied: adds go back to the plain order.
    let _ = list.add("x");
    let _ = list.insert(3, None, "y");
    assert_eq!(run(&list), ["y", "x"]);
}

#[test]
fn h2_removal_during_a_prioritized_insert_sequence_keeps_the_order_of_the_rest() {
    // Interleave inserts of random priorities with removals of random earlier handles and
    // compare with a sorted reference after every step.
    let list: InvocationList<u32> = InvocationList::new();
    let mut reference: Vec<(i32, DelegateHandle, u32)> = Vec::new(); // (priority, handle, value)
    let mut state = 0x1234_5678_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Every step compares the whole list, so the test is quadratic: under Miri (which runs it
    // for the unchecked reads of the broadcast loop) a shorter sequence keeps it to seconds.
    let steps = if cfg!(miri) { 120 } else { 400 };
    for value in 0..steps {
        let priority = (next() % 7) as i32 * 100 - 300;
        let handle = list.insert(priority, None, value);
        reference.push((priority, handle, value));
        if next() % 3 == 0 {
            let victim = (next() % reference.len() as u64) as usize;
            let (_, victim, _) = reference.remove(victim);
            assert!(list.remove(victim));
            assert!(!list.remove(victim));
        }
        let mut expected = reference.clone();
        expected.sort_by_key(|&(p, handle, _)| (-i64::from(p), handle.id()));
        let expected: Vec<u32> = expected.into_iter().map(|(_, _, v)| v).collect();
        let actual: Vec<u32> = list.begin().expect("the list has a block").collect();
        assert_eq!(actual, expected, "after inserting {value}");
        assert_eq!(list.len(), expected.len());
    }
}

#[test]
fn m2_insert_during_a_broadcast_does_not_run_in_it_wherever_it_lands() {
    let list = Names::new();
    let _ = list.insert(10, None, "high");
    let _ = list.insert(5, None, "mid");
    let _ = list.insert(0, None, "low");
    let seen = walk(&list, |name| {
        if name == "mid" {
            let _ = list.insert(100, None, "new-top"); // before the cursor
            let _ = list.insert(7, None, "new-before-mid"); // right before the current one
            let _ = list.insert(5, None, "new-tie"); // right after the current one
            let _ = list.insert(3, None, "new-after"); // between cursor and "low"
            let _ = list.insert(-1, None, "new-bottom"); // at the end
        }
    });
    assert_eq!(
        seen,
        ["high", "mid", "low"],
        "no new entry ran, nobody ran twice"
    );
    assert_eq!(
        run(&list),
        [
            "new-top",
            "high",
            "new-before-mid",
            "mid",
            "new-tie",
            "new-after",
            "low",
            "new-bottom"
        ]
    );
}

#[test]
fn m2_insert_during_a_broadcast_runs_in_a_nested_broadcast_started_after_it() {
    let list = Names::new();
    let _ = list.insert(10, None, "high");
    let _ = list.insert(0, None, "low");
    let nested = RefCell::new(Vec::new());
    let seen = walk(&list, |name| {
        if name == "high" {
            let _ = list.insert(20, None, "new-top");
            let _ = list.insert(5, None, "new-mid");
            nested
                .borrow_mut()
                .extend(list.begin().expect("the list has a block"));
        }
    });
    assert_eq!(seen, ["high", "low"]);
    assert_eq!(*nested.borrow(), ["new-top", "high", "new-mid", "low"]);
}

#[test]
fn m2_cursor_keeps_its_place_after_many_mid_list_inserts() {
    // Every yielded entry inserts two entries of random priority: the walk must still visit
    // exactly the original entries, in order, once each.
    let list: InvocationList<u32> = InvocationList::new();
    for value in 0..50_u32 {
        let _ = list.insert((value % 5) as i32, None, value);
    }
    let original: Vec<u32> = list.begin().expect("the list has a block").collect();
    let mut state = 99_u32;
    let mut seen = Vec::new();
    for value in list.begin().expect("the list has a block").take(WALK_LIMIT) {
        seen.push(value);
        for _ in 0..2 {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let _ = list.insert((state >> 16) as i32 % 9 - 2, None, 1000 + value);
        }
    }
    assert_eq!(seen, original);
    assert_eq!(list.len(), 150);
}

#[test]
fn m3_remove_during_a_prioritized_broadcast_stops_entries_not_yet_reached() {
    let list = Names::new();
    let a = list.insert(10, None, "a");
    let _ = list.insert(5, None, "b");
    let c = list.insert(0, None, "c");
    let d = list.insert(0, None, "d");
    let seen = walk(&list, |name| {
        if name == "b" {
            assert!(list.remove(c));
            assert!(list.remove(a)); // already passed: nothing changes for this walk
            let _ = list.insert(1, None, "new"); // forces the slow (unsorted-ids) path
            assert!(list.remove(d));
        }
    });
    assert_eq!(seen, ["a", "b"]);
    assert_eq!(run(&list), ["b", "new"]);
}

#[test]
fn m5_nested_walks_of_a_prioritized_list_each_see_their_own_snapshot() {
    let list = Names::new();
    let _ = list.insert(3, None, "a");
    let _ = list.insert(2, None, "b");
    let _ = list.insert(1, None, "c");
    let mut trace = Vec::new();
    let mut outer = list.begin().expect("the list has a block");
    trace.push(outer.next().unwrap()); // a
    let _ = list.insert(4, None, "x"); // before everything
    {
        let mut inner = list.begin().expect("the list has a block");
        trace.push(inner.next().unwrap()); // x
        let _ = list.insert(2, None, "y"); // after b
        trace.extend(inner.by_ref()); // a b c: not y
        assert!(list.is_broadcasting());
    }
    assert!(
        list.is_broadcasting(),
        "the outer walk still holds the lock"
    );
    trace.extend(outer.by_ref()); // b c
    drop(outer);
    assert!(!list.is_broadcasting());
    assert_eq!(trace, ["a", "x", "a", "b", "c", "b", "c"]);
    assert_eq!(run(&list), ["x", "a", "b", "y", "c"]);
}

#[test]
fn m3_weak_owner_of_an_inserted_entry_dies_mid_walk() {
    let list = Names::new();
    let owner: Rc<dyn Any> = Rc::new(1_u8);
    let weak: Weak<dyn Any> = Rc::downgrade(&owner);
    let _ = list.insert(5, None, "first");
    let _ = list.insert(1, Some(weak), "owned");
    let _ = list.insert(0, None, "last");
    let mut owner = Some(owner);
    let seen = walk(&list, |name| {
        if name == "first" {
            owner = None;
        }
    });
    assert!(owner.is_none());
    assert_eq!(seen, ["first", "last"]);
    assert_eq!(list.len(), 2);
}

#[test]
fn m7_panic_in_a_custom_loop_releases_the_lock_and_compacts() {
    let list = Names::new();
    let _ = list.add("a");
    let b = list.add("b");
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        for name in list.begin().expect("the list has a block") {
            if name == "a" {
                assert!(list.remove(b));
                panic!("subscriber a failed");
            }
        }
    }));
    assert!(result.is_err());
    assert!(!list.is_broadcasting());
    assert_eq!(run(&list), ["a"]);
    assert!(!list.remove(b));
}

#[test]
fn m2_rewind_walks_the_same_snapshot_again_under_one_lock() {
    let list = Names::new();
    let _ = list.add("a");
    let b = list.add("b");
    let mut walk = list.begin().expect("the list has a block");
    let first: Vec<_> = walk.by_ref().collect();
    let _ = list.add("late");
    assert!(list.remove(b));
    walk.rewind();
    let second: Vec<_> = walk.by_ref().collect();
    assert!(list.is_broadcasting());
    drop(walk);
    assert_eq!(first, ["a", "b"]);
    assert_eq!(
        second,
        ["a"],
        "the late one is not in the snapshot, b was removed"
    );
}

#[test]
fn m1_next_matching_filters_and_rewind_starts_over() {
    let list: InvocationList<(&'static str, bool)> = InvocationList::new();
    for entry in [("n1", true), ("m1", false), ("n2", true), ("m2", false)] {
        let _ = list.add(entry);
    }
    let native = |entry: &(&'static str, bool)| entry.1;
    let mut walk = list.begin().expect("the list has a block");
    assert_eq!(walk.next_matching(native), Some(("n1", true)));
    assert_eq!(walk.next_matching(native), Some(("n2", true)));
    assert_eq!(walk.next_matching(native), None);
    walk.rewind();
    let managed: Vec<_> = std::iter::from_fn(|| walk.next_matching(|e| !e.1)).collect();
    assert_eq!(managed, [("m1", false), ("m2", false)]);
    assert_eq!(walk.next_entry(), None);
}

#[test]
fn m10_filters_may_reenter_the_list() {
    // A filter is caller code, like a subscriber: it may look at (or change) the list it
    // filters without a RefCell borrow panic.
    let list: InvocationList<u32> = InvocationList::new();
    for value in 0..6 {
        let _ = list.add(value);
    }
    let lens = Cell::new(0);
    let mut walk = list.begin().expect("the list has a block");
    let even = walk.next_matching(|value| {
        lens.set(lens.get() + list.len());
        if *value == 0 {
            let _ = list.add(100); // added during the walk: never yielded by it (M2)
        }
        value % 2 == 0
    });
    assert_eq!(even, Some(0));
    let rest: Vec<u32> = std::iter::from_fn(|| {
        walk.next_matching(|value| {
            let _ = list.is_bound();
            value % 2 == 1
        })
    })
    .collect();
    assert_eq!(rest, [1, 3, 5]);
    drop(walk);
    assert_eq!(lens.get(), 6);
    assert_eq!(list.len(), 7);
}

#[test]
fn m12_broadcast_with_clones_only_for_subscribers_followed_by_a_live_one() {
    #[derive(Debug)]
    struct Arg(Rc<Cell<usize>>);
    impl Clone for Arg {
        fn clone(&self) -> Self {
            self.0.set(self.0.get() + 1);
            Arg(Rc::clone(&self.0))
        }
    }
    let list = Names::new();
    let _ = list.insert(1, None, "a");
    let b = list.insert(0, None, "b");
    let owner: Rc<dyn Any> = Rc::new(());
    let _ = list.insert(0, Some(Rc::downgrade(&owner)), "c");
    drop(owner); // c is dead: it must not cost a clone
    let clones = Rc::new(Cell::new(0));
    let mut calls = Vec::new();
    list.broadcast_with(Arg(Rc::clone(&clones)), |name, _arg| calls.push(*name));
    assert_eq!(calls, ["a", "b"]);
    assert_eq!(clones.get(), 1);
    assert!(list.remove(b));
    clones.set(0);
    calls.clear();
    list.broadcast_with(Arg(Rc::clone(&clones)), |name, _arg| calls.push(*name));
    assert_eq!((calls.as_slice(), clones.get()), (["a"].as_slice(), 0));
}

/// Sets its flag when dropped: the captures of a subscriber under test.
struct DropFlag(Rc<Cell<bool>>, String);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

type Calls = InvocationList<Rc<dyn Fn(u32)>>;

/// A list whose subscriber `a` calls it again: the nested-broadcast scenarios of M4.
struct Nested {
    list: Rc<Calls>,
    log: Rc<RefCell<Vec<String>>>,
    /// Set when `a`'s captures are dropped.
    dropped: Rc<Cell<bool>>,
    a: Rc<Cell<DelegateHandle>>,
}

impl Nested {
    /// `a` logs `a@depth`; below `rebroadcast_below` it broadcasts `depth + 1`, then checks that
    /// its captures are still alive and logs them.
    fn new(rebroadcast_below: u32) -> Self {
        let nested = Nested {
            list: Rc::new(InvocationList::new()),
            log: Rc::new(RefCell::new(Vec::new())),
            dropped: Rc::new(Cell::new(false)),
            a: Rc::new(Cell::new(DelegateHandle::default())),
        };
        let captures = DropFlag(Rc::clone(&nested.dropped), String::from("a's captures"));
        let (log, dropped) = (Rc::clone(&nested.log), Rc::clone(&nested.dropped));
        let weak = Rc::downgrade(&nested.list);
        nested.a.set(nested.list.add(Rc::new(move |depth: u32| {
            log.borrow_mut().push(format!("a@{depth}"));
            if depth < rebroadcast_below {
                let list = weak.upgrade().expect("the list outlives its broadcast");
                list.broadcast_with(depth + 1, |subscriber, depth| subscriber(depth));
                assert!(
                    !dropped.get(),
                    "captures dropped while a@{depth} still runs"
                );
                log.borrow_mut().push(format!("{} at {depth}", captures.1));
            }
        })));
        nested
    }

    /// Adds `b`, which logs `b@depth`, removes `a` at depth `remove_at` (where `a` still runs
    /// in the enclosing broadcasts), and at depth 0 checks that `a` is not dropped yet: the
    /// outermost broadcast has not ended (`run` checks that it is dropped once it has).
    fn add_remover(&self, remove_at: u32) {
        let (log, dropped, a) = (
            Rc::clone(&self.log),
            Rc::clone(&self.dropped),
            Rc::clone(&self.a),
        );
        let weak = Rc::downgrade(&self.list);
        let _b = self.list.add(Rc::new(move |depth: u32| {
            log.borrow_mut().push(format!("b@{depth}"));
            if depth == remove_at {
                let list = weak.upgrade().expect("the list outlives its broadcast");
                assert!(list.remove(a.get()));
                assert!(!dropped.get(), "a still runs in the enclosing broadcasts");
            } else if depth == 0 {
                assert!(
                    !dropped.get(),
                    "a is dropped when the outermost broadcast ends, not before"
                );
            }
        }));
    }

    fn run(&self) {
        self.list
            .broadcast_with(0, |subscriber, depth| subscriber(depth));
        assert!(self.dropped.get());
        assert_eq!(self.list.len(), 1);
    }
}

#[test]
fn m4_subscriber_removed_in_a_nested_broadcast_while_the_outer_one_runs_it_finishes_on_its_captures()
 {
    let nested = Nested::new(1);
    nested.add_remover(1);
    nested.run();
    assert_eq!(
        *nested.log.borrow(),
        ["a@0", "a@1", "b@1", "a's captures at 0", "b@0"]
    );
}

/// A subscriber that calls the list again at depths 0 and 1 is running three times over when,
/// at depth 2, another subscriber removes it: its captures must outlive every one of those calls
/// and be dropped when the outermost broadcast ends (M4).
#[test]
fn m4_subscriber_running_at_three_depths_and_removed_at_the_deepest_finishes_at_every_depth() {
    let nested = Nested::new(2);
    nested.add_remover(2);
    nested.run();
    assert_eq!(
        *nested.log.borrow(),
        [
            "a@0",
            "a@1",
            "a@2",
            "b@2",
            "a's captures at 1",
            "b@1",
            "a's captures at 0",
            "b@0"
        ]
    );
}

/// A panic in a nested broadcast, caught by the subscriber that started it, must leave that
/// subscriber protected (a removal of it is still deferred, M4), and the list consistent: it is
/// dropped when the outermost broadcast ends, and the list works normally afterwards (M7).
#[test]
fn m7_panic_caught_from_a_nested_broadcast_keeps_the_catching_subscriber_protected() {
    let list: Rc<Calls> = Rc::new(InvocationList::new());
    let dropped = Rc::new(Cell::new(false));
    let a_handle = Rc::new(Cell::new(DelegateHandle::default()));
    let captures = DropFlag(Rc::clone(&dropped), String::from("a's captures"));
    let (d, h, weak) = (
        Rc::clone(&dropped),
        Rc::clone(&a_handle),
        Rc::downgrade(&list),
    );
    a_handle.set(list.add(Rc::new(move |depth: u32| {
        if depth != 0 {
            return;
        }
        let list = weak.upgrade().expect("the list outlives its broadcast");
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            list.broadcast_with(1, |subscriber, depth| subscriber(depth));
        }));
        assert!(caught.is_err(), "the nested broadcast panicked");
        assert!(list.remove(h.get()));
        assert!(
            !d.get(),
            "a removed itself while running: its captures stay"
        );
        assert_eq!(captures.1, "a's captures");
    })));
    let d = Rc::clone(&dropped);
    let calls = Rc::new(Cell::new(0));
    let c = Rc::clone(&calls);
    let _panics = list.add(Rc::new(move |depth: u32| {
        c.set(c.get() + 1);
        if depth == 1 {
            panic!("subscriber panics at depth 1");
        }
        assert!(!d.get(), "a is dropped when the outermost broadcast ends");
    }));
    list.broadcast_with(0, |subscriber, depth| subscriber(depth));
    assert!(dropped.get(), "a was dropped when the broadcast ended");
    assert_eq!(
        calls.get(),
        2,
        "once in the nested broadcast, once in the outer one"
    );
    assert!(!list.is_broadcasting());
    assert_eq!(list.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// The dispatch loop (what the event processor runs).

type Log = Rc<RefCell<Vec<&'static str>>>;
type List = InvocationList<Rc<dyn Fn() -> bool>>;

/// The dispatch loop over subscribers that are their own strong reference.
fn until(list: &List) -> bool {
    list.dispatch_until(|f| Some(Rc::clone(f)), |f| f())
}

fn subscriber(log: &Log, name: &'static str, consume: bool) -> Rc<dyn Fn() -> bool> {
    let log = Rc::clone(log);
    Rc::new(move || {
        log.borrow_mut().push(name);
        consume
    })
}

#[test]
fn p2_dispatch_until_stops_at_the_first_subscriber_that_consumes() {
    let log = Log::default();
    let list = List::new();
    let _ = list.insert(0, None, subscriber(&log, "low", true));
    let _ = list.insert(1000, None, subscriber(&log, "viewport", false));
    let _ = list.insert(500, None, subscriber(&log, "editor", true));
    assert!(until(&list));
    assert_eq!(*log.borrow(), ["viewport", "editor"]);
}

#[test]
fn p2_dispatch_until_runs_everyone_and_returns_false_when_nobody_consumes() {
    let log = Log::default();
    let list = List::new();
    let _ = list.add(subscriber(&log, "a", false));
    let _ = list.add(subscriber(&log, "b", false));
    assert!(!until(&list));
    assert_eq!(*log.borrow(), ["a", "b"]);
    assert!(!until(&List::new()), "empty list: nothing consumed");
}

#[test]
fn m2_m3_dispatch_until_skips_removed_and_added_subscribers() {
    let log = Log::default();
    let list: Rc<List> = Rc::new(List::new());
    let victim: Rc<RefCell<DelegateHandle>> = Rc::default();
    let (weak, v, l) = (Rc::downgrade(&list), Rc::clone(&victim), Rc::clone(&log));
    let _ = list.add(Rc::new(move || {
        l.borrow_mut().push("first");
        let list = weak.upgrade().expect("alive");
        assert!(list.remove(*v.borrow()));
        let _late = list.add(subscriber(&l, "late", true));
        false
    }));
    *victim.borrow_mut() = list.add(subscriber(&log, "victim", true));
    let _ = list.add(subscriber(&log, "last", false));
    // The victim was removed before it was reached (M3); the late one was added during the
    // broadcast (M2): nobody consumed.
    assert!(!until(&list));
    assert_eq!(*log.borrow(), ["first", "last"]);
    assert_eq!(list.len(), 3, "first, last and late");
}

/// N4: the compaction and the merge keep the priority runs without looking a priority up per
/// entry (old runs are read once per run). A pseudo-random mix of adds at 9 priorities, moves
/// outside and during broadcasts, and removals: after each step the list's own view of every
/// subscription's priority (its run) and the dispatch order match a naive record.
#[test]
fn n4_runs_merged_from_old_runs_match_the_priorities_after_every_step() {
    let list: Calls = InvocationList::new();
    // (handle, priority) of every live subscription.
    let mut live: Vec<(DelegateHandle, i32)> = Vec::new();
    // What a broadcast calls, in order: each subscriber logs the number it was made with.
    let called = Rc::new(RefCell::new(Vec::new()));
    let mut made: Vec<(DelegateHandle, u32)> = Vec::new();
    let mut seed = 0x2545_f491_u64;
    let mut next = |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    for step in 0..3_000 {
        let choice = next(10);
        let priority = i32::try_from(next(9)).unwrap() - 4;
        match choice {
            0..=3 => {
                let log = Rc::clone(&called);
                let number = u32::try_from(made.len()).unwrap();
                let handle = list.insert(
                    priority,
                    None,
                    Rc::new(move |_| log.borrow_mut().push(number)),
                );
                made.push((handle, number));
                live.push((handle, priority));
            }
            4 | 5 if !live.is_empty() => {
                let at = usize::try_from(next(live.len() as u64)).unwrap();
                assert!(list.set_priority(live[at].0, priority));
                live[at].1 = priority;
            }
            6 if !live.is_empty() => {
                let at = usize::try_from(next(live.len() as u64)).unwrap();
                assert!(list.remove(live.swap_remove(at).0));
            }
            7 if !live.is_empty() => {
                // Moves during a broadcast: applied by its settle.
                let moves: Vec<(usize, i32)> = (0..4)
                    .map(|_| {
                        let at = usize::try_from(next(live.len() as u64)).unwrap();
                        (at, i32::try_from(next(9)).unwrap() - 4)
                    })
                    .collect();
                let mut walk = list.begin().expect("the list has a block");
                for &(at, priority) in &moves {
                    assert!(list.set_priority(live[at].0, priority));
                    live[at].1 = priority;
                }
                let _ = walk.next();
                drop(walk);
            }
            _ => {
                let _ = list.begin().map(|mut walk| walk.next());
            }
        }
        let mut expected = live.clone();
        expected.sort_by_key(|&(handle, priority)| (-priority, handle));
        let seen: Vec<(DelegateHandle, i32)> = list
            .subscriptions()
            .iter()
            .map(|subscription| (subscription.handle, subscription.priority))
            .collect();
        assert_eq!(seen, expected, "after step {step}");
        if step % 7 == 0 {
            called.borrow_mut().clear();
            list.broadcast_with(0, |subscriber, x| subscriber(x));
            let order: Vec<u32> = expected
                .iter()
                .map(|(handle, _)| made.iter().find(|(h, _)| h == handle).unwrap().1)
                .collect();
            assert_eq!(*called.borrow(), order, "dispatch order after step {step}");
        }
    }
}

mod reentrancy;
