use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Health {
    #[property(editable)]
    pub current: i32,
    #[property(editable)]
    pub on_died: ScriptDelegate<()>,
}

fn main() {}
