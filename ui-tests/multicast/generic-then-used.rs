use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnValue<T>(value: T));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnValue::new();
    let _ = delegate.add_lambda(|value| println!("{value}"));
    delegate.broadcast(1u32);
}
