// Sending a payload of another type than the tag's is a type error (GB2).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

pub struct Damage {
    pub amount: u32,
}

gameplay_tags! {
    pub mod tags {
        Combat.Damage: Damage,
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::COMBAT_DAMAGE, 5_u32);
}
