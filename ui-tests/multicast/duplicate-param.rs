use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMove(x: f32, x: f32));

fn main() {}
