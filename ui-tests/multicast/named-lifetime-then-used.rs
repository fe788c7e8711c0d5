use lumina::declare_multicast_delegate;

pub struct Window;

declare_multicast_delegate!(pub OnResize(window: &'a Window, width: u32));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnResize::new();
    let _ = delegate.add_lambda(|_window, width| println!("{width}"));
    delegate.broadcast(&Window, 3);
}
