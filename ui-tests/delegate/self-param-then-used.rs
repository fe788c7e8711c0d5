use lumina::declare_delegate;

declare_delegate!(pub CanOpen(&mut self, key: u32) -> bool);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let can_open = CanOpen::create_lambda(|key| key == 7);
    let _ = can_open.execute(7);
}
