// A tag declared twice is one error, on the second declaration (GB1, GB2).
use lumina::gameplay_tags;

pub struct Damage {
    pub amount: u32,
}

gameplay_tags! {
    pub mod tags {
        Combat {
            Damage: Damage,
        },
        Combat.Damage: u32,
    }
}

fn main() {}
