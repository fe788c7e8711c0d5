use lumina::event_class;

#[event_class(KeyPressed, KeyReleased)]
pub struct KeyChanged {
    pub code: i32,
}

fn main() {}
