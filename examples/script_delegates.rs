//! Script delegates: reflected events that Rust and a managed runtime both bind to.
//!
//! Run with `cargo run --example script_delegates`. The managed side is simulated here by plain
//! `extern "C"` functions; `examples/script_host/` has the real one, a C# program run by Mono.

use lumina::script_delegate::{ManagedBinding, ReleaseReason, ScriptDelegateBase};
use lumina::{ScriptComponent, ScriptDelegate, reflect, script_delegate};
use std::cell::Cell;
use std::ffi::c_void;
use std::rc::Rc;

/// A point or direction.
#[script_delegate]
#[derive(Clone, Copy, Debug)]
pub struct Vec3 {
    /// X.
    pub x: f32,
    /// Y.
    pub y: f32,
    /// Z.
    pub z: f32,
}

/// What a rigid body's `on_hit` carries: blittable, so C# reads it in place.
#[script_delegate]
#[derive(Clone, Copy, Debug)]
pub struct CollisionEvent {
    /// The entity hit.
    pub other_entity: u64,
    /// Impulse magnitude.
    pub impulse: f32,
    /// Contact normal.
    pub normal: Vec3,
}

/// A component with two delegate properties, as the spec's `PROPERTY(Editable, Category = ..)`.
#[derive(ScriptComponent, Default, Clone)]
pub struct RigidBody {
    /// Mass in kilograms.
    pub mass: f32,
    /// Fired on every collision.
    #[property(editable, category = "Collision")]
    pub on_hit: ScriptDelegate<CollisionEvent>,
    /// Fired when the body falls asleep.
    #[property(category = "Simulation")]
    pub on_sleep: ScriptDelegate<()>,
}

/// Stands in for a managed handler: `context` would be a GC handle; here it is a number.
extern "C" fn managed_handler(context: *mut c_void, payload: *const c_void) {
    let kind = if payload.is_null() {
        "no payload"
    } else {
        "a payload pointer"
    };
    println!("  [managed #{}] called with {kind}", context as usize);
}

/// A managed context: a .NET host passes a GC handle; this example passes a plain number.
fn context(number: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(number)
}

/// The host's destroyed hook: releases the handles of bindings Rust dropped.
extern "C" fn release_handles(
    _delegate: *const ScriptDelegateBase,
    _bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    println!("  [host] releasing {count} GC handle(s): {reason:?}");
}

fn main() {
    println!("reflection, as a host sees it:");
    let body_info = reflect::ComponentInfo::find("RigidBody").expect("registered at link time");
    for property in body_info.properties {
        println!(
            "  RigidBody.{} at offset {}: {} ({} bytes), category {:?}, {:?}",
            property.name,
            property.offset,
            property.payload.name,
            property.payload.size,
            property.category,
            property.flags
        );
    }
    for field in reflect::PayloadInfo::find("CollisionEvent").unwrap().fields {
        println!(
            "  CollisionEvent.{}: {} at {}",
            field.name,
            field.ty.rust_name(),
            field.offset
        );
    }

    lumina::script_delegate::set_destroyed_hook(Some(release_handles));
    let body = RigidBody {
        mass: 80.0,
        ..RigidBody::default()
    };

    // Native listeners: the multicast API, with handles.
    let hits = Rc::new(Cell::new(0));
    let counter = Rc::clone(&hits);
    let native = body.on_hit.add_lambda(move |hit| {
        counter.set(counter.get() + 1);
        println!(
            "  [native] hit entity {} with impulse {}",
            hit.other_entity, hit.impulse
        );
    });

    // Managed listeners: (thunk, context) pairs, as the C ABI binds them.
    let first = body.on_hit.bind_managed(Some(managed_handler), context(1));
    let _second = body.on_hit.bind_managed(Some(managed_handler), context(2));
    let _sleep = body
        .on_sleep
        .bind_managed(Some(managed_handler), context(3));

    println!("broadcast: native listeners first, then managed ones");
    body.on_hit.broadcast(&CollisionEvent {
        other_entity: 7,
        impulse: 12.5,
        normal: Vec3 {
            x: 0.0,
            y: 1.0,
            z: 0.0,
        },
    });
    println!("the void form hands managed listeners a null payload");
    body.on_sleep.broadcast(&());

    println!("a copy starts unbound, so a duplicated entity does not double-fire");
    let copy = body.clone();
    println!(
        "  copy bound: {}, original bound: {}",
        copy.on_hit.is_bound(),
        body.on_hit.is_bound()
    );

    body.on_hit.remove(native);
    body.on_hit.unbind_managed(first);
    println!(
        "after removing two: {} listener(s) on on_hit",
        body.on_hit.len()
    );
    println!("dropping the body hands its remaining managed bindings to the host:");
    drop(body);
    println!("native hits: {}", hits.get());
}
