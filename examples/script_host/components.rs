//! The sample components of the C# host example: a rigid body whose `on_hit` carries a collision
//! payload, and a health component with a void `on_died`. Shared (through `#[path]`) by the cdylib
//! and by `tests/csharp_host.rs`, which generates the C# bindings from their reflection data.

use lumina::{ScriptComponent, ScriptDelegate, script_delegate};

/// A direction or position in world space.
#[script_delegate]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    /// X.
    pub x: f32,
    /// Y.
    pub y: f32,
    /// Z.
    pub z: f32,
}

/// What `RigidBody::on_hit` carries.
#[script_delegate]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CollisionEvent {
    /// The entity hit.
    pub other_entity: u64,
    /// Impulse magnitude.
    pub impulse: f32,
    /// Contact normal.
    pub normal: Vec3,
    /// Contact point.
    pub point: Vec3,
    /// Physical material id of the other surface.
    pub material: u16,
    /// Whether the other body is a trigger (0 or 1: payloads carry no `bool`).
    pub is_trigger: u8,
    /// Relative velocity along the normal.
    pub relative_speed: f64,
}

/// A simulated body.
#[derive(ScriptComponent, Default, Clone)]
pub struct RigidBody {
    /// Mass in kilograms.
    pub mass: f32,
    /// Fired when the body collides.
    #[property(editable, category = "Collision")]
    pub on_hit: ScriptDelegate<CollisionEvent>,
}

/// Hit points.
#[derive(ScriptComponent, Default, Clone)]
pub struct Health {
    /// Current hit points.
    pub current: i32,
    /// Fired once when `current` reaches 0.
    #[property(editable, category = "Events")]
    pub on_died: ScriptDelegate<()>,
}
