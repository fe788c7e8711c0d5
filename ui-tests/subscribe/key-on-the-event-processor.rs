// The processor holds each handler weakly already and removes by handle or guard: `.key()` has
// no meaning there, and is one error in lumina's words (A1).
use lumina::event::{EventProcessor, KeyPressedEvent};
use std::rc::Rc;

struct Menu;

fn main() {
    let processor = EventProcessor::new();
    let menu = Rc::new(Menu);
    let _jump = processor.subscribe().key(&menu).add_handler::<KeyPressedEvent>(|_| true);
}
