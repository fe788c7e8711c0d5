use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Typed {
    pub key: char,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Typed> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Typed { key: 'a' });
}
