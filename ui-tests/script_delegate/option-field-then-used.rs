use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Targeted {
    pub target: Option<u64>,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Targeted> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Targeted { target: None });
}
