use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub Query(value: i32) ->);

fn main() {}
