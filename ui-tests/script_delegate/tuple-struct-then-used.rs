use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Damage(pub f32);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Damage> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Damage(1.0));
}
