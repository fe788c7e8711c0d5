use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub Describe(id: u32) -> impl std::fmt::Display);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = Describe::new();
    let _ = delegate.add_lambda(|id| id);
    delegate.broadcast(1);
}
