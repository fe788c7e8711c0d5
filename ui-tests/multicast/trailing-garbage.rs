use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnDamage(amount: u32) + OnHeal(amount: u32));

fn main() {}
