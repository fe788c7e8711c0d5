use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Moved {
    pub position: [f32; 3],
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Moved> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Moved { position: [0.0; 3] });
}
