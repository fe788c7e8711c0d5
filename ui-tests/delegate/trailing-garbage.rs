use lumina::declare_delegate;

declare_delegate!(pub Notify() -> bool, Other);

fn main() {}
