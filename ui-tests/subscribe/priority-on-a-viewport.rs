// Viewports are chosen by focus and rectangle, not by priority: `.priority(..)` on the viewport
// registry's builder is one error in lumina's words (A1), even with the subscription used after.
use lumina::event::{InputViewportRegistry, KeyPressedEvent, Rect};
use std::rc::Rc;

fn main() {
    let registry = Rc::new(InputViewportRegistry::new());
    let game = registry
        .subscribe()
        .priority(10)
        .add_viewport_handler::<KeyPressedEvent>(Rect::new(0.0, 0.0, 8.0, 6.0), |_| true);
    let _ = registry.focus(game.id());
}
