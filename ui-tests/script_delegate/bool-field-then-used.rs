use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Toggled {
    pub on: bool,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Toggled> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Toggled { on: true });
}
