// mistakes: 4
use lumina::event_class;

// Each independent mistake is reported, and nothing else.
#[event_class(MouseMove, extra)]
#[lumina::event_class(MouseMoved)]
pub struct Dragged<T> {
    pub what: T,
}

fn main() {}
