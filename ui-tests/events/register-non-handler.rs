use lumina::event::{EventProcessor, InputLayer};
use std::rc::Rc;

/// Has no `on_event`.
pub struct Minimap;

fn main() {
    let processor = EventProcessor::new();
    let minimap = Rc::new(Minimap);
    let _ = processor.register_event_handler(&minimap, InputLayer::Default);
}
