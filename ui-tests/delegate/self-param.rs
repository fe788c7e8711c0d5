use lumina::declare_delegate;

declare_delegate!(pub CanOpen(&mut self, key: u32) -> bool);

fn main() {}
