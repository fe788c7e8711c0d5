// A `#[script]` tag needs a reflected payload (GB8): one error, on the payload type, even when
// the tag is used afterwards.
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

pub struct Damage {
    pub amount: u32,
}

gameplay_tags! {
    pub mod tags {
        Combat {
            #[script]
            Damage: Damage,
        },
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::COMBAT_DAMAGE, Damage { amount: 5 });
}
