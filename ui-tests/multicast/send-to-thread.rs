use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnTick(dt: f32));

fn main() {
    // M10: a delegate belongs to the thread that made it.
    let on_tick = OnTick::new();
    std::thread::spawn(move || on_tick.broadcast(0.016));
}
