// `.partial()` on the bus's builder is said once: said again, it is one error (A1).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

gameplay_tags! {
    pub mod tags {
        Combat.Damage: u32,
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    let _ = bus.subscribe().partial().partial().listen(&tags::COMBAT, |_message| {});
}
