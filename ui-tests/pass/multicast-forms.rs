//! Every form of `declare_multicast_delegate!` through the facade alone, with no warnings
//! (generated docs satisfy `missing_docs`; unused generated methods are not dead code).
#![deny(warnings, missing_docs)]

use lumina::{DelegateHandle, declare_multicast_delegate};
use std::rc::Rc;

/// A window.
pub struct Window {
    /// Its title.
    pub title: String,
}

declare_multicast_delegate!(
    /// The project finished loading.
    pub ProjectLoaded
);
declare_multicast_delegate!(pub WindowResize(window: &Window, size: (u32, u32)));
declare_multicast_delegate!(pub Query(value: i32) -> bool);
declare_multicast_delegate!(pub(crate) Unnamed(&str, u32));
declare_multicast_delegate!(Private(&mut Vec<u32>, String));
declare_multicast_delegate!(
    #[allow(clippy::type_complexity)]
    pub Lifetimes(&'static str, std::borrow::Cow<'_, str>, &[&str]) -> Option<&'static str>
);
declare_multicast_delegate!(pub Semicolon(u8););

thread_local! {
    // `new` is a `const fn`.
    static GLOBAL: ProjectLoaded = const { ProjectLoaded::new() };
}

fn on_resize(window: &Window, size: (u32, u32)) {
    println!("{} {size:?}", window.title);
}

struct Hud;

impl Hud {
    fn resized(&self, window: &Window, _size: (u32, u32)) {
        println!("hud sees {}", window.title);
    }
}

fn main() {
    let loaded = ProjectLoaded::default();
    let handle: DelegateHandle = loaded.add_lambda(|| ());
    loaded.broadcast();
    loaded.broadcast_and_clear();
    assert!(!loaded.remove(handle));
    assert!(!GLOBAL.with(ProjectLoaded::is_bound));

    let resize = WindowResize::new();
    let _a = resize.add_lambda(|window, size| println!("{} {size:?}", window.title));
    let _b = resize.add_static(on_resize);
    let hud = Rc::new(Hud);
    let _c = resize.add_member(&hud, Hud::resized);
    let window = Window {
        title: "main".to_owned(),
    };
    resize.broadcast(&window, (640, 480));
    assert_eq!(resize.remove_all(&hud), 1);
    assert!(!resize.is_bound_to(&hud));
    assert_eq!(resize.len(), 2);
    resize.clear();
    assert!(resize.is_empty());
    // A member binding by owner and method, removed by them (X7), on the delegate and its view.
    let _k = resize.add_method(&hud, Hud::resized);
    let _l = resize.registration().add_method(&hud, Hud::resized);
    let _ = resize.remove_method(&hud, Hud::resized);
    let _ = resize.registration().remove_method(&hud, Hud::resized);

    let query = Query::new();
    let _d = query.add_lambda(|value| value > 0);
    let results: Vec<bool> = query.broadcast_collect(1);
    assert_eq!(results, [true]);

    let unnamed = Unnamed::new();
    let _e = unnamed.add_lambda(|text, count| println!("{text} {count}"));
    unnamed.broadcast("x", 1);

    let private = Private::new();
    let _f = private.add_lambda(|values, text| values.push(text.len() as u32));
    let mut values = Vec::new();
    private.broadcast(&mut values, "four".to_owned());

    let lifetimes = Lifetimes::new();
    let _g = lifetimes.add_lambda(|a, b, c| {
        if c.is_empty() {
            Some(a)
        } else {
            b.is_empty().then_some("empty")
        }
    });
    let owner = Rc::new(());
    let _h = lifetimes.add_member(&owner, |_, a, _, _| Some(a));
    let _ = lifetimes.broadcast_collect("a", "b".into(), &[]);
    let _i = private.add_member(&owner, |_, values, _| values.clear());
    let _j = unnamed.add_member(&owner, |_, text, _| println!("{text}"));

    let semicolon = Semicolon::new();
    semicolon.broadcast(1);
    println!("{semicolon:?}");
}
