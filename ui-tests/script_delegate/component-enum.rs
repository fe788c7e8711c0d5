use lumina::ScriptComponent;

#[derive(ScriptComponent)]
pub enum State {
    Idle,
}

fn main() {}
