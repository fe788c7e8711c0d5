use lumina::event_class;

#[event_class()]
pub struct PlayerDied {
    pub player: u32,
}

fn main() {}
