#![deny(unused_must_use)]

use lumina::event::{Event, EventProcessor, InputLayer};
use std::rc::Rc;

fn main() {
    let processor = EventProcessor::new();
    let hud = Rc::new(|_: &mut dyn Event| false);
    // P1: a duplicate registration is refused with `false`; ignoring that is a warning.
    processor.register_event_handler(&hud, InputLayer::Default);
}
