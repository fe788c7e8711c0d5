use lumina::event::{Event, EventProcessor, InputLayer};
use lumina::event_class;
use std::rc::Rc;

#[event_class(FileDrop)]
pub struct Dropped<'a> {
    pub path: &'a str,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let processor = EventProcessor::new();
    let handler = Rc::new(|event: &mut dyn Event| event.is::<Dropped>());
    let _ = processor.register_event_handler(&handler, InputLayer::Default);
    processor.dispatch(Dropped { path: "level.map" });
}
