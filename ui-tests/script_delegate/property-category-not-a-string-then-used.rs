use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Health {
    #[property(editable, category = Events)]
    pub on_died: ScriptDelegate<()>,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let info = <Health as ScriptComponent>::COMPONENT;
    println!("{} has {} properties", info.name, info.properties.len());
    fn fire(component: &Health) {
        component.on_died.broadcast(&());
    }
    let _ = fire;
}
