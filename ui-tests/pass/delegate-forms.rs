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

declare_delegate!(
    /// Borrowed parameters with elided lifetimes, in paths too.
    pub Borrowing(&str, std::borrow::Cow<'_, str>, &mut Vec<u8>) -> Option<&'static str>
);

/// Member bindings with borrowed parameters.
pub fn borrowing() {
    let owner = Rc::new(());
    let borrowing = Borrowing::create_member(&owner, |_, text, cow, bytes| {
        bytes.extend_from_slice(text.as_bytes());
        cow.is_empty().then_some("empty")
    });
    let mut bytes = Vec::new();
    assert_eq!(
        borrowing.execute("ab", "".into(), &mut bytes),
        Some("empty")
    );
}

/// Not `Clone`: a single-cast delegate passes it straight through, so that is fine.
pub struct Texture;

declare_delegate!(pub Consume(texture: Texture) -> bool);

/// A non-`Clone` owned parameter in a single-cast delegate.
pub fn consume() -> bool {
    Consume::create_lambda(|Texture| true).execute(Texture)
}
