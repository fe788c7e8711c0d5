// A listener taking another payload type than the tag's is a type error (GB2).
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
    let _h = bus.listen(&tags::COMBAT_DAMAGE, |amount: &u32, _| println!("{amount}"));
}
