use lumina::declare_multicast_delegate;

pub struct Window;

declare_multicast_delegate!(pub OnResize(window: &'a Window, width: u32));

fn main() {}
