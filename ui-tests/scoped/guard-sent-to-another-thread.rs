use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnTick(dt: f32));

fn main() {
    let on_tick = OnTick::new();
    let guard = on_tick.scoped(on_tick.add_lambda(|dt| println!("tick {dt}")));
    // B1: a guard belongs to its delegate's thread, like the delegate.
    std::thread::spawn(move || drop(guard));
}
