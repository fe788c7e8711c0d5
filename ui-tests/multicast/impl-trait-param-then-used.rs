use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnMessage(message: impl std::fmt::Display));

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = OnMessage::new();
    let _ = delegate.add_lambda(|message| println!("{message}"));
    delegate.broadcast("hello");
}
