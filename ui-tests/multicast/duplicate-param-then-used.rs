use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMove(x: f32, x: f32));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnMove::new();
    let _ = delegate.add_lambda(|a, b| println!("{a} {b}"));
    delegate.broadcast(1.0, 2.0);
}
