use lumina::event_class;

#[event_class(type)]
pub struct Shortcut {
    pub chord: u32,
}

fn main() {}
