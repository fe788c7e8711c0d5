use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub Query(value: i32) ->);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let delegate = Query::new();
    let _ = delegate.add_lambda(|value| value > 0);
    delegate.broadcast(1);
}
