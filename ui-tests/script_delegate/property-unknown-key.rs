use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Health {
    #[property(visible, category = "Events")]
    pub on_died: ScriptDelegate<()>,
}

fn main() {}
