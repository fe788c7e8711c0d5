use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMove((x, y): (f32, f32)));

fn main() {}
