use lumina::event_class;

// B6: a game's own event class is declared bare; naming the class is the first guess.
#[event_class(PlayerDied)]
pub struct PlayerDied {
    pub player: u32,
}

fn main() {}
