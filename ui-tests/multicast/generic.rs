use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnValue<T>(value: T));

fn main() {}
