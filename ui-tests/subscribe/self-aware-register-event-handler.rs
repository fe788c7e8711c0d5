// An `EventHandler` object does not receive its registration: finishing `.self_aware()` with
// `register_event_handler` is one error (A1); a closure through `add_handler` can.
use lumina::event::{Event, EventHandler, EventProcessor};
use std::rc::Rc;

struct Hud;

impl EventHandler for Hud {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        false
    }
}

fn main() {
    let processor = EventProcessor::new();
    let hud = Rc::new(Hud);
    let _ = processor.subscribe().self_aware().register_event_handler(&hud);
}
