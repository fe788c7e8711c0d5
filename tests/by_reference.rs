//! The generic `MulticastDelegate<dyn Fn(&A) -> R>` (one argument by reference) has the typed
//! API too, through `lumina::multicast::ByReference` (rules M1, M9, M11, B5).

use std::cell::RefCell;
use std::rc::Rc;

use lumina::MulticastDelegate;
use lumina::multicast::ByReference;

struct Console {
    lines: RefCell<Vec<String>>,
}

#[test]
fn m11_a_reference_argument_reaches_every_subscriber_untouched() {
    let on_chat: MulticastDelegate<dyn Fn(&str)> = MulticastDelegate::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&seen);
    let line = line!() + 1;
    let lambda = on_chat.add_lambda(move |text| sink.borrow_mut().push(format!("lambda {text}")));
    let console = Rc::new(Console {
        lines: RefCell::new(Vec::new()),
    });
    let _member = on_chat.add_member(&console, |console: &Console, text| {
        console.lines.borrow_mut().push(text.to_owned());
    });
    let _static = on_chat.add_static(|text| assert!(!text.is_empty()));
    on_chat.broadcast("hello");
    assert_eq!(*seen.borrow(), ["lambda hello"]);
    assert_eq!(*console.lines.borrow(), ["hello"]);
    // B5: the trait's methods record the caller's place too.
    let site = on_chat.subscriptions()[0].bind_site.expect("recorded");
    assert_eq!(
        (site.file.replace('\\', "/").as_str(), site.line),
        ("tests/by_reference.rs", line)
    );
    assert!(on_chat.remove(lambda));
    drop(console); // M9: the member binding never runs again
    on_chat.broadcast("again");
    assert_eq!(seen.borrow().len(), 1);
    on_chat.broadcast_and_clear("last");
    assert!(on_chat.is_empty());
}

/// A query over a slice of values.
type CountQuery = MulticastDelegate<dyn Fn(&[u32]) -> usize>;

#[test]
fn m1_broadcast_collect_returns_results_in_order() {
    let query = CountQuery::new();
    let _ = query.add_lambda(|values| values.len());
    let _ = query.add_static(|values| values.iter().filter(|v| **v > 1).count());
    assert_eq!(query.broadcast_collect(&[1, 2, 3]), vec![3, 2]);
}
