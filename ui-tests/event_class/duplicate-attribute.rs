use lumina::event_class;

#[event_class(KeyPressed)]
#[event_class(KeyReleased)]
pub struct KeyChanged {
    pub code: i32,
}

fn main() {}
