// A declared delegate's builder is the same shape, with the same error (A1).
lumina::declare_multicast_delegate!(pub OnHit(damage: u32, by: &str));

fn log_hit(damage: u32, by: &str) {
    println!("{damage} by {by}");
}

fn main() {
    let on_hit = OnHit::new();
    let _ = on_hit.subscribe().priority(1).self_aware().add_static(log_hit);
}
