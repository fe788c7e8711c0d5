use lumina::event::{Event, EventProcessor, InputLayer};
use lumina::event_class;
use std::rc::Rc;

#[event_class(KeyPressed)]
#[event_class(KeyReleased)]
pub struct KeyChanged {
    pub code: i32,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let processor = EventProcessor::new();
    let handler = Rc::new(|event: &mut dyn Event| event.is::<KeyChanged>());
    let _ = processor.register_event_handler(&handler, InputLayer::Default);
    processor.dispatch(KeyChanged { code: 3 });
}
