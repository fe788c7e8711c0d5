use lumina::declare_delegate;

declare_delegate!(pub Trim(text: &str) -> &str);

fn main() {}
