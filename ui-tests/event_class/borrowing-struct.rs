use lumina::event_class;

#[event_class(FileDrop)]
pub struct Dropped<'a> {
    pub path: &'a str,
}

fn main() {}
