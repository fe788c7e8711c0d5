// A misspelled tag is a compile error that suggests the closest declared name (GB1).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

pub struct Damage {
    pub amount: u32,
}

gameplay_tags! {
    pub mod tags {
        Combat {
            Damage: Damage {
                Critical: Damage,
            },
        },
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::COMBAT_DAMAGE_CRITCAL, Damage { amount: 1 });
}
