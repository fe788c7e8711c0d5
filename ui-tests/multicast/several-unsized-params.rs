// mistakes: 2
use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMessage(message: str, details: dyn std::fmt::Debug));

fn main() {}
