use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Spawned {
    pub transform: Box<[f32; 16]>,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Spawned> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Spawned { transform: Box::new([0.0; 16]) });
}
