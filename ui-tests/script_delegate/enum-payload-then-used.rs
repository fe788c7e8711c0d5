use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub enum Phase {
    Begin,
    End,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Phase> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Phase::Begin);
}
