//! Rule B5: every subscription remembers where it was made; a delegate lists its subscriptions
//! with handle, bind site and owner state, and `Debug` shows them. (The late one-shot report
//! naming the bind site is in `core_delegates.rs`, C2; the leaked managed bindings' log in
//! `script_delegates.rs`, SD4.)

use std::ffi::c_void;
use std::rc::Rc;

use lumina::bind_site::{OwnerState, Subscription};
use lumina::event::{Event, EventHandler, EventProcessor, InputLayer};
use lumina::{MulticastDelegate, ScriptDelegate, declare_multicast_delegate, script_delegate};

declare_multicast_delegate!(OnHit(damage: u32));

/// The file and line of each listed subscription.
fn sites(listed: &[Subscription]) -> Vec<(String, u32)> {
    listed
        .iter()
        .map(|s| {
            let site = s.bind_site.expect("every subscription has its bind site");
            (site.file.replace('\\', "/"), site.line)
        })
        .collect()
}

fn here(line: u32) -> (String, u32) {
    ("tests/bind_sites.rs".to_string(), line)
}

struct Player;

#[test]
fn b5_every_add_records_where_it_was_made_generic_and_declared() {
    let generic: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let player = Rc::new(Player);
    let first = line!() + 1;
    let a = generic.add_lambda(|_| {});
    let b = generic.add_static(|_| {});
    let c = generic.add_member(&player, |_: &Player, _| {});
    let d = generic.subscribe().priority(-1).add_shared(Rc::new(|_| {}));
    let listed = generic.subscriptions();
    assert_eq!(
        listed.iter().map(|s| s.handle).collect::<Vec<_>>(),
        [a, b, c, d],
        "in dispatch order"
    );
    assert_eq!(
        sites(&listed),
        [
            here(first),
            here(first + 1),
            here(first + 2),
            here(first + 3)
        ]
    );
    assert_eq!(
        listed.iter().map(|s| s.owner).collect::<Vec<_>>(),
        [
            OwnerState::NoOwner,
            OwnerState::NoOwner,
            OwnerState::Alive,
            OwnerState::NoOwner
        ]
    );

    let declared = OnHit::new();
    let line = line!() + 1;
    let _ = declared.add_lambda(|_| {});
    let view = declared.registration();
    let _ = view.subscribe().priority(5).add_lambda(|_| {});
    // In dispatch order: the priority-5 subscription (made through the view) runs first.
    assert_eq!(
        sites(&declared.subscriptions()),
        [here(line + 2), here(line)]
    );
}

#[test]
fn b5_debug_shows_three_subscribers_with_their_bind_sites_and_owner_state() {
    let on_hit = OnHit::new();
    let alive = Rc::new(Player);
    let dropped = Rc::new(Player);
    let line = line!() + 1;
    let lambda = on_hit.add_lambda(|damage| println!("hit for {damage}"));
    let member = on_hit.add_member(&alive, |_: &Player, _| {});
    let gone = on_hit.add_member(&dropped, |_: &Player, _| {});
    drop(dropped);
    let debug = format!("{on_hit:?}");
    println!("{debug}");
    for (handle, offset, owner) in [
        (lambda, 0, ""),
        (member, 1, " (owner alive)"),
        (gone, 2, " (owner dropped)"),
    ] {
        let expected = format!("{handle:?} at tests/bind_sites.rs:{}:", line + offset);
        assert!(debug.contains(&expected), "{expected} in {debug}");
        let entry = debug.split(&expected).nth(1).expect("listed");
        let end = entry.find([',', ']']).expect("an end");
        assert!(
            entry[..end].ends_with(owner),
            "{owner:?} after {expected} in {debug}"
        );
    }
    assert!(
        debug.contains("len: 2"),
        "the dropped owner's binding does not count: {debug}"
    );
    // A removed subscription is no longer listed.
    assert!(on_hit.remove(lambda));
    assert_eq!(on_hit.subscriptions().len(), 2);
}

#[script_delegate]
#[derive(Clone, Copy)]
struct Damage {
    amount: u32,
}

extern "C" fn thunk(_: *mut c_void, _: *const c_void) {}

struct Handler;

impl EventHandler for Handler {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        false
    }
}

#[test]
fn b5_script_delegates_and_the_processor_record_bind_sites_too() {
    let on_damage: ScriptDelegate<Damage> = ScriptDelegate::new();
    let line = line!() + 1;
    let _native = on_damage.add_lambda(|_| {});
    let managed = on_damage.bind_managed(Some(thunk), std::ptr::null_mut());
    assert_ne!(managed, 0);
    assert_eq!(
        sites(&on_damage.subscriptions()),
        [here(line), here(line + 1)]
    );
    on_damage.clear();

    let processor = EventProcessor::new();
    let handler = Rc::new(Handler);
    let line = line!() + 1;
    assert!(processor.register_event_handler(&handler, InputLayer::Viewport));
    let listed = processor.subscriptions();
    assert_eq!(sites(&listed), [here(line)]);
    assert_eq!(listed[0].owner, OwnerState::Alive);
    drop(handler);
    assert_eq!(processor.subscriptions()[0].owner, OwnerState::Dropped);
}
