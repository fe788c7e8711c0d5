use lumina::declare_multicast_delegate;

declare_multicast_delegate!();

fn main() {}
