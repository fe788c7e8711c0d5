use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Allocated {
    pub memory: *const u8,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Allocated> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Allocated { memory: std::ptr::null() });
}
