use lumina::{ScriptDelegate, script_delegate};

#[script_delegate(name = "Hit")]
pub struct Hit {
    pub damage: f32,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Hit> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Hit { damage: 1.0 });
}
