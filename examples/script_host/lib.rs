//! The real host's engine side (SD7): a cdylib with sample components that a C# program (Mono)
//! loads through P/Invoke, binding to their script delegates through generated bindings
//! (`Bindings.g.cs`) and lumina's C ABI, which this library exports.
//!
//! Components live in a table of `Rc`s keyed by id, so their addresses are stable while the
//! managed side holds pointers into them (see `lumina::script_delegate` on moves). The C# program
//! is `Host.cs`; `tests/csharp_host.rs` builds this library, generates the bindings, compiles the
//! program with `mcs` and runs it with `mono`.
//!
//! Build with `cargo build --example script_host`.

mod components;

use components::{CollisionEvent, Health, RigidBody};
use lumina::bus::MessageBus;
use lumina::gameplay_tags;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;

// Every export below is a safe function over ids and values: the exporting attribute is the only
// `unsafe` token, required by the language for `no_mangle`; the symbol names are unique.

thread_local! {
    static COMPONENTS: RefCell<HashMap<u64, Rc<dyn Any>>> = RefCell::new(HashMap::new());
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
    /// Hits seen by the native listener every rigid body gets at creation.
    static NATIVE_HITS: Cell<u32> = const { Cell::new(0) };
}

fn insert(component: Rc<dyn Any>) -> u64 {
    let id = NEXT_ID.with(|next| next.replace(next.get() + 1));
    COMPONENTS.with(|components| components.borrow_mut().insert(id, component));
    id
}

fn get<T: 'static>(id: u64) -> Option<Rc<T>> {
    let component = COMPONENTS.with(|components| components.borrow().get(&id).cloned())?;
    component.downcast::<T>().ok()
}

fn new_rigid_body(body: RigidBody) -> u64 {
    let _ = body
        .on_hit
        .add_lambda(|_| NATIVE_HITS.with(|hits| hits.set(hits.get() + 1)));
    insert(Rc::new(body))
}

/// Creates a rigid body; returns its id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_rigid_body_new(mass: f32) -> u64 {
    new_rigid_body(RigidBody {
        mass,
        ..RigidBody::default()
    })
}

/// Duplicates a rigid body (its `on_hit` starts unbound: SD4); 0 for an unknown id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_rigid_body_clone(id: u64) -> u64 {
    get::<RigidBody>(id).map_or(0, |body| new_rigid_body((*body).clone()))
}

/// The mass of rigid body `id` (NaN for an unknown id).
#[unsafe(no_mangle)]
pub extern "C" fn script_host_rigid_body_mass(id: u64) -> f32 {
    get::<RigidBody>(id).map_or(f32::NAN, |body| body.mass)
}

/// Broadcasts `on_hit` of rigid body `id` with `event`; -1 for an unknown id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_rigid_body_hit(id: u64, event: CollisionEvent) -> i32 {
    match get::<RigidBody>(id) {
        Some(body) => {
            body.on_hit.broadcast(&event);
            0
        }
        None => -1,
    }
}

/// How many hits the native listeners of all rigid bodies have seen.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_native_hits() -> u32 {
    NATIVE_HITS.with(Cell::get)
}

/// Creates a health component with `current` hit points; returns its id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_health_new(current: i32) -> u64 {
    insert(Rc::new(Health {
        current,
        ..Health::default()
    }))
}

/// Applies damage; broadcasts `on_died` when it takes the health to 0 or below. Returns the hit
/// points left, or `i32::MIN` for an unknown id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_health_damage(id: u64, amount: i32) -> i32 {
    let Some(health) = get::<Health>(id) else {
        return i32::MIN;
    };
    // Health is shared immutably; hit points are bookkept beside it in this sample.
    thread_local! {
        static DAMAGE: RefCell<HashMap<u64, i32>> = RefCell::new(HashMap::new());
    }
    let taken = DAMAGE.with(|damage| {
        let mut damage = damage.borrow_mut();
        let taken = damage.entry(id).or_insert(0);
        *taken += amount;
        *taken
    });
    let left = health.current - taken;
    if left <= 0 && left + amount > 0 {
        health.on_died.broadcast(&());
    }
    left
}

/// The address of component `id` (null for an unknown id): add a property's reflected offset to
/// reach its script delegate. Valid until `script_host_destroy(id)`.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_component_ptr(id: u64) -> *const c_void {
    COMPONENTS.with(|components| {
        components
            .borrow()
            .get(&id)
            .map_or(std::ptr::null(), |component| Rc::as_ptr(component).cast())
    })
}

// ---- the message bus (GB8)

gameplay_tags! {
    /// The tags of the sample: `Combat.Hit` is `#[script]`, so C# listens and sends on it, and
    /// on its child `Combat.Hit.Critical` (a C# listener there may consume a message before
    /// `Combat.Hit`'s partial listeners hear it); `Combat.Spawn` too, and no Rust code uses it:
    /// C# finds it because the set is registered. `Combat.LastHit` is retained: C# sends on it
    /// and the bus keeps the message (GB6).
    pub mod tags {
        Combat {
            #[script]
            Hit: CollisionEvent {
                #[script]
                Critical: CollisionEvent,
            },
            #[script]
            Spawn: CollisionEvent,
            #[retained]
            #[script]
            LastHit: CollisionEvent,
        },
    }
}

thread_local! {
    /// The sample's bus, in an `Rc` so its address is stable while C# holds it.
    static BUS: RefCell<Option<Rc<MessageBus>>> = const { RefCell::new(None) };
    /// What the Rust listener heard: how many, and the last one.
    static BUS_HEARD: RefCell<(u32, CollisionEvent)> = RefCell::new((0, CollisionEvent::default()));
}

/// The bus's address, made with a Rust listener of `Combat.Hit` by the first call; valid until
/// `script_host_bus_drop`. Registers the sample's tags first (`tags::register()`, idempotent), so
/// C# finds them by name whatever Rust has used; null, with the conflict printed, if another set
/// declared one of them with another payload type.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus() -> *const c_void {
    if let Err(conflict) = tags::register() {
        eprintln!("script_host: {conflict}");
        return std::ptr::null();
    }
    BUS.with_borrow_mut(|slot| {
        let bus = slot.get_or_insert_with(|| {
            let bus = MessageBus::new();
            let _ = bus.listen(&tags::COMBAT_HIT, |hit, _| {
                BUS_HEARD.with_borrow_mut(|heard| *heard = (heard.0 + 1, *hit));
            });
            Rc::new(bus)
        });
        Rc::as_ptr(bus).cast()
    })
}

/// Sends `event` on `Combat.Hit` from Rust (to no entity); -1 without a bus.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus_send_hit(event: CollisionEvent) -> i32 {
    let bus = BUS.with_borrow(Clone::clone);
    match bus {
        Some(bus) => {
            bus.send(&tags::COMBAT_HIT, event);
            0
        }
        None => -1,
    }
}

/// How many `Combat.Hit` messages the Rust listener heard.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus_heard() -> u32 {
    BUS_HEARD.with_borrow(|heard| heard.0)
}

/// The last `Combat.Hit` the Rust listener heard.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus_last_heard() -> CollisionEvent {
    BUS_HEARD.with_borrow(|heard| heard.1)
}

/// The retained message of `Combat.LastHit` as Rust keeps it, typed (GB6), written to `out`:
/// 1, or 0 (nothing written) when there is none or no bus.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus_last_hit(out: &mut CollisionEvent) -> i32 {
    let bus = BUS.with_borrow(Clone::clone);
    let kept = bus.and_then(|bus| bus.retained(&tags::COMBAT_LAST_HIT));
    match kept
        .as_ref()
        .and_then(|kept| kept.downcast_ref::<CollisionEvent>())
    {
        Some(hit) => {
            *out = *hit;
            1
        }
        None => 0,
    }
}

/// Drops the bus: its managed listeners reach the release hook (`Destroyed`). 0, or -1 without
/// a bus.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_bus_drop() -> i32 {
    let bus = BUS.with_borrow_mut(Option::take);
    // Dropped outside the slot's borrow: the release hook may call back in.
    match bus {
        Some(bus) => {
            drop(bus);
            0
        }
        None => -1,
    }
}

/// Destroys component `id`: its delegates are dropped, and the destroyed hook releases their
/// managed bindings. 0, or -1 for an unknown id.
#[unsafe(no_mangle)]
pub extern "C" fn script_host_destroy(id: u64) -> i32 {
    let removed = COMPONENTS.with(|components| components.borrow_mut().remove(&id));
    match removed {
        // Dropped outside the table's borrow: the destroyed hook may call back in.
        Some(component) => {
            drop(component);
            0
        }
        None => -1,
    }
}
