use lumina::declare_delegate;

declare_delegate!(pub Convert<From, To>(value: From) -> To);

fn main() {}
