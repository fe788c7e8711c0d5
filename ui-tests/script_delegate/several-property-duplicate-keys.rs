// mistakes: 2
use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Health {
    #[property(editable, editable, category = "Events", category = "Combat")]
    pub on_died: ScriptDelegate<()>,
}

fn main() {}
