use lumina::event::{Envelope, Event, Key, KeyPressedEvent, Modifiers};

/// Forgot `#[event_class(...)]`.
pub struct Shortcut {
    pub chord: u32,
}

fn main() {
    let mut key = Envelope::new(KeyPressedEvent::new(Key::A, Modifiers::NONE));
    let event: &mut dyn Event = &mut key;
    let _ = event.is::<Shortcut>();
}
