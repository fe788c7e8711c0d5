use lumina::ScriptComponent;

#[derive(ScriptComponent)]
pub enum State {
    Idle,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let info = <State as ScriptComponent>::COMPONENT;
    println!("{} has {} properties", info.name, info.properties.len());
}
