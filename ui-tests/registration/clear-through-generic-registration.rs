// A holder of a generic delegate's registration cannot clear everyone's subscriptions (B2).
use lumina::MulticastDelegate;

fn main() {
    let on_tick: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
    let events = on_tick.registration();
    let _handle = events.add_lambda(|dt| println!("tick {dt}"));
    events.clear();
}
