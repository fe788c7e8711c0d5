//! Input events: a focused game viewport takes keys before the editor chrome, and the chrome
//! gets what the viewport leaves.
//!
//! Run with `cargo run --example input_events`. Its macro expansion is in
//! `examples/expanded/input_events.rs`.

use lumina::event::{
    Event, EventCategory, EventHandler, EventProcessor, InputLayer, InputViewportRegistry, Key,
    KeyPressedEvent, Modifiers, MouseButton, MouseButtonPressedEvent, Rect, UVec2, Vec2,
    WindowResizeEvent,
};
use lumina::event_class;
use std::cell::Cell;
use std::rc::Rc;

/// A game's own event (rules E5, B6): declared with a bare `#[event_class]`, its type is `None`.
#[event_class]
#[derive(Debug, Clone, PartialEq)]
pub struct CameraMoved {
    /// New camera position, east-west.
    pub x: f32,
    /// New camera position, north-south.
    pub z: f32,
}

/// The game viewport: WASD moves the camera; everything else (shortcuts with Control held, other
/// keys) is left to the layers below.
struct GameViewport {
    processor: std::rc::Weak<EventProcessor>,
    camera: Cell<(f32, f32)>,
}

impl EventHandler for GameViewport {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        let Some(press) = event.downcast_ref::<KeyPressedEvent>() else {
            return false;
        };
        if !(press.modifiers & (Modifiers::CONTROL | Modifiers::ALT | Modifiers::SUPER)).is_empty()
        {
            return false;
        }
        let (dx, dz) = match press.key {
            Key::W => (0.0, 1.0),
            Key::S => (0.0, -1.0),
            Key::A => (-1.0, 0.0),
            Key::D => (1.0, 0.0),
            _ => return false,
        };
        let (x, z) = self.camera.get();
        self.camera.set((x + dx, z + dz));
        println!("  viewport: {} moves the camera", press.key);
        // A nested dispatch of the game's own event, from inside a handler (P4).
        if let Some(processor) = self.processor.upgrade() {
            processor.dispatch(CameraMoved {
                x: x + dx,
                z: z + dz,
            });
        }
        true
    }
}

/// The editor chrome: shortcuts, and a log of whatever reaches it.
struct EditorChrome;

impl EventHandler for EditorChrome {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        if let Some(press) = event.downcast_ref::<KeyPressedEvent>() {
            let shortcut = press.modifiers.contains(Modifiers::CONTROL) && press.key == Key::S;
            println!(
                "  chrome: key {}{}",
                press.key,
                if shortcut { " (save)" } else { "" }
            );
            return true;
        }
        if event.is_in_category(EventCategory::INPUT) {
            println!("  chrome: {} left by the viewports", event.name());
        }
        false
    }
}

fn main() {
    let processor = Rc::new(EventProcessor::new());

    let viewports = Rc::new(InputViewportRegistry::new());
    assert!(viewports.register(&processor)); // at InputLayer::Viewport (1000)
    let game = Rc::new(GameViewport {
        processor: Rc::downgrade(&processor),
        camera: Cell::new((0.0, 0.0)),
    });
    let game_id = viewports.add_viewport(&game, Rect::new(0.0, 0.0, 1280.0, 720.0));

    let chrome = Rc::new(EditorChrome);
    assert!(processor.register_event_handler(&chrome, InputLayer::EditorChrome)); // 500

    // The HUD listens to the game's own event at the default layer (0).
    let hud = Rc::new(
        |event: &mut dyn Event| match event.downcast_ref::<CameraMoved>() {
            Some(moved) => {
                println!("  hud: camera at ({}, {})", moved.x, moved.z);
                true
            }
            None => false,
        },
    );
    assert!(processor.register_event_handler(&hud, InputLayer::Default));

    let press = |key| KeyPressedEvent::new(key, Modifiers::NONE);

    println!("W before the viewport has focus:");
    processor.dispatch(press(Key::W));

    println!("click into the viewport:");
    let click =
        MouseButtonPressedEvent::new(MouseButton::Left, Modifiers::NONE, Vec2::new(640.0, 360.0));
    processor.dispatch(click);
    assert_eq!(viewports.focused(), Some(game_id));

    println!("W with the viewport focused:");
    let consumed = processor.dispatch(press(Key::W));
    assert!(consumed);

    println!("Ctrl+S with the viewport focused:");
    processor.dispatch(KeyPressedEvent::new(Key::S, Modifiers::CONTROL));

    println!("F5 with the viewport focused:");
    processor.dispatch(press(Key::F5));

    println!("a window resize (not input, so not routed to viewports):");
    let consumed = processor.dispatch(WindowResizeEvent::new(UVec2::new(1920, 1080)));
    println!("  consumed: {consumed}");

    println!("the viewport closes; keys go to the chrome again:");
    drop(game);
    processor.dispatch(press(Key::W));
    println!("handlers registered: {}", processor.len());
}
