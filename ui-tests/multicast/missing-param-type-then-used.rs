use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnDamage(amount:, source: u32));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnDamage::new();
    let _ = delegate.add_lambda(|_amount, source| println!("{source}"));
    delegate.broadcast(1, 2);
}
