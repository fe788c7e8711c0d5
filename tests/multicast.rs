//! Behaviour of the generic `MulticastDelegate<dyn Fn(..)>` (rules M1-M9, M11, M12),
//! with an adversarial eye on re-entrancy: subscribers that add, remove, clear and broadcast
//! again while a broadcast runs.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use lumina::{DelegateHandle, MulticastDelegate};

type Signal = MulticastDelegate<dyn Fn()>;

/// What ran, in order.
#[derive(Clone, Default)]
struct Log(Rc<RefCell<Vec<String>>>);

impl Log {
    fn push(&self, entry: impl Into<String>) {
        self.0.borrow_mut().push(entry.into());
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.borrow_mut())
    }
}

/// A subscriber that only logs its name.
fn logger(log: &Log, name: &'static str) -> impl Fn() + 'static {
    let log = log.clone();
    move || log.push(name)
}

/// Counts drops of the closures that capture it (M4).
#[derive(Clone, Default)]
struct Drops(Rc<Cell<usize>>);

struct DropProbe(Rc<Cell<usize>>);

impl Drops {
    fn probe(&self) -> DropProbe {
        DropProbe(Rc::clone(&self.0))
    }
    fn count(&self) -> usize {
        self.0.get()
    }
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// A handle filled in after the subscriber that uses it was added.
#[derive(Clone, Default)]
struct HandleSlot(Rc<Cell<DelegateHandle>>);

impl HandleSlot {
    fn set(&self, handle: DelegateHandle) {
        self.0.set(handle);
    }
    fn get(&self) -> DelegateHandle {
        self.0.get()
    }
}

/// A delegate that subscribers can reach (weakly, so no cycle keeps closures alive).
fn shared_signal() -> (Rc<Signal>, Weak<Signal>) {
    let signal = Rc::new(Signal::new());
    let weak = Rc::downgrade(&signal);
    (signal, weak)
}

fn up(weak: &Weak<Signal>) -> Rc<Signal> {
    weak.upgrade()
        .expect("the delegate outlives its broadcasts")
}

/// The game object of member bindings.
struct Listener {
    name: &'static str,
    log: Log,
}

impl Listener {
    fn new(name: &'static str, log: &Log) -> Rc<Listener> {
        Rc::new(Listener {
            name,
            log: log.clone(),
        })
    }
    fn on_signal(&self) {
        self.log.push(self.name);
    }
}

fn panic_payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// M1: order

#[test]
fn m1_subscribers_run_in_add_order_once_each() {
    let log = Log::default();
    let signal = Signal::new();
    for name in ["a", "b", "c", "d", "e"] {
        let _ = signal.add_lambda(logger(&log, name));
    }
    signal.broadcast();
    assert_eq!(log.take(), ["a", "b", "c", "d", "e"]);
    signal.broadcast();
    assert_eq!(log.take(), ["a", "b", "c", "d", "e"]);
}

#[test]
fn m1_lambdas_statics_and_members_interleave_in_add_order() {
    thread_local! {
        static STATIC_LOG: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }
    fn static_subscriber(x: u32) {
        STATIC_LOG.with(|log| log.borrow_mut().push(if x == 1 { "static" } else { "?" }));
    }
    let order = Rc::new(RefCell::new(Vec::new()));
    let signal: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let o = Rc::clone(&order);
    let _ = signal.add_lambda(move |_| o.borrow_mut().push("lambda"));
    let o = Rc::clone(&order);
    let _ = signal.add_lambda(move |_| {
        o.borrow_mut().push("before-static");
    });
    let _ = signal.add_static(static_subscriber);
    let o = Rc::clone(&order);
    let _ = signal.add_lambda(move |_| {
        // The static subscriber ran right before this one.
        let ran = STATIC_LOG.with(|log| log.borrow().len());
        o.borrow_mut().push(if ran == 1 {
            "after-static"
        } else {
            "static-missing"
        });
    });
    let owner = Rc::new(RefCell::new(Vec::new()));
    let _ = signal.add_member(&owner, |this: &RefCell<Vec<u32>>, x| {
        this.borrow_mut().push(x)
    });
    signal.broadcast(1);
    assert_eq!(*order.borrow(), ["lambda", "before-static", "after-static"]);
    assert_eq!(*owner.borrow(), [1]);
}

#[test]
fn m1_every_arity_up_to_six_broadcasts() {
    let total = Rc::new(Cell::new(0_u32));
    let t = Rc::clone(&total);
    let d0: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let _ = d0.add_lambda(move || t.set(t.get() + 1));
    d0.broadcast();
    let d1: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let t = Rc::clone(&total);
    let _ = d1.add_lambda(move |a| t.set(t.get() + a));
    d1.broadcast(10);
    let d3: MulticastDelegate<dyn Fn(u32, u32, u32)> = MulticastDelegate::new();
    let t = Rc::clone(&total);
    let _ = d3.add_lambda(move |a, b, c| t.set(t.get() + a + b + c));
    d3.broadcast(100, 200, 300);
    type Six = dyn Fn(u32, u32, u32, u32, u32, String);
    let d6: MulticastDelegate<Six> = MulticastDelegate::new();
    let t = Rc::clone(&total);
    let _ = d6.add_lambda(move |a, b, c, d, e, s: String| {
        t.set(t.get() + a + b + c + d + e + s.len() as u32);
    });
    d6.broadcast(1, 1, 1, 1, 1, "xyz".to_owned());
    assert_eq!(total.get(), 1 + 10 + 600 + 8);
}

#[test]
fn m1_broadcast_collect_returns_results_in_call_order() {
    let query: MulticastDelegate<dyn Fn(i32) -> i32> = MulticastDelegate::new();
    let _ = query.add_lambda(|x| x + 1);
    let _ = query.add_static(|x| x * 10);
    let owner = Rc::new(1000);
    let _ = query.add_member(&owner, |base: &i32, x| base + x);
    assert_eq!(query.broadcast_collect(5), [6, 50, 1005]);
    drop(owner);
    assert_eq!(query.broadcast_collect(5), [6, 50]);
    assert!(
        MulticastDelegate::<dyn Fn(i32) -> i32>::new()
            .broadcast_collect(1)
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// M2: only subscribers present when the broadcast started

#[test]
fn m2_added_during_broadcast_does_not_run_in_it_but_in_the_next() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("adder");
        let _ = up(&weak).add_lambda(logger(&inner_log, "late"));
    });
    let _ = signal.add_lambda(logger(&log, "b"));
    signal.broadcast();
    assert_eq!(log.take(), ["adder", "b"]);
    assert_eq!(signal.len(), 3);
    signal.broadcast();
    assert_eq!(log.take(), ["adder", "b", "late"]);
    assert_eq!(signal.len(), 4);
}

#[test]
fn m2_every_subscriber_adding_one_does_not_loop_forever() {
    let calls = Rc::new(Cell::new(0_usize));
    let (signal, weak) = shared_signal();
    fn spawner(weak: Weak<Signal>, calls: Rc<Cell<usize>>) -> impl Fn() + 'static {
        move || {
            calls.set(calls.get() + 1);
            let _ = up(&weak).add_lambda(spawner(weak.clone(), Rc::clone(&calls)));
        }
    }
    let _ = signal.add_lambda(spawner(weak.clone(), Rc::clone(&calls)));
    for expected_len in [2, 4, 8, 16] {
        let before = signal.len();
        calls.set(0);
        signal.broadcast();
        assert_eq!(calls.get(), before, "each present subscriber runs once");
        assert_eq!(signal.len(), expected_len);
    }
}

#[test]
fn m2_added_during_broadcast_runs_in_a_nested_broadcast_started_after_the_add() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let inner_log = log.clone();
    let depth = Rc::new(Cell::new(0));
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        inner_log.push(format!("outer@{d}"));
        if d == 0 {
            depth.set(1);
            let _ = up(&weak).add_lambda(logger(&inner_log, "late"));
            up(&weak).broadcast(); // nested, started after the add: runs "late"
            depth.set(0);
        }
    });
    let _ = signal.add_lambda(logger(&log, "tail"));
    signal.broadcast();
    assert_eq!(
        log.take(),
        ["outer@0", "outer@1", "tail", "late", "tail"],
        "nested runs every present subscriber incl. the new one; outer does not run it"
    );
}

#[test]
fn m2_added_in_a_nested_broadcast_runs_in_neither_that_one_nor_the_enclosing() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0));
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        depth.set(d + 1);
        match d {
            0 => up(&weak).broadcast(),
            1 => {
                let _ = up(&weak).add_lambda(logger(&inner_log, "late"));
            }
            _ => {}
        }
        depth.set(d);
    });
    let _ = signal.add_lambda(logger(&log, "b"));
    signal.broadcast();
    // Nested: first (adds "late"), b. Outer continues: b. "late" never ran.
    assert_eq!(log.take(), ["b", "b"]);
    signal.broadcast();
    assert!(log.take().contains(&"late".to_owned()));
}

// ---------------------------------------------------------------------------------------------
// M3: removed during a broadcast and not yet reached: does not run

#[test]
fn m3_removed_during_broadcast_not_yet_reached_does_not_run() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let victim = HandleSlot::default();
    let v = victim.clone();
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("remover");
        assert!(up(&weak).remove(v.get()), "the victim was live");
    });
    victim.set(signal.add_lambda(logger(&log, "victim")));
    let _ = signal.add_lambda(logger(&log, "after"));
    signal.broadcast();
    assert_eq!(log.take(), ["remover", "after"]);
    assert_eq!(signal.len(), 2);
    assert!(!signal.remove(victim.get()), "already removed (H2)");
}

#[test]
fn m3_removing_the_previous_subscriber_does_not_skip_or_repeat_anyone() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let previous = HandleSlot::default();
    previous.set(signal.add_lambda(logger(&log, "a")));
    let p = previous.clone();
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("b");
        let _ = up(&weak).remove(p.get());
    });
    let _ = signal.add_lambda(logger(&log, "c"));
    let _ = signal.add_lambda(logger(&log, "d"));
    signal.broadcast();
    assert_eq!(log.take(), ["a", "b", "c", "d"]);
    signal.broadcast();
    assert_eq!(log.take(), ["b", "c", "d"]);
}

#[test]
fn m3_removing_every_later_subscriber_stops_the_broadcast_after_self() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let later: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
    let l = Rc::clone(&later);
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("first");
        for handle in l.borrow().iter() {
            assert!(up(&weak).remove(*handle));
        }
    });
    for name in ["x", "y", "z"] {
        let handle = signal.add_lambda(logger(&log, name));
        later.borrow_mut().push(handle);
    }
    signal.broadcast();
    assert_eq!(log.take(), ["first"]);
    assert_eq!(signal.len(), 1);
}

#[test]
fn m3_removed_in_a_nested_broadcast_does_not_run_in_the_enclosing_one() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let victim = HandleSlot::default();
    let depth = Rc::new(Cell::new(0));
    let v = victim.clone();
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        inner_log.push(format!("first@{d}"));
        depth.set(d + 1);
        if d == 0 {
            up(&weak).broadcast();
        } else if d == 1 {
            assert!(up(&weak).remove(v.get()));
        }
        depth.set(d);
    });
    victim.set(signal.add_lambda(logger(&log, "victim")));
    signal.broadcast();
    assert_eq!(log.take(), ["first@0", "first@1"]);
}

#[test]
fn m3_removed_in_the_enclosing_broadcast_does_not_run_in_a_nested_one() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let victim = HandleSlot::default();
    let depth = Rc::new(Cell::new(0));
    let v = victim.clone();
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        inner_log.push(format!("first@{d}"));
        if d == 0 {
            assert!(up(&weak).remove(v.get()));
            depth.set(1);
            up(&weak).broadcast();
            depth.set(0);
        }
    });
    victim.set(signal.add_lambda(logger(&log, "victim")));
    let _ = signal.add_lambda(logger(&log, "tail"));
    signal.broadcast();
    assert_eq!(log.take(), ["first@0", "first@1", "tail", "tail"]);
}

#[test]
fn m3_remove_all_during_broadcast_stops_the_owners_bindings_not_yet_reached() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let owner = Listener::new("member", &log);
    let other = Listener::new("other", &log);
    let target = Rc::clone(&owner);
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("remover");
        assert_eq!(up(&weak).remove_all(&target), 2);
    });
    let _ = signal.add_member(&owner, Listener::on_signal);
    let _ = signal.add_member(&other, Listener::on_signal);
    let _ = signal.add_member(&owner, Listener::on_signal);
    signal.broadcast();
    assert_eq!(log.take(), ["remover", "other"]);
    assert!(!signal.is_bound_to(&owner));
    assert!(signal.is_bound_to(&other));
}

#[test]
fn m3_owner_dropped_during_broadcast_stops_its_bindings_not_yet_reached() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let holder: Rc<RefCell<Option<Rc<Listener>>>> = Rc::default();
    let h = Rc::clone(&holder);
    let inner_log = log.clone();
    let depth = Rc::new(Cell::new(0));
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        inner_log.push(format!("dropper@{d}"));
        if d == 0 {
            drop(h.borrow_mut().take());
            depth.set(1);
            up(&weak).broadcast(); // the binding is not run in a nested broadcast either
            depth.set(0);
        }
    });
    let owner = Listener::new("member", &log);
    let _ = signal.add_member(&owner, Listener::on_signal);
    *holder.borrow_mut() = Some(owner);
    let _ = signal.add_lambda(logger(&log, "tail"));
    signal.broadcast();
    assert_eq!(log.take(), ["dropper@0", "dropper@1", "tail", "tail"]);
    assert_eq!(signal.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// M4: removing self / clearing while running; when closures are dropped

#[test]
fn m4_subscriber_removing_itself_finishes_on_live_captures() {
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let me = HandleSlot::default();
    let m = me.clone();
    let probe = drops.probe();
    let finished = Rc::new(Cell::new(false));
    let f = Rc::clone(&finished);
    me.set(signal.add_lambda(move || {
        assert!(up(&weak).remove(m.get()));
        // Our captures are still alive while we run.
        assert_eq!(probe.0.get(), 0, "captures dropped while still running");
        f.set(true);
    }));
    signal.broadcast();
    assert!(finished.get());
    assert_eq!(drops.count(), 1, "dropped by the end of the broadcast");
    assert!(!signal.is_bound());
}

#[test]
fn m4_subscriber_clearing_the_delegate_while_running_finishes_on_live_captures() {
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let probe = drops.probe();
    let text = String::from("still here");
    let seen = Rc::new(RefCell::new(String::new()));
    let s = Rc::clone(&seen);
    let _ = signal.add_lambda(move || {
        up(&weak).clear();
        let _ = &probe;
        s.borrow_mut().push_str(&text);
    });
    let other = drops.probe();
    let _ = signal.add_lambda(move || {
        let _ = &other;
        panic!("cleared before it was reached: must not run");
    });
    signal.broadcast();
    assert_eq!(*seen.borrow(), "still here");
    assert_eq!(drops.count(), 2);
    assert_eq!(signal.len(), 0);
}

#[test]
fn m4_removed_closure_is_dropped_immediately_outside_a_broadcast() {
    let drops = Drops::default();
    let signal = Signal::new();
    let probe = drops.probe();
    let handle = signal.add_lambda(move || {
        let _ = &probe;
    });
    let keep = drops.probe();
    let _kept = signal.add_lambda(move || {
        let _ = &keep;
    });
    assert_eq!(drops.count(), 0);
    assert!(signal.remove(handle));
    assert_eq!(
        drops.count(),
        1,
        "remove drops the closure before returning"
    );
    signal.clear();
    assert_eq!(
        drops.count(),
        2,
        "clear drops every closure before returning"
    );
}

#[test]
fn m4_remove_all_drops_the_owners_closures_immediately() {
    let drops = Drops::default();
    let signal = Signal::new();
    let owner = Rc::new(());
    for _ in 0..3 {
        let probe = drops.probe();
        let _ = signal.add_member(&owner, move |_| {
            let _ = &probe;
        });
    }
    assert_eq!(signal.remove_all(&owner), 3);
    assert_eq!(drops.count(), 3);
    assert_eq!(signal.remove_all(&owner), 0);
}

#[test]
fn m4_removed_during_broadcast_is_dropped_no_later_than_the_outermost_end() {
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let victims: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
    let v = Rc::clone(&victims);
    let depth = Rc::new(Cell::new(0));
    let seen_inside = Rc::new(Cell::new(usize::MAX));
    let d2 = drops.clone();
    let s = Rc::clone(&seen_inside);
    let _ = signal.add_lambda(move || {
        let d = depth.get();
        depth.set(d + 1);
        if d < 3 {
            // Remove one victim at each level, then go one level deeper.
            let handle = v.borrow()[d];
            assert!(up(&weak).remove(handle));
            up(&weak).broadcast();
        }
        if d == 0 {
            s.set(d2.count());
        }
        depth.set(d);
    });
    for _ in 0..3 {
        let probe = drops.probe();
        let handle = signal.add_lambda(move || {
            let _ = &probe;
        });
        victims.borrow_mut().push(handle);
    }
    signal.broadcast();
    assert!(seen_inside.get() <= 3);
    assert_eq!(
        drops.count(),
        3,
        "every removed closure is dropped once the outermost returns"
    );
    assert_eq!(signal.len(), 1);
}

#[test]
fn m4_clear_then_subscribers_added_and_removed_inside_are_all_dropped_by_the_end() {
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let d = drops.clone();
    let _ = signal.add_lambda(move || {
        let signal = up(&weak);
        signal.clear();
        let probe = d.probe();
        let handle = signal.add_lambda(move || {
            let _ = &probe;
        });
        assert!(signal.remove(handle));
    });
    signal.broadcast();
    // The clearing subscriber itself and the one added-then-removed.
    assert_eq!(drops.count(), 1);
    assert!(!signal.is_bound());
}

/// A capture whose drop re-enters the delegate: reads it and adds a subscriber.
struct ReentrantDrop {
    signal: Weak<Signal>,
    log: Log,
}

impl Drop for ReentrantDrop {
    fn drop(&mut self) {
        if let Some(signal) = self.signal.upgrade() {
            self.log.push(format!("dropped, len {}", signal.len()));
            let _ = signal.add_lambda(logger(&self.log, "added-by-drop"));
        }
    }
}

#[test]
fn m4_closures_whose_drop_reenters_the_delegate_are_dropped_safely() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let subscribe = |signal: &Signal| {
        let capture = ReentrantDrop {
            signal: weak.clone(),
            log: log.clone(),
        };
        signal.add_lambda(move || {
            let _ = &capture;
        })
    };
    // remove
    let handle = subscribe(&signal);
    assert!(signal.remove(handle));
    assert_eq!(log.take(), ["dropped, len 0"]);
    assert_eq!(signal.len(), 1);
    // clear outside a broadcast: what the drop adds comes after the clear and stays
    signal.clear();
    let _ = subscribe(&signal);
    let _ = subscribe(&signal);
    signal.clear();
    assert_eq!(log.take(), ["dropped, len 0", "dropped, len 1"]);
    assert_eq!(signal.len(), 2);
    signal.broadcast();
    assert_eq!(log.take(), ["added-by-drop", "added-by-drop"]);
    // remove_all and clear during a broadcast
    signal.clear();
    let owner = Rc::new(());
    for _ in 0..2 {
        let capture = ReentrantDrop {
            signal: weak.clone(),
            log: log.clone(),
        };
        let _ = signal.add_member(&owner, move |_: &()| {
            let _ = &capture;
        });
    }
    let target = Rc::clone(&owner);
    let w = weak.clone();
    let _ = signal.add_lambda(move || {
        let signal = up(&w);
        assert_eq!(signal.remove_all(&target), 2);
        signal.clear();
    });
    let _ = subscribe(&signal);
    signal.broadcast();
    // During a broadcast, remove_all and clear only mark: the three closures are dropped when
    // the broadcast ends (M4), after the clear. Each drop re-entered the delegate and added a
    // subscriber, which comes after the clear and stays. None ran in this broadcast (M2).
    let entries = log.take();
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert!(
        entries.iter().all(|e| e.starts_with("dropped")),
        "{entries:?}"
    );
    assert_eq!(signal.len(), 3);
    signal.broadcast();
    assert_eq!(log.take(), ["added-by-drop"; 3]);
}

// ---------------------------------------------------------------------------------------------
// M5: nesting to any depth; compaction once, at the outermost end

#[test]
fn m5_nested_broadcasts_with_removals_at_each_level_compact_only_at_the_outermost_end() {
    // Member bindings make compaction observable: a removed binding's closure holds one weak
    // reference to its owner and its list entry another; during a broadcast both stay until
    // the outermost broadcast ends (M4), which drops the closure and compacts the list.
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let owners: Vec<Rc<Listener>> = ["m0", "m1", "m2", "m3"]
        .into_iter()
        .map(|name| Listener::new(name, &log))
        .collect();
    let member_handles: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
    let weak_counts: Rc<RefCell<Vec<Vec<usize>>>> = Rc::default();
    let depth = Rc::new(Cell::new(0_usize));
    let observed_owners: Vec<Weak<Listener>> = owners.iter().map(Rc::downgrade).collect();
    let (mh, wc, dep, inner_log) = (
        Rc::clone(&member_handles),
        Rc::clone(&weak_counts),
        Rc::clone(&depth),
        log.clone(),
    );
    let _ = signal.add_lambda(move || {
        let d = dep.get();
        inner_log.push(format!("driver@{d}"));
        if d < 4 {
            assert!(up(&weak).remove(mh.borrow()[d]), "level {d} removes m{d}");
            dep.set(d + 1);
            up(&weak).broadcast();
            dep.set(d);
            // Back at this level: removed entries must still be in the list (not compacted).
            wc.borrow_mut()
                .push(observed_owners.iter().map(Weak::weak_count).collect());
        }
    });
    for owner in &owners {
        let handle = signal.add_member(owner, Listener::on_signal);
        member_handles.borrow_mut().push(handle);
    }
    // Per owner: our observer, the closure and the list entry.
    assert!(owners.iter().all(|o| Rc::weak_count(o) == 3));
    signal.broadcast();
    // Each level removed the member it names before nesting, so no member ever ran.
    assert_eq!(
        log.take(),
        ["driver@0", "driver@1", "driver@2", "driver@3", "driver@4"]
    );
    // Observed from levels 3, 2, 1, 0 on the way out: the observer, the closure and the list
    // entry are left for every removed member: nothing dropped or compacted yet.
    for counts in weak_counts.borrow().iter() {
        assert_eq!(counts, &[3, 3, 3, 3]);
    }
    assert_eq!(weak_counts.borrow().len(), 4);
    // After the outermost returned: compacted, only the observer is left.
    assert!(owners.iter().all(|o| Rc::weak_count(o) == 1));
    assert_eq!(signal.len(), 1);
    assert!(!signal.is_broadcasting());
}

#[test]
fn m5_nested_broadcasts_work_to_a_depth_of_fifty() {
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0_u32));
    let max_seen = Rc::new(Cell::new(0_u32));
    let tail_runs = Rc::new(Cell::new(0_u32));
    let (d, m) = (Rc::clone(&depth), Rc::clone(&max_seen));
    let _ = signal.add_lambda(move || {
        let level = d.get();
        m.set(m.get().max(level));
        if level < 50 {
            d.set(level + 1);
            up(&weak).broadcast();
            d.set(level);
        }
    });
    let t = Rc::clone(&tail_runs);
    let _ = signal.add_lambda(move || t.set(t.get() + 1));
    signal.broadcast();
    assert_eq!(max_seen.get(), 50);
    assert_eq!(
        tail_runs.get(),
        51,
        "the tail runs once per broadcast level"
    );
    assert!(!signal.is_broadcasting());
}

#[test]
fn m5_each_nested_level_adds_and_removes_and_only_sees_what_was_present_at_its_start() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0_usize));
    let added: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
    let (d, a, inner_log) = (Rc::clone(&depth), Rc::clone(&added), log.clone());
    let _ = signal.add_lambda(move || {
        let level = d.get();
        inner_log.push(format!("driver@{level}"));
        if level < 3 {
            let signal = up(&weak);
            let name: &'static str = ["new0", "new1", "new2"][level];
            a.borrow_mut()
                .push(signal.add_lambda(logger(&inner_log, name)));
            if level > 0 {
                // Remove what the enclosing level added: it was about to run here.
                assert!(signal.remove(a.borrow()[level - 1]));
            }
            d.set(level + 1);
            signal.broadcast();
            d.set(level);
        }
    });
    signal.broadcast();
    assert_eq!(
        log.take(),
        ["driver@0", "driver@1", "driver@2", "driver@3", "new2"],
        "new0 and new1 were removed by the next level before they could run"
    );
    assert_eq!(signal.len(), 2);
}

// ---------------------------------------------------------------------------------------------
// M6: clear during a broadcast; broadcast_and_clear

#[test]
fn m6_clear_during_broadcast_stops_the_rest_of_it() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let _ = signal.add_lambda(logger(&log, "a"));
    let inner_log = log.clone();
    let _ = signal.add_lambda(move || {
        inner_log.push("clearer");
        up(&weak).clear();
        assert!(!up(&weak).is_bound());
        assert_eq!(up(&weak).len(), 0);
    });
    let _ = signal.add_lambda(logger(&log, "c"));
    signal.broadcast();
    assert_eq!(log.take(), ["a", "clearer"]);
    signal.broadcast();
    assert!(log.take().is_empty());
}

#[test]
fn m6_clear_then_add_then_nested_broadcast_runs_only_the_new_subscriber() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let inner_log = log.clone();
    let once = Cell::new(true);
    let _ = signal.add_lambda(move || {
        inner_log.push("clearer");
        if once.replace(false) {
            let signal = up(&weak);
            signal.clear();
            let _ = signal.add_lambda(logger(&inner_log, "fresh"));
            signal.broadcast(); // M2: added before this nested broadcast started
            inner_log.push("nested-done");
        }
    });
    let _ = signal.add_lambda(logger(&log, "old"));
    signal.broadcast();
    assert_eq!(log.take(), ["clearer", "fresh", "nested-done"]);
    assert_eq!(signal.len(), 1);
    signal.broadcast();
    assert_eq!(
        log.take(),
        ["fresh"],
        "added after the clear: runs next time"
    );
}

#[test]
fn m6_clear_in_a_nested_broadcast_stops_the_enclosing_ones_too() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0));
    let (d, inner_log) = (Rc::clone(&depth), log.clone());
    let _ = signal.add_lambda(move || {
        let level = d.get();
        inner_log.push(format!("driver@{level}"));
        d.set(level + 1);
        match level {
            0 | 1 => up(&weak).broadcast(),
            _ => up(&weak).clear(),
        }
        d.set(level);
    });
    let _ = signal.add_lambda(logger(&log, "tail"));
    signal.broadcast();
    assert_eq!(log.take(), ["driver@0", "driver@1", "driver@2"]);
    assert!(!signal.is_bound());
}

#[test]
fn m6_broadcast_and_clear_runs_once_and_drops_what_was_added_during_it() {
    let log = Log::default();
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let (inner_log, d) = (log.clone(), drops.clone());
    let probe = drops.probe();
    let _ = signal.add_lambda(move || {
        let _ = &probe;
        inner_log.push("first");
        let late = d.probe();
        let _ = up(&weak).add_lambda(move || {
            let _ = &late;
            panic!("added during broadcast_and_clear: must never run");
        });
    });
    signal.broadcast_and_clear();
    assert_eq!(log.take(), ["first"]);
    assert!(!signal.is_bound());
    assert_eq!(drops.count(), 2);
    signal.broadcast();
    assert!(log.take().is_empty());
}

#[test]
fn m6_broadcast_and_clear_inside_a_broadcast_stops_the_enclosing_one() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0));
    let (d, inner_log) = (Rc::clone(&depth), log.clone());
    let _ = signal.add_lambda(move || {
        let level = d.get();
        inner_log.push(format!("first@{level}"));
        if level == 0 {
            d.set(1);
            up(&weak).broadcast_and_clear();
            d.set(0);
        }
    });
    let _ = signal.add_lambda(logger(&log, "second"));
    signal.broadcast();
    assert_eq!(log.take(), ["first@0", "first@1", "second"]);
    assert!(!signal.is_bound());
}

// ---------------------------------------------------------------------------------------------
// M7: panic safety

fn quiet_catch(f: impl FnOnce()) -> String {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    panic_payload_text(&*payload)
}

#[test]
fn m7_panicking_subscriber_reaches_the_broadcaster_and_leaves_the_delegate_usable() {
    let log = Log::default();
    let signal = Signal::new();
    let _ = signal.add_lambda(logger(&log, "a"));
    let bomb = signal.add_lambda(|| panic!("boom"));
    let _ = signal.add_lambda(logger(&log, "c"));
    let message = quiet_catch(|| signal.broadcast());
    assert_eq!(message, "boom");
    assert_eq!(log.take(), ["a"], "the panic stopped that broadcast");
    assert!(!signal.is_broadcasting(), "lock released");
    assert_eq!(signal.len(), 3);
    assert!(signal.remove(bomb));
    let _ = signal.add_lambda(logger(&log, "d"));
    signal.broadcast();
    assert_eq!(log.take(), ["a", "c", "d"]);
}

#[test]
fn m7_deferred_removals_are_applied_after_a_panic() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let owner = Listener::new("member", &log);
    let member = HandleSlot::default();
    let m = member.clone();
    let _ = signal.add_member(&owner, Listener::on_signal);
    let _ = signal.add_lambda(move || {
        let signal = up(&weak);
        assert!(signal.remove(m.get()));
        panic!("after removing");
    });
    member.set(signal.add_member(&owner, Listener::on_signal));
    let _ = signal.add_lambda(logger(&log, "tail"));
    assert_eq!(Rc::weak_count(&owner), 4);
    let _ = quiet_catch(|| signal.broadcast());
    assert_eq!(log.take(), ["member"]);
    // The removed entry is gone (compacted): only the first binding's two weak references remain.
    assert_eq!(Rc::weak_count(&owner), 2);
    assert_eq!(signal.len(), 3);
    assert!(!signal.remove(member.get()));
    assert!(!signal.is_broadcasting());
}

#[test]
fn m7_panic_inside_a_nested_broadcast_unwinds_every_level_and_releases_every_lock() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0));
    let victim = HandleSlot::default();
    let (d, v, inner_log) = (Rc::clone(&depth), victim.clone(), log.clone());
    let _ = signal.add_lambda(move || {
        let level = d.get();
        inner_log.push(format!("driver@{level}"));
        d.set(level + 1);
        match level {
            0 => up(&weak).broadcast(),
            1 => {
                assert!(up(&weak).remove(v.get()));
                up(&weak).broadcast();
            }
            2 => panic!("deep"),
            _ => {}
        }
        d.set(level);
    });
    victim.set(signal.add_lambda(logger(&log, "victim")));
    let _ = signal.add_lambda(logger(&log, "tail"));
    assert_eq!(quiet_catch(|| signal.broadcast()), "deep");
    assert_eq!(log.take(), ["driver@0", "driver@1", "driver@2"]);
    assert!(!signal.is_broadcasting());
    assert_eq!(signal.len(), 2, "the removal made at level 1 stuck");
    depth.set(5); // the driver now just logs
    signal.broadcast();
    assert_eq!(log.take(), ["driver@5", "tail"]);
}

#[test]
fn m7_panic_caught_inside_a_subscriber_lets_the_enclosing_broadcast_continue() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let depth = Rc::new(Cell::new(0));
    let (d, inner_log) = (Rc::clone(&depth), log.clone());
    let _ = signal.add_lambda(move || {
        let level = d.get();
        inner_log.push(format!("driver@{level}"));
        if level == 0 {
            d.set(1);
            let signal = up(&weak);
            let caught = panic::catch_unwind(AssertUnwindSafe(|| signal.broadcast()));
            assert!(caught.is_err());
            // The nested broadcast's lock was released, ours is still held.
            assert!(signal.is_broadcasting());
            let _ = signal.add_lambda(logger(&inner_log, "late"));
            d.set(0);
        }
    });
    let panicky = Rc::clone(&depth);
    let _ = signal.add_lambda(move || {
        if panicky.get() == 1 {
            panic!("only in the nested broadcast");
        }
    });
    let _ = signal.add_lambda(logger(&log, "tail"));
    signal.broadcast();
    assert_eq!(log.take(), ["driver@0", "driver@1", "tail"]);
    signal.broadcast();
    assert_eq!(log.take(), ["driver@0", "driver@1", "tail", "late"]);
}

#[test]
fn m7_panicking_subscriber_that_cleared_first_leaves_an_empty_usable_delegate() {
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let _ = signal.add_lambda(move || {
        up(&weak).clear();
        panic!("cleared then panicked");
    });
    let _ = signal.add_lambda(logger(&log, "never"));
    let _ = quiet_catch(|| signal.broadcast());
    assert!(!signal.is_bound());
    let _ = signal.add_lambda(logger(&log, "after"));
    signal.broadcast();
    assert_eq!(log.take(), ["after"]);
}

// ---------------------------------------------------------------------------------------------
// M8: is_bound and len count live subscribers only

#[test]
fn m8_len_and_is_bound_count_live_subscribers_only() {
    let signal = Signal::new();
    assert!(!signal.is_bound());
    assert!(signal.is_empty());
    assert_eq!(signal.len(), 0);
    let a = signal.add_lambda(|| {});
    let owner = Rc::new(());
    let _ = signal.add_member(&owner, |_| {});
    assert_eq!(signal.len(), 2);
    assert!(signal.remove(a));
    assert_eq!(signal.len(), 1);
    assert!(signal.is_bound());
    drop(owner);
    assert_eq!(signal.len(), 0, "a binding whose owner died does not count");
    assert!(!signal.is_bound());
    assert!(signal.is_empty());
}

#[test]
fn m8_len_during_a_broadcast_reflects_adds_and_removes_at_once() {
    let (signal, weak) = shared_signal();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let victim = HandleSlot::default();
    let (s, v) = (Rc::clone(&seen), victim.clone());
    let _ = signal.add_lambda(move || {
        let signal = up(&weak);
        s.borrow_mut().push(signal.len());
        assert!(signal.remove(v.get()));
        s.borrow_mut().push(signal.len());
        let _ = signal.add_lambda(|| {});
        s.borrow_mut().push(signal.len());
        signal.clear();
        s.borrow_mut().push(signal.len());
        s.borrow_mut().push(usize::from(signal.is_bound()));
    });
    victim.set(signal.add_lambda(|| {}));
    signal.broadcast();
    assert_eq!(*seen.borrow(), [2, 1, 2, 0, 0]);
}

// ---------------------------------------------------------------------------------------------
// M9: weak member bindings

#[test]
fn m9_member_binding_holds_its_owner_weakly() {
    let log = Log::default();
    let signal = Signal::new();
    let owner = Listener::new("member", &log);
    let _ = signal.add_member(&owner, Listener::on_signal);
    assert_eq!(Rc::strong_count(&owner), 1);
    signal.broadcast();
    assert_eq!(log.take(), ["member"]);
    assert_eq!(
        Rc::strong_count(&owner),
        1,
        "no strong reference kept after a call"
    );
}

#[test]
fn m9_binding_of_a_dropped_owner_never_runs_stops_counting_and_is_pruned() {
    let log = Log::default();
    let drops = Drops::default();
    let signal = Signal::new();
    let owner = Listener::new("member", &log);
    let probe = drops.probe();
    let handle = signal.add_member(&owner, move |this: &Listener| {
        let _ = &probe;
        this.on_signal();
    });
    let _ = signal.add_lambda(logger(&log, "lambda"));
    signal.broadcast();
    assert_eq!(log.take(), ["member", "lambda"]);
    drop(owner);
    assert_eq!(signal.len(), 1);
    assert!(signal.is_bound());
    signal.broadcast();
    assert_eq!(log.take(), ["lambda"]);
    // Pruned: the binding's closure is gone.
    assert_eq!(
        drops.count(),
        1,
        "the dead binding was pruned by the broadcast"
    );
    assert!(
        !signal.remove(handle),
        "a pruned binding is no longer a subscription"
    );
    assert_eq!(signal.len(), 1);
}

#[test]
fn m9_binding_of_an_owner_dropped_earlier_in_the_same_broadcast_is_pruned_at_once() {
    let drops = Drops::default();
    let (signal, weak) = shared_signal();
    let holder = Rc::new(RefCell::new(Some(Rc::new(()))));
    let h = Rc::clone(&holder);
    let _ = signal.add_lambda(move || {
        drop(h.borrow_mut().take());
        assert_eq!(up(&weak).len(), 1);
    });
    let probe = drops.probe();
    let owner = holder.borrow().clone().expect("set");
    let _ = signal.add_member(&owner, move |_: &()| {
        let _ = &probe;
        panic!("owner is dead: must not run");
    });
    drop(owner);
    signal.broadcast();
    assert_eq!(drops.count(), 1);
    assert_eq!(signal.len(), 1);
}

#[test]
fn m9_owner_released_when_a_self_removed_closure_is_dropped_never_runs_its_bindings() {
    // The first subscriber holds the only strong reference to the owner of the second one and
    // removes itself: its closure is dropped when the broadcast ends (M4), which drops the
    // owner. The member binding runs in this broadcast (its owner is alive, M9), never after,
    // and nothing may panic.
    let log = Log::default();
    let (signal, weak) = shared_signal();
    let owner = Listener::new("member", &log);
    let me = HandleSlot::default();
    let (m, keep, inner_log) = (me.clone(), Rc::clone(&owner), log.clone());
    me.set(signal.add_lambda(move || {
        let _ = &keep;
        inner_log.push("one-shot");
        assert!(up(&weak).remove(m.get()));
    }));
    let _ = signal.add_member(&owner, Listener::on_signal);
    let _ = signal.add_lambda(logger(&log, "tail"));
    let observer = Rc::downgrade(&owner);
    drop(owner);
    signal.broadcast();
    assert!(
        observer.upgrade().is_none(),
        "the owner died with the one-shot closure"
    );
    assert_eq!(log.take(), ["one-shot", "member", "tail"]);
    assert_eq!(signal.len(), 1);
    signal.broadcast();
    assert_eq!(log.take(), ["tail"]);
}

#[test]
fn m9_remove_all_removes_every_binding_of_that_owner_only() {
    let log = Log::default();
    let signal = Signal::new();
    let a = Listener::new("a", &log);
    let b = Listener::new("b", &log);
    let _ = signal.add_member(&a, Listener::on_signal);
    let _ = signal.add_member(&b, Listener::on_signal);
    let _ = signal.add_member(&a, Listener::on_signal);
    let lambda = signal.add_lambda(logger(&log, "lambda"));
    assert!(signal.is_bound_to(&a));
    assert!(signal.is_bound_to(&b));
    assert_eq!(signal.remove_all(&a), 2);
    assert!(!signal.is_bound_to(&a));
    assert!(signal.is_bound_to(&b));
    assert_eq!(signal.remove_all(&a), 0);
    assert_eq!(signal.len(), 2);
    signal.broadcast();
    assert_eq!(log.take(), ["b", "lambda"]);
    // An unrelated object (even one never bound) removes nothing.
    let stranger = Rc::new(17_u64);
    assert_eq!(signal.remove_all(&stranger), 0);
    assert!(!signal.is_bound_to(&stranger));
    assert!(signal.remove(lambda));
}

#[test]
fn m9_remove_all_and_is_bound_to_recognise_the_owner_through_any_rc_type() {
    trait Named {
        fn name(&self) -> &'static str;
    }
    impl Named for Listener {
        fn name(&self) -> &'static str {
            self.name
        }
    }
    let log = Log::default();
    let signal = Signal::new();
    let concrete = Listener::new("x", &log);
    let _ = signal.add_member(&concrete, Listener::on_signal);
    let as_trait: Rc<dyn Named> = concrete.clone();
    assert_eq!(as_trait.name(), "x");
    assert!(signal.is_bound_to(&as_trait));
    assert_eq!(signal.remove_all(&as_trait), 1);
    assert!(!signal.is_bound_to(&concrete));
}

#[test]
fn m9_is_bound_to_is_false_once_the_bindings_were_removed_by_handle() {
    let log = Log::default();
    let signal = Signal::new();
    let owner = Listener::new("member", &log);
    let handle = signal.add_member(&owner, Listener::on_signal);
    assert!(signal.is_bound_to(&owner));
    assert!(signal.remove(handle));
    assert!(!signal.is_bound_to(&owner));
    assert_eq!(
        Rc::weak_count(&owner),
        0,
        "no weak reference left after removal"
    );
}

// ---------------------------------------------------------------------------------------------
// M11: owned arguments cloned at most N - 1 times

/// An argument that counts its clones and knows whether it is the original.
struct Counted {
    clones: Rc<Cell<usize>>,
    original: bool,
}

impl Counted {
    fn new() -> (Counted, Rc<Cell<usize>>) {
        let clones = Rc::new(Cell::new(0));
        (
            Counted {
                clones: Rc::clone(&clones),
                original: true,
            },
            clones,
        )
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.clones.set(self.clones.get() + 1);
        Counted {
            clones: Rc::clone(&self.clones),
            original: false,
        }
    }
}

#[test]
fn m11_owned_argument_is_cloned_exactly_n_minus_one_times() {
    for n in [0_usize, 1, 2, 3, 7, 64] {
        let signal: MulticastDelegate<dyn Fn(Counted)> = MulticastDelegate::new();
        let originals = Rc::new(RefCell::new(Vec::new()));
        for _ in 0..n {
            let o = Rc::clone(&originals);
            let _ = signal.add_lambda(move |arg: Counted| o.borrow_mut().push(arg.original));
        }
        let (arg, clones) = Counted::new();
        signal.broadcast(arg);
        assert_eq!(clones.get(), n.saturating_sub(1), "n = {n}");
        let originals = originals.borrow();
        assert_eq!(originals.len(), n);
        if n > 0 {
            assert!(originals[n - 1], "the last subscriber gets the original");
            assert!(originals[..n - 1].iter().all(|&o| !o));
        }
    }
}

#[test]
fn m11_single_subscriber_gets_the_original_without_a_clone() {
    let signal: MulticastDelegate<dyn Fn(Counted, Counted)> = MulticastDelegate::new();
    let got_originals = Rc::new(Cell::new(false));
    let g = Rc::clone(&got_originals);
    let _ = signal.add_lambda(move |a: Counted, b: Counted| g.set(a.original && b.original));
    let (a, a_clones) = Counted::new();
    let (b, b_clones) = Counted::new();
    signal.broadcast(a, b);
    assert!(got_originals.get());
    assert_eq!((a_clones.get(), b_clones.get()), (0, 0));
}

#[test]
fn m11_every_owned_argument_is_cloned_n_minus_one_times_and_collect_too() {
    let signal: MulticastDelegate<dyn Fn(Counted, u8, Counted) -> bool> = MulticastDelegate::new();
    for _ in 0..4 {
        let _ = signal.add_lambda(|a: Counted, _, c: Counted| a.original && c.original);
    }
    let (a, a_clones) = Counted::new();
    let (c, c_clones) = Counted::new();
    let results = signal.broadcast_collect(a, 1, c);
    assert_eq!(results, [false, false, false, true]);
    assert_eq!((a_clones.get(), c_clones.get()), (3, 3));
}

#[test]
fn m11_skipped_subscribers_cost_no_clones() {
    // 6 subscribers at the start; the first removes three, one owner dies: at most 5 clones,
    // and no clone for a subscriber that does not run.
    let (signal_rc, weak) = {
        let signal: Rc<MulticastDelegate<dyn Fn(Counted)>> = Rc::new(MulticastDelegate::new());
        let weak = Rc::downgrade(&signal);
        (signal, weak)
    };
    let runs = Rc::new(Cell::new(0));
    let victims: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
    let (v, r) = (Rc::clone(&victims), Rc::clone(&runs));
    let _ = signal_rc.add_lambda(move |_arg: Counted| {
        r.set(r.get() + 1);
        let signal = weak.upgrade().expect("alive");
        for handle in v.borrow().iter() {
            assert!(signal.remove(*handle));
        }
    });
    for _ in 0..3 {
        let handle = signal_rc.add_lambda(|_arg: Counted| panic!("removed: must not run"));
        victims.borrow_mut().push(handle);
    }
    let r = Rc::clone(&runs);
    let _ = signal_rc.add_lambda(move |_arg: Counted| r.set(r.get() + 1));
    let r = Rc::clone(&runs);
    let last_was_original = Rc::new(Cell::new(false));
    let l = Rc::clone(&last_was_original);
    let _ = signal_rc.add_lambda(move |arg: Counted| {
        r.set(r.get() + 1);
        l.set(arg.original);
    });
    let (arg, clones) = Counted::new();
    signal_rc.broadcast(arg);
    assert_eq!(runs.get(), 3);
    assert_eq!(
        clones.get(),
        2,
        "one clone per subscriber that ran, except the last"
    );
    assert!(last_was_original.get());
}

#[test]
fn m11_removing_the_last_subscriber_during_the_broadcast_keeps_the_bound() {
    let signal: Rc<MulticastDelegate<dyn Fn(Counted)>> = Rc::new(MulticastDelegate::new());
    let weak = Rc::downgrade(&signal);
    let last = HandleSlot::default();
    let l = last.clone();
    let _ = signal.add_lambda(move |_arg: Counted| {
        assert!(weak.upgrade().expect("alive").remove(l.get()));
    });
    last.set(signal.add_lambda(|_arg: Counted| panic!("removed")));
    let (arg, clones) = Counted::new();
    signal.broadcast(arg);
    assert!(clones.get() <= 1, "N = 2 at the start: at most one clone");
}

// ---------------------------------------------------------------------------------------------
// M12: removal by handle is O(log n)

/// A small deterministic generator (xorshift64*), so the scaling test needs no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The longest of `runs` timings of `f`.
fn slowest(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).max().expect("runs > 0")
}

const SCALE_N: usize = 100_000;

/// The linear yardstick: one broadcast over `SCALE_N` subscribers (O(n), one visit each).
fn broadcast_yardstick() -> Duration {
    let signal = Signal::new();
    let calls = Rc::new(Cell::new(0_usize));
    for _ in 0..SCALE_N {
        let c = Rc::clone(&calls);
        let _ = signal.add_lambda(move || c.set(c.get() + 1));
    }
    slowest(3, || {
        let started = Instant::now();
        signal.broadcast();
        started.elapsed()
    })
}

/// Asserts that `remove_all_in_random_order(seed)`, which removes `SCALE_N` subscribers by
/// handle and returns how long that took, costs O(log n) per removal, not O(n).
///
/// It is compared with ONE broadcast over as many subscribers (n visits). O(log n) removal
/// costs some ~17 binary-search steps per handle (measured ratios: 8 to 30 in a debug build);
/// a linear scan per removal visits ~n/4 entries per handle, a ratio in the thousands
/// (measured: 120 s against a few milliseconds). The threshold of 200 sits between them with a
/// wide margin both ways, and both sides are timed in the same process, so neither build mode
/// nor machine speed matters. The yardstick keeps its slowest of 3 runs and the removal is
/// retried up to 3 times, so one stall of a loaded machine cannot fail the test.
fn assert_removal_is_log_n(
    what: &str,
    mut remove_all_in_random_order: impl FnMut(u64) -> Duration,
) {
    let yardstick = broadcast_yardstick();
    let mut removal = Duration::ZERO;
    for attempt in 0..3 {
        removal = remove_all_in_random_order(0x9E37_79B9_7F4A_7C15 + attempt);
        if removal < yardstick * 200 {
            return;
        }
    }
    panic!(
        "{what}: removing {SCALE_N} subscribers took {removal:?}, one broadcast over as many \
         {yardstick:?}: removal by handle is not O(log n)"
    );
}

#[test]
fn m12_removing_subscribers_in_random_order_costs_log_n_each_not_n() {
    assert_removal_is_log_n("outside a broadcast", |seed| {
        let signal = Signal::new();
        let mut handles: Vec<DelegateHandle> =
            (0..SCALE_N).map(|_| signal.add_static(|| {})).collect();
        Rng(seed).shuffle(&mut handles);
        let started = Instant::now();
        for handle in &handles {
            assert!(signal.remove(*handle));
        }
        let elapsed = started.elapsed();
        assert!(!signal.is_bound());
        assert!(
            handles
                .iter()
                .take(100)
                .all(|handle| !signal.remove(*handle))
        );
        elapsed
    });
}

#[test]
fn m12_removing_every_subscriber_during_a_broadcast_costs_log_n_each_not_n() {
    // Every removal made from inside a broadcast (tombstones, no compaction until its end).
    assert_removal_is_log_n("during a broadcast", |seed| {
        let (signal, weak) = shared_signal();
        let handles: Rc<RefCell<Vec<DelegateHandle>>> = Rc::default();
        let h = Rc::clone(&handles);
        let _ = signal.add_lambda(move || {
            let signal = up(&weak);
            for handle in h.borrow().iter() {
                assert!(signal.remove(*handle));
            }
        });
        let mut list: Vec<DelegateHandle> = (0..SCALE_N)
            .map(|_| signal.add_static(|| panic!("removed before it was reached")))
            .collect();
        Rng(seed).shuffle(&mut list);
        *handles.borrow_mut() = list;
        let started = Instant::now();
        signal.broadcast();
        let elapsed = started.elapsed();
        assert_eq!(signal.len(), 1);
        elapsed
    });
}

#[test]
fn m12_removing_prioritized_subscribers_costs_log_n_each_not_n() {
    // Subscribers inserted with a few priorities in random order (as the event processor's
    // input layers do): the list is no longer in handle order, removal must still not scan it.
    assert_removal_is_log_n("prioritized list", |seed| {
        let signal = Signal::new();
        let mut rng = Rng(seed);
        let mut handles: Vec<DelegateHandle> = (0..SCALE_N)
            .map(|_| {
                let priority = [1000, 500, 0, -10][(rng.next() % 4) as usize];
                let callable: Rc<dyn Fn()> = Rc::new(|| {});
                signal.subscribe().priority(priority).add_shared(callable)
            })
            .collect();
        rng.shuffle(&mut handles);
        let started = Instant::now();
        for handle in &handles {
            assert!(signal.remove(*handle));
        }
        let elapsed = started.elapsed();
        assert!(!signal.is_bound());
        elapsed
    });
}
