use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMove((x, y): (f32, f32)));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnMove::new();
    let _ = delegate.add_lambda(|(x, y)| println!("{x} {y}"));
    delegate.broadcast((1.0, 2.0));
}
