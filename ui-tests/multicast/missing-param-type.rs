use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnDamage(amount:, source: u32));

fn main() {}
