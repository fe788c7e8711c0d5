use lumina::{ScriptDelegate, script_delegate};

pub struct Transform {
    pub x: f32,
}

#[script_delegate]
pub struct Moved {
    pub entity: u64,
    pub transform: Transform,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Moved> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Moved { entity: 1, transform: Transform { x: 0.0 } });
}
