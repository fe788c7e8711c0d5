//! `InvocationList::broadcast_until`: the dispatch loop of the event processor (run subscribers
//! in order until one consumes), on the same walk as `broadcast_with`.

use std::cell::RefCell;
use std::rc::Rc;

use lumina::DelegateHandle;
use lumina::invocation::InvocationList;

type Log = Rc<RefCell<Vec<&'static str>>>;
type List = InvocationList<Rc<dyn Fn() -> bool>>;

fn subscriber(log: &Log, name: &'static str, consume: bool) -> Rc<dyn Fn() -> bool> {
    let log = Rc::clone(log);
    Rc::new(move || {
        log.borrow_mut().push(name);
        consume
    })
}

#[test]
fn p2_broadcast_until_stops_at_the_first_subscriber_that_consumes() {
    let log = Log::default();
    let list = List::new();
    let _ = list.insert(0, None, subscriber(&log, "low", true));
    let _ = list.insert(1000, None, subscriber(&log, "viewport", false));
    let _ = list.insert(500, None, subscriber(&log, "editor", true));
    assert!(list.broadcast_until(|f| f()));
    assert_eq!(*log.borrow(), ["viewport", "editor"]);
}

#[test]
fn p2_broadcast_until_runs_everyone_and_returns_false_when_nobody_consumes() {
    let log = Log::default();
    let list = List::new();
    let _ = list.add(subscriber(&log, "a", false));
    let _ = list.add(subscriber(&log, "b", false));
    assert!(!list.broadcast_until(|f| f()));
    assert_eq!(*log.borrow(), ["a", "b"]);
    assert!(
        !List::new().broadcast_until(|f| f()),
        "empty list: nothing consumed"
    );
}

#[test]
fn m2_m3_broadcast_until_skips_removed_and_added_subscribers() {
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
    assert!(!list.broadcast_until(|f| f()));
    assert_eq!(*log.borrow(), ["first", "last"]);
    assert_eq!(list.len(), 3, "first, last and late");
}
