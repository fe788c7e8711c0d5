// An `EventHandler` object does not receive its viewport: finishing `.self_aware()` with
// `add_viewport` is one error (A1); a closure through `add_viewport_handler` can.
use lumina::event::{Event, EventHandler, InputViewportRegistry, Rect};
use std::rc::Rc;

struct GameView;

impl EventHandler for GameView {
    fn on_event(&self, _: &mut dyn Event) -> bool {
        false
    }
}

fn main() {
    let registry = Rc::new(InputViewportRegistry::new());
    let view = Rc::new(GameView);
    let id = registry
        .subscribe()
        .self_aware()
        .add_viewport(&view, Rect::new(0.0, 0.0, 8.0, 6.0));
    let _ = registry.focus(id);
}
