//! Every form of #[script_delegate] and #[derive(ScriptComponent)], through the facade only.
use lumina::{ScriptComponent, ScriptDelegate, script_delegate};

/// Doc comments and derives pass through; an explicit `#[repr(C)]` is accepted.
#[script_delegate]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Vec2 {
    /// Across.
    pub x: f32,
    /// Up.
    pub y: f32,
}

#[script_delegate]
struct EveryScalar {
    a: i8,
    b: u8,
    c: i16,
    d: u16,
    e: i32,
    f: u32,
    g: i64,
    h: u64,
    i: isize,
    j: usize,
    k: f32,
    l: f64,
    nested: Vec2,
    path: core::primitive::u32,
}

/// Every property form, and a field that is not a property.
#[derive(ScriptComponent, Default)]
pub struct Everything {
    /// Not a property.
    pub data: u32,
    /// A bare property.
    #[property]
    pub bare: ScriptDelegate<()>,
    /// Editable.
    #[property(editable)]
    pub editable: ScriptDelegate<Vec2>,
    /// In a category.
    #[property(category = "Events")]
    pub categorised: ScriptDelegate<Vec2>,
    /// Both, in this order.
    #[property(editable, category = "Events")]
    pub both: ScriptDelegate<Vec2>,
    #[property(category = "Private", editable)]
    everything: ScriptDelegate<EveryScalar>,
}

fn main() {
    let component = Everything::default();
    component.both.broadcast(&Vec2 { x: 1.0, y: 2.0 });
    assert!(!component.everything.is_bound());
}
