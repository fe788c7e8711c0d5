use lumina::event::{Event, EventProcessor, InputLayer};
use lumina::event_class;
use std::rc::Rc;

#[event_class(None)]
pub struct Message<T> {
    pub payload: T,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let processor = EventProcessor::new();
    let handler = Rc::new(|event: &mut dyn Event| event.is::<Message<u32>>());
    let _ = processor.register_event_handler(&handler, InputLayer::Default);
    processor.dispatch(Message { payload: 7u32 });
}
