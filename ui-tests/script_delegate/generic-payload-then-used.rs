use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Changed<T> {
    pub value: T,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Changed<u32>> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Changed { value: 1u32 });
}
