use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnDamage(mut amount: u32));

fn main() {}
