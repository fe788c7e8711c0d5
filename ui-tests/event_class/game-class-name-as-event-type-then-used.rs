use lumina::event::{Event, EventProcessor, InputLayer};
use lumina::event_class;
use std::rc::Rc;

// B6: a game's own event class is declared bare; naming the class is the first guess.
#[event_class(PlayerDied)]
pub struct PlayerDied {
    pub player: u32,
}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let processor = EventProcessor::new();
    let handler = Rc::new(|event: &mut dyn Event| event.is::<PlayerDied>());
    let _ = processor.register_event_handler(&handler, InputLayer::Default);
    processor.dispatch(PlayerDied { player: 1 });
}
