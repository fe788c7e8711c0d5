use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Explosion {
    pub victims: Vec<u64>,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Explosion> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Explosion { victims: Vec::new() });
}
