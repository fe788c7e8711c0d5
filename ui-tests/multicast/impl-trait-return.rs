use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub Describe(id: u32) -> impl std::fmt::Display);

fn main() {}
