use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub struct OnDamage(amount: u32));

fn main() {
    // The type is still declared: no follow-on error here.
    let _ = OnDamage::new();
}
