//! Every form of `declare_delegate!` through the facade alone, with no warnings.
#![deny(warnings, missing_docs)]

use lumina::declare_delegate;
use std::rc::Rc;

/// A window.
pub struct Window;

declare_delegate!(
    /// Decides whether a value passes.
    pub Predicate(value: i32) -> bool
);
declare_delegate!(pub Notify());
declare_delegate!(pub NotifyNoParens);
declare_delegate!(pub(crate) Resize(&Window, &mut u32, String) -> usize);

thread_local! {
    // `new` is a `const fn`.
    static UNBOUND: Notify = const { Notify::new() };
}

fn always(_: i32) -> bool {
    true
}

struct Door {
    locked: bool,
}

fn main() {
    let positive = Predicate::create_lambda(|value| value > 0);
    assert!(positive.execute(1));
    let copy = positive.clone();
    assert_eq!(copy.execute_if_bound(-1), Some(false));
    let stat = Predicate::create_static(always);
    assert!(stat.is_bound());
    let door = Rc::new(Door { locked: false });
    let member = Predicate::create_member(&door, |door, _| !door.locked);
    assert!(member.is_bound_to(&door));

    let mut notify = Notify::default();
    assert_eq!(notify.execute_if_bound(), None);
    notify = Notify::create_lambda(|| ());
    notify.execute();
    notify.unbind();
    assert!(!UNBOUND.with(Notify::is_bound));
    let _ = NotifyNoParens::new();

    let resize = Resize::create_lambda(|_window, count, text| {
        *count += 1;
        text.len()
    });
    let mut count = 0;
    assert_eq!(resize.execute(&Window, &mut count, "abc".to_owned()), 3);
    println!("{resize:?} {count}");
}
