//! Ordering by priority (rule B3): subscriptions to multicast delegates, declared or generic,
//! may carry a priority; higher priorities run first, equal ones in the order they were added,
//! and the plain `add_*` methods are priority 0.

use std::cell::RefCell;
use std::rc::Rc;

use lumina::{MulticastDelegate, declare_multicast_delegate};

declare_multicast_delegate!(Damage(amount: u32));
declare_multicast_delegate!(Resize(size: &(u32, u32)));
declare_multicast_delegate!(Vote() -> &'static str);

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

/// A `Damage` subscriber that logs `name` and the amount.
fn damage_logger(log: &Log, name: &'static str) -> impl Fn(u32) + 'static {
    let log = log.clone();
    move |amount| log.push(format!("{name} {amount}"))
}

#[test]
fn b3_higher_priority_runs_first_and_ties_run_in_the_order_added() {
    let on_damage = Damage::new();
    let log = Log::default();
    let _low = on_damage
        .subscribe()
        .priority(-5)
        .add_lambda(damage_logger(&log, "low"));
    let _first_zero = on_damage.add_lambda(damage_logger(&log, "zero-a"));
    let _high = on_damage
        .subscribe()
        .priority(10)
        .add_lambda(damage_logger(&log, "high"));
    let _second_zero = on_damage
        .subscribe()
        .priority(0)
        .add_lambda(damage_logger(&log, "zero-b"));
    let _high_tie = on_damage
        .subscribe()
        .priority(10)
        .add_lambda(damage_logger(&log, "high-tie"));
    let _third_zero = on_damage.add_lambda(damage_logger(&log, "zero-c"));
    on_damage.broadcast(3);
    assert_eq!(
        log.take(),
        [
            "high 3",
            "high-tie 3",
            "zero-a 3",
            "zero-b 3",
            "zero-c 3",
            "low 3"
        ]
    );
}

#[test]
fn b3_static_and_member_subscriptions_take_a_priority_too() {
    thread_local! {
        static STATIC_LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }
    fn first(size: &(u32, u32)) {
        STATIC_LOG.with(|log| log.borrow_mut().push(format!("static {}", size.0)));
    }
    struct Panel(&'static str);
    let on_resize = Resize::new();
    let panel = Rc::new(Panel("panel"));
    let _member = on_resize
        .subscribe()
        .priority(1)
        .add_member(&panel, |panel, size| {
            STATIC_LOG.with(|log| log.borrow_mut().push(format!("{} {}", panel.0, size.1)));
        });
    let _plain =
        on_resize.add_lambda(|_| STATIC_LOG.with(|log| log.borrow_mut().push("plain".into())));
    let _static = on_resize.subscribe().priority(2).add_static(first);
    on_resize.broadcast(&(640, 480));
    assert_eq!(
        STATIC_LOG.with(|log| log.take()),
        ["static 640", "panel 480", "plain"]
    );

    // The member binding keeps its priority semantics: gone with its owner.
    drop(panel);
    assert_eq!(on_resize.len(), 2);
    on_resize.broadcast(&(1, 1));
    assert_eq!(STATIC_LOG.with(|log| log.take()), ["static 1", "plain"]);
}

#[test]
fn b3_broadcast_collect_returns_results_in_priority_order() {
    let vote = Vote::new();
    let _late = vote.subscribe().priority(-1).add_static(|| "late");
    let _normal = vote.add_lambda(|| "normal");
    let _early = vote.subscribe().priority(100).add_lambda(|| "early");
    assert_eq!(vote.broadcast_collect(), ["early", "normal", "late"]);
}

#[test]
fn b3_removing_a_prioritized_subscription_keeps_the_others_in_order() {
    let on_damage = Damage::new();
    let log = Log::default();
    let _a = on_damage
        .subscribe()
        .priority(1)
        .add_lambda(damage_logger(&log, "a"));
    let b = on_damage
        .subscribe()
        .priority(5)
        .add_lambda(damage_logger(&log, "b"));
    let _c = on_damage
        .subscribe()
        .priority(3)
        .add_lambda(damage_logger(&log, "c"));
    assert!(on_damage.remove(b));
    assert!(!on_damage.remove(b));
    on_damage.broadcast(1);
    assert_eq!(log.take(), ["c 1", "a 1"]);
}

#[test]
fn b3_a_subscription_added_during_a_broadcast_waits_for_the_next_whatever_its_priority() {
    let on_damage = Rc::new(Damage::new());
    let log = Log::default();
    let weak = Rc::downgrade(&on_damage);
    let adder_log = log.clone();
    let _adder = on_damage.add_lambda(move |amount| {
        adder_log.push(format!("adder {amount}"));
        if amount == 1
            && let Some(on_damage) = weak.upgrade()
        {
            // Lands before the adder and after it; neither runs in this broadcast (M2).
            let _ = on_damage
                .subscribe()
                .priority(50)
                .add_lambda(damage_logger(&adder_log, "urgent"));
            let _ = on_damage
                .subscribe()
                .priority(-50)
                .add_lambda(damage_logger(&adder_log, "last"));
        }
    });
    on_damage.broadcast(1);
    assert_eq!(log.take(), ["adder 1"]);
    on_damage.broadcast(2);
    assert_eq!(log.take(), ["urgent 2", "adder 2", "last 2"]);
}

#[test]
fn b3_generic_delegate_orders_lambda_static_and_member_subscriptions() {
    thread_local! {
        static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }
    fn record(entry: String) {
        LOG.with(|log| log.borrow_mut().push(entry));
    }
    struct Hud;
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let hud = Rc::new(Hud);
    let _plain = on_score.add_lambda(|score| record(format!("plain {score}")));
    let _static = on_score
        .subscribe()
        .priority(-3)
        .add_static(|score| record(format!("static {score}")));
    let _member = on_score
        .subscribe()
        .priority(7)
        .add_member(&hud, |_, score| {
            record(format!("hud {score}"));
        });
    let _lambda = on_score
        .subscribe()
        .priority(7)
        .add_lambda(|score| record(format!("tie {score}")));
    on_score.broadcast(9);
    assert_eq!(
        LOG.with(|log| log.take()),
        ["hud 9", "tie 9", "plain 9", "static 9"]
    );
    assert_eq!(on_score.remove_all(&hud), 1);
    on_score.broadcast(1);
    assert_eq!(LOG.with(|log| log.take()), ["tie 1", "plain 1", "static 1"]);
}

#[test]
fn b3_extreme_priorities_order_like_any_other() {
    let on_damage = Damage::new();
    let log = Log::default();
    let _min = on_damage
        .subscribe()
        .priority(i32::MIN)
        .add_lambda(damage_logger(&log, "min"));
    let _max = on_damage
        .subscribe()
        .priority(i32::MAX)
        .add_lambda(damage_logger(&log, "max"));
    let _zero = on_damage.add_lambda(damage_logger(&log, "zero"));
    on_damage.broadcast(0);
    assert_eq!(log.take(), ["max 0", "zero 0", "min 0"]);
}

/// N4's deferred moves keep B3's order: a subscriber moved away and back before anything
/// merged, moved twice during one broadcast (the last change wins), and added above every
/// priority, all run where they belong; nothing runs twice or is lost, and removal by handle
/// finds a moved or deferred subscriber.
#[test]
fn b3_deferred_moves_and_adds_keep_the_order() {
    let delegate: Rc<MulticastDelegate<dyn Fn(u32)>> = Rc::new(MulticastDelegate::new());
    let log = Log::default();
    let a = delegate.add_lambda(damage_logger(&log, "a"));
    let b = delegate.add_lambda(damage_logger(&log, "b"));
    let c = delegate.add_lambda(damage_logger(&log, "c"));
    // Away and back before any merge: back in its place among priority 0.
    assert!(delegate.set_priority(a, 7));
    assert!(delegate.set_priority(a, 0));
    let top = delegate
        .subscribe()
        .priority(9)
        .add_lambda(damage_logger(&log, "top"));
    assert!(delegate.set_priority(c, 8));
    delegate.broadcast(1);
    assert_eq!(log.take(), ["top 1", "c 1", "a 1", "b 1"]);
    // During a broadcast: b moved twice (the last wins), top moved down; the running
    // broadcast keeps its order (M2); b and c tie at 8 and run in the order added.
    let weak = Rc::downgrade(&delegate);
    let once = Rc::new(std::cell::Cell::new(true));
    let _mover = delegate.subscribe().priority(10).add_lambda(move |_| {
        if once.replace(false) {
            let delegate = weak.upgrade().expect("alive");
            assert!(delegate.set_priority(b, 20));
            assert!(delegate.set_priority(b, 8));
            assert!(delegate.set_priority(top, -1));
        }
    });
    delegate.broadcast(2);
    assert_eq!(log.take(), ["top 2", "c 2", "a 2", "b 2"]);
    delegate.broadcast(3);
    assert_eq!(log.take(), ["b 3", "c 3", "a 3", "top 3"]);
    // Deferred ones are found by handle before any merge.
    let late = delegate
        .subscribe()
        .priority(30)
        .add_lambda(damage_logger(&log, "late"));
    assert!(delegate.set_priority(a, 40));
    assert!(delegate.remove(late));
    assert!(!delegate.remove(late));
    assert_eq!(delegate.len(), 5);
    delegate.broadcast(4);
    assert_eq!(log.take(), ["a 4", "b 4", "c 4", "top 4"]);
}
