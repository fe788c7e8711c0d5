//! Compiles every file of `examples/expanded/` (written by `tests/expanded.rs`) and uses the
//! types declared there, so the expansions shown to readers are proven to be real, working
//! code: what the macros write, compiled without them. (An example's `main` is private to its
//! module, so the tests use the public types; `cargo run --example <name>` runs the story.)
//!
//! To add an example: one `#[path]` module and a test below. The modules are
//! `#[rustfmt::skip]` because the files are prettyplease's output, compared byte for byte.

use std::rc::Rc;

// Clippy skips macro output, but here the expansion is plain source.
#[rustfmt::skip]
#[allow(dead_code, clippy::type_complexity)]
#[path = "../examples/expanded/delegates.rs"]
mod delegates;

#[test]
fn expanded_delegates_types_work_without_the_macros() {
    use delegates::{CanQuit, SaveQuery, StatusLine, UVec2, Window, WindowResize};

    let on_resize = WindowResize::new();
    let owner = Rc::new(std::cell::Cell::new(0));
    let _member = on_resize.add_member(&owner, |seen, _window, size| seen.set(size.x));
    on_resize.broadcast(
        &Window {
            title: "main".to_owned(),
        },
        UVec2 { x: 7, y: 1 },
    );
    assert_eq!(owner.get(), 7);
    drop(owner);
    assert!(on_resize.is_empty());

    let on_save = SaveQuery::default();
    let _a = on_save.add_lambda(|path| path.ends_with(".map"));
    let _b = on_save.add_static(|path| path.starts_with('/'));
    assert_eq!(on_save.broadcast_collect("level.map"), [true, false]);

    // B2, B3, B4 in the expansion: the view, priorities, and the queued-broadcast impl.
    let on_imported = delegates::AssetImported::new();
    let order = Rc::new(std::cell::RefCell::new(Vec::new()));
    let (late, early) = (Rc::clone(&order), Rc::clone(&order));
    let view = on_imported.registration();
    let _late = view.add_lambda(move |path, _| late.borrow_mut().push(path));
    let _early = view.subscribe().priority(1).add_lambda(move |_, bytes| {
        early.borrow_mut().push(bytes.to_string());
    });
    lumina::main_thread::QueuedBroadcast::broadcast_args(&on_imported, ("a.png".to_owned(), 3));
    assert_eq!(*order.borrow(), ["3", "a.png"]);
    assert_eq!(view.len(), 2);

    let can_quit = CanQuit::create_lambda(|| true);
    assert!(can_quit.execute());
    assert_eq!(StatusLine::new().execute_if_bound("unbound"), None);
}

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "../examples/expanded/input_events.rs"]
mod input_events;

#[test]
fn expanded_input_events_class_works_without_the_macro() {
    use input_events::CameraMoved;
    use lumina::event::{Envelope, Event, EventClass, EventProcessor, EventType};

    assert_eq!(CameraMoved::static_type(), EventType::None);
    assert_eq!(CameraMoved::CLASS_NAME, "CameraMoved");
    let mut moved = Envelope::new(CameraMoved { x: 1.0, z: 2.0 });
    let event: &mut dyn Event = &mut moved;
    assert!(event.is::<CameraMoved>());
    assert_eq!(
        event.downcast_ref::<CameraMoved>().map(|moved| moved.z),
        Some(2.0)
    );
    let processor = EventProcessor::new();
    let hud = Rc::new(|event: &mut dyn Event| event.is::<CameraMoved>());
    assert!(processor.register_event_handler(&hud, 0));
    assert!(processor.dispatch(CameraMoved { x: 0.0, z: 0.0 }));
}

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "../examples/expanded/script_delegates.rs"]
mod script_delegates;

#[test]
fn expanded_script_delegates_types_work_without_the_macros() {
    use lumina::reflect::{self, ScriptComponent, ScriptPayload};
    use script_delegates::{CollisionEvent, RigidBody, Vec3};

    // The expansion registered its types at link time and reflects them as the macros do.
    assert!(std::ptr::eq(
        reflect::PayloadInfo::find("CollisionEvent").unwrap(),
        CollisionEvent::PAYLOAD
    ));
    let on_hit = RigidBody::COMPONENT.property("on_hit").unwrap();
    assert_eq!(on_hit.offset, std::mem::offset_of!(RigidBody, on_hit));
    assert_eq!(on_hit.payload.field("normal").unwrap().offset, 12);

    let body = RigidBody::default();
    let seen = Rc::new(std::cell::Cell::new(0));
    let sink = Rc::clone(&seen);
    let _native = body
        .on_hit
        .add_lambda(move |hit| sink.set(hit.other_entity));
    body.on_hit.broadcast(&CollisionEvent {
        other_entity: 9,
        impulse: 1.0,
        normal: Vec3 {
            x: 0.0,
            y: 0.0,
            z: 1.0,
        },
    });
    assert_eq!(seen.get(), 9);
    assert!(!body.clone().on_hit.is_bound());
}

#[rustfmt::skip]
#[allow(dead_code)]
#[path = "../examples/expanded/message_bus.rs"]
mod message_bus;

#[test]
fn expanded_message_bus_tags_work_without_the_macro() {
    use message_bus::{Damage, tags};

    tags::register().unwrap();
    assert_eq!(
        lumina::Tag::find("Loot.Found").unwrap().payload_type_name(),
        Some(std::any::type_name::<message_bus::Loot>())
    );
    let bus: lumina::MessageBus<u32> = lumina::MessageBus::new();
    let heard = Rc::new(std::cell::Cell::new(0));
    let sink = Rc::clone(&heard);
    let _ui = bus
        .subscribe()
        .partial()
        .listen(&tags::COMBAT, move |message| {
            sink.set(sink.get() + message.get(&tags::COMBAT_DAMAGE).map_or(0, |d| d.amount));
        });
    bus.send(&tags::COMBAT_DAMAGE_CRITICAL, Damage { amount: 9 });
    assert_eq!(heard.get(), 9);
    assert_eq!(tags::MATCH_STATE.tag().parent(), Some(tags::MATCH.tag()));
    assert!(tags::MATCH_STATE.is_retained());
}
