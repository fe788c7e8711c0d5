// After `.partial()` the listener takes the message alone (its descendants' payloads may differ):
// a listener written for the exact form is one error (A1, GB3).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

gameplay_tags! {
    pub mod tags {
        Combat.Damage: u32,
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    let _ = bus.subscribe().partial().listen(&tags::COMBAT_DAMAGE, |damage: &u32, _message| {
        println!("{damage}");
    });
}
