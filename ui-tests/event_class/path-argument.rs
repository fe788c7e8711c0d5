use lumina::event_class;

#[event_class(EventType::KeyPressed)]
pub struct Shortcut {
    pub chord: u32,
}

fn main() {}
