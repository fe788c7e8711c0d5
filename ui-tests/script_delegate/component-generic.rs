use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Sensor<T> {
    pub reading: T,
    #[property]
    pub on_changed: ScriptDelegate<()>,
}

fn main() {}
