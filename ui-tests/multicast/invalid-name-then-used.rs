use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub "OnDamage"(amount: u32));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnDamage::new();
    let _ = delegate.add_lambda(|amount| println!("{amount}"));
    delegate.broadcast(3);
}
