use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Health {
    pub on_died: ScriptDelegate<()>,
}

fn main() {}
