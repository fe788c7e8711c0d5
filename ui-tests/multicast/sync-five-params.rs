// The thread-safe delegate takes up to four parameters: a fifth is one error at its type (TS1).
use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub sync OnHit(a: u32, b: u32, c: u32, d: u32, e: u32));

fn main() {
    let on_hit = OnHit::new();
    let _handle = on_hit.add_lambda(|a, b, c, d, e| println!("{}", a + b + c + d + e));
    on_hit.broadcast(1, 2, 3, 4, 5);
}
