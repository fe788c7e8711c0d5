// A bus listener hears one entity at most: a second `.entity(..)` is one error (A1).
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

gameplay_tags! {
    pub mod tags {
        Combat.Damage: u32,
    }
}

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    let _ = bus.subscribe().entity(1).once().entity(2).listen(&tags::COMBAT_DAMAGE, |_, _| {});
}
