use lumina::event_class;

#[event_class(KeyPresed)]
pub struct Shortcut {
    pub chord: u32,
}

fn main() {}
