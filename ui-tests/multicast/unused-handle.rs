#![deny(unused_must_use)]

use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub OnTick(dt: f32));

fn main() {
    let on_tick = OnTick::new();
    // H1: the handle is the only way to unsubscribe; dropping it is an error here.
    on_tick.add_lambda(|dt| println!("tick {dt}"));
}
