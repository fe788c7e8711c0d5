// The duplicate-tag mistake, then the tags used the ordinary way: no further error (the first
// declaration stands, and the set's `register()` and `all()` are there).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

pub struct Damage {
    pub amount: u32,
}

gameplay_tags! {
    pub mod tags {
        Combat {
            Damage: Damage,
        },
        Combat.Damage: u32,
    }
}

fn main() {
    tags::register().unwrap();
    assert_eq!(tags::all().len(), 2);
    let bus: MessageBus<u32> = MessageBus::new();
    let _h = bus.listen(&tags::COMBAT_DAMAGE, |damage, _| println!("{}", damage.amount));
    let _ui = bus.subscribe().partial().listen(&tags::COMBAT, |message| println!("{}", message.tag()));
    bus.send(&tags::COMBAT_DAMAGE, Damage { amount: 1 });
}
