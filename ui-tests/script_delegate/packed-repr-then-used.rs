use lumina::{ScriptDelegate, script_delegate};

#[script_delegate]
#[repr(packed)]
pub struct Packet {
    pub id: u8,
    pub value: u64,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let on_event: ScriptDelegate<Packet> = ScriptDelegate::new();
    let _ = on_event.add_lambda(|_payload| println!("received"));
    on_event.broadcast(&Packet { id: 1, value: 2 });
}
