use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMessage(message: impl std::fmt::Display));

fn main() {}
