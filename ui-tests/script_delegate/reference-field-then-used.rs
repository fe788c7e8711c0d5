use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
pub struct Named<'a> {
    pub name: &'a str,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Named<'static>> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Named { name: "x" });
}
