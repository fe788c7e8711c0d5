#![deny(unused_must_use)]

use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnTick(dt: f32));

fn main() {
    let on_tick = OnTick::new();
    let handle = on_tick.add_lambda(|dt| println!("tick {dt}"));
    // B1: a guard not kept unsubscribes at once; this is an error here.
    on_tick.scoped(handle);
}
