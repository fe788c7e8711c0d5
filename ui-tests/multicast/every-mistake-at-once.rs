// mistakes: 5
use lumina::declare_multicast_delegate;

// Independent mistakes are all reported in one compile.
declare_multicast_delegate!(pub OnHit<T>(&self, target: T, mut damage: u32, damage: impl Copy));

fn main() {}
