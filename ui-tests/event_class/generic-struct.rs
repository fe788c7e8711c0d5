use lumina::event_class;

#[event_class(None)]
pub struct Message<T> {
    pub payload: T,
}

fn main() {}
