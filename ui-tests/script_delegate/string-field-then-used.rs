use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Chat {
    pub sender: u64,
    pub text: String,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Chat> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Chat { sender: 1, text: String::new() });
}
