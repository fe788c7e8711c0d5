use lumina::declare_multicast_delegate;

declare_multicast_delegate!(
    #[derive(Clone, PartialEq)]
    pub OnTick(dt: f32)
);

fn main() {
    let on_tick = OnTick::new();
    on_tick.broadcast(0.016);
}
