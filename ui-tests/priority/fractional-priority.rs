use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnTick(dt: f32));

fn main() {
    let on_tick = OnTick::new();
    // B3: a priority is an `i32` (InputLayer values, or any integer), not a fraction.
    let _ = on_tick.subscribe().priority(0.5).add_lambda(|dt| println!("tick {dt}"));
}
