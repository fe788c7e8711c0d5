use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnDamage(&self, amount: u32));

fn main() {
    // The declared type still exists, with the `self` parameter left out.
    let on_damage = OnDamage::new();
    on_damage.broadcast(3);
}
