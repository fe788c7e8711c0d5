use lumina::declare_multicast_delegate;
use std::rc::Rc;

declare_multicast_delegate!(pub OnDamage(amount: u32));

pub struct Health {
    pub current: u32,
}

impl Health {
    // A member binding calls its method through `&Health`: keep `current` in a `Cell` instead.
    pub fn take(&mut self, amount: u32) {
        self.current -= amount;
    }
}

fn main() {
    let on_damage = OnDamage::new();
    let health = Rc::new(Health { current: 100 });
    let _ = on_damage.add_member(&health, Health::take);
    on_damage.broadcast(5);
}
