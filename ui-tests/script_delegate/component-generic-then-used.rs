use lumina::{ScriptComponent, ScriptDelegate};

#[derive(ScriptComponent)]
pub struct Sensor<T> {
    pub reading: T,
    #[property]
    pub on_changed: ScriptDelegate<()>,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let info = <Sensor<u32> as ScriptComponent>::COMPONENT;
    println!("{} has {} properties", info.name, info.properties.len());
    fn fire(component: &Sensor<u32>) {
        component.on_changed.broadcast(&());
    }
    let _ = fire;
}
