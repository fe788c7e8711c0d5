use lumina::event::{Event, EventProcessor, InputLayer};
use lumina::event_class;
use std::rc::Rc;

#[event_class(None)]
pub union Payload {
    pub int: u32,
    pub float: f32,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let processor = EventProcessor::new();
    let handler = Rc::new(|event: &mut dyn Event| event.is::<Payload>());
    let _ = processor.register_event_handler(&handler, InputLayer::Default);
    processor.dispatch(Payload { int: 1 });
}
