//! One event class per [`EventType`](super::EventType) variant of the engine (rule E3), grouped
//! by concern: keyboard, mouse, window, files, joysticks, application ticks.
//!
//! Every struct is plain data with public fields and a `new` constructor taking them in order;
//! struct literals work too. `EventType::None` has no built-in class: it is the type of a game's
//! own events (rule E5).

use std::path::PathBuf;

use lumina_macros::event_class;

use super::input::{IVec2, Key, Modifiers, MouseButton, UVec2, Vec2};

/// Declares the `new` constructor of an event class, taking its fields in order.
macro_rules! constructor {
    ($Event:ident { $($field:ident : $Type:ty),* $(,)? }) => {
        impl $Event {
            #[doc = concat!("A `", stringify!($Event), "` from its fields.")]
            pub fn new($($field: $Type),*) -> Self {
                $Event { $($field),* }
            }
        }
    };
}

// ---------------------------------------------------------------------------------- keyboard

/// A key went down (`KeyPressed`).
#[event_class(KeyPressed)]
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPressedEvent {
    /// The key.
    pub key: Key,
    /// The modifiers held.
    pub modifiers: Modifiers,
    /// Whether this press is the platform's auto-repeat of a held key.
    pub repeat: bool,
}

impl KeyPressedEvent {
    /// A first press (not a repeat) of `key` with `modifiers` held. The platform's auto-repeat
    /// sets the public field: `KeyPressedEvent { repeat: true, ..KeyPressedEvent::new(key, mods) }`.
    pub fn new(key: Key, modifiers: Modifiers) -> Self {
        KeyPressedEvent {
            key,
            modifiers,
            repeat: false,
        }
    }
}

/// A key went up (`KeyReleased`).
#[event_class(KeyReleased)]
#[derive(Clone, Debug, PartialEq)]
pub struct KeyReleasedEvent {
    /// The key.
    pub key: Key,
    /// The modifiers held.
    pub modifiers: Modifiers,
}
constructor!(KeyReleasedEvent {
    key: Key,
    modifiers: Modifiers
});

/// A held key repeated (`KeyRepeat`).
#[event_class(KeyRepeat)]
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRepeatEvent {
    /// The key.
    pub key: Key,
    /// The modifiers held.
    pub modifiers: Modifiers,
    /// How many repeats since the key went down (1 for the first).
    pub repeat_count: u32,
}
constructor!(KeyRepeatEvent {
    key: Key,
    modifiers: Modifiers,
    repeat_count: u32
});

/// A character was typed (`CharInput`): text after the keyboard layout, for text fields.
#[event_class(CharInput)]
#[derive(Clone, Debug, PartialEq)]
pub struct CharInputEvent {
    /// The Unicode code point typed.
    pub code_point: char,
}
constructor!(CharInputEvent { code_point: char });

/// A character was typed, with the modifiers held (`CharInputMods`).
#[event_class(CharInputMods)]
#[derive(Clone, Debug, PartialEq)]
pub struct CharInputModsEvent {
    /// The Unicode code point typed.
    pub code_point: char,
    /// The modifiers held.
    pub modifiers: Modifiers,
}
constructor!(CharInputModsEvent {
    code_point: char,
    modifiers: Modifiers
});

// ------------------------------------------------------------------------------------- mouse

/// A mouse button went down (`MouseButtonPressed`).
#[event_class(MouseButtonPressed)]
#[derive(Clone, Debug, PartialEq)]
pub struct MouseButtonPressedEvent {
    /// The button.
    pub button: MouseButton,
    /// The modifiers held.
    pub modifiers: Modifiers,
    /// The cursor position, in window coordinates.
    pub position: Vec2,
}
constructor!(MouseButtonPressedEvent {
    button: MouseButton,
    modifiers: Modifiers,
    position: Vec2
});

/// A mouse button went up (`MouseButtonReleased`).
#[event_class(MouseButtonReleased)]
#[derive(Clone, Debug, PartialEq)]
pub struct MouseButtonReleasedEvent {
    /// The button.
    pub button: MouseButton,
    /// The modifiers held.
    pub modifiers: Modifiers,
    /// The cursor position, in window coordinates.
    pub position: Vec2,
}
constructor!(MouseButtonReleasedEvent {
    button: MouseButton,
    modifiers: Modifiers,
    position: Vec2
});

/// The cursor moved (`MouseMoved`).
#[event_class(MouseMoved)]
#[derive(Clone, Debug, PartialEq)]
pub struct MouseMovedEvent {
    /// The new cursor position, in window coordinates.
    pub position: Vec2,
    /// The motion since the previous `MouseMovedEvent`.
    pub delta: Vec2,
}
constructor!(MouseMovedEvent {
    position: Vec2,
    delta: Vec2
});

/// A wheel or touchpad scrolled (`MouseScrolled`), on both axes.
#[event_class(MouseScrolled)]
#[derive(Clone, Debug, PartialEq)]
pub struct MouseScrolledEvent {
    /// The scroll amount: `x` horizontal (positive right), `y` vertical (positive away from the
    /// user).
    pub offset: Vec2,
    /// The cursor position, in window coordinates.
    pub position: Vec2,
}
constructor!(MouseScrolledEvent {
    offset: Vec2,
    position: Vec2
});

/// The cursor entered the window (`MouseEntered`).
#[event_class(MouseEntered)]
#[derive(Clone, Debug, PartialEq)]
pub struct MouseEnteredEvent {
    /// Where it entered, in window coordinates.
    pub position: Vec2,
}
constructor!(MouseEnteredEvent { position: Vec2 });

/// The cursor left the window (`MouseLeft`).
#[event_class(MouseLeft)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MouseLeftEvent;

// ------------------------------------------------------------------------------------ window

/// The window's size changed (`WindowResize`).
#[event_class(WindowResize)]
#[derive(Clone, Debug, PartialEq)]
pub struct WindowResizeEvent {
    /// The new size of the client area, in screen coordinates.
    pub size: UVec2,
}
constructor!(WindowResizeEvent { size: UVec2 });

/// The user asked to close the window (`WindowClose`).
#[event_class(WindowClose)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowCloseEvent;

/// The window gained input focus (`WindowFocus`).
#[event_class(WindowFocus)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowFocusEvent;

/// The window lost input focus (`WindowLostFocus`).
#[event_class(WindowLostFocus)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowLostFocusEvent;

/// The window moved (`WindowMoved`).
#[event_class(WindowMoved)]
#[derive(Clone, Debug, PartialEq)]
pub struct WindowMovedEvent {
    /// The new position of the client area's top-left corner on the desktop.
    pub position: IVec2,
}
constructor!(WindowMovedEvent { position: IVec2 });

/// The window was maximized (`WindowMaximized`).
#[event_class(WindowMaximized)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowMaximizedEvent;

/// The window was minimized (`WindowMinimized`).
#[event_class(WindowMinimized)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowMinimizedEvent;

/// The window was restored from maximized or minimized (`WindowRestored`).
#[event_class(WindowRestored)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowRestoredEvent;

/// The window's contents need redrawing (`WindowRefresh`).
#[event_class(WindowRefresh)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WindowRefreshEvent;

/// The window's content scale changed, e.g. it moved to a monitor with another DPI
/// (`WindowContentScaleChanged`).
#[event_class(WindowContentScaleChanged)]
#[derive(Clone, Debug, PartialEq)]
pub struct WindowContentScaleChangedEvent {
    /// The new scale on each axis (1.0 = 96 DPI).
    pub scale: Vec2,
}
constructor!(WindowContentScaleChangedEvent { scale: Vec2 });

/// The window's framebuffer size changed, in pixels (`FramebufferResize`).
#[event_class(FramebufferResize)]
#[derive(Clone, Debug, PartialEq)]
pub struct FramebufferResizeEvent {
    /// The new framebuffer size, in pixels.
    pub size: UVec2,
}
constructor!(FramebufferResizeEvent { size: UVec2 });

// ------------------------------------------------------------------------------------- files

/// Files were dropped on the window (`FileDrop`).
#[event_class(FileDrop)]
#[derive(Clone, Debug, PartialEq)]
pub struct FileDropEvent {
    /// The dropped paths.
    pub paths: Vec<PathBuf>,
    /// Where they were dropped, in window coordinates.
    pub position: Vec2,
}
constructor!(FileDropEvent { paths: Vec<PathBuf>, position: Vec2 });

// --------------------------------------------------------------------------------- joysticks

/// A joystick or gamepad was connected (`JoystickConnected`).
#[event_class(JoystickConnected)]
#[derive(Clone, Debug, PartialEq)]
pub struct JoystickConnectedEvent {
    /// The platform's joystick id (0 to 15 on GLFW).
    pub joystick_id: u32,
}
constructor!(JoystickConnectedEvent { joystick_id: u32 });

/// A joystick or gamepad was disconnected (`JoystickDisconnected`).
#[event_class(JoystickDisconnected)]
#[derive(Clone, Debug, PartialEq)]
pub struct JoystickDisconnectedEvent {
    /// The platform's joystick id.
    pub joystick_id: u32,
}
constructor!(JoystickDisconnectedEvent { joystick_id: u32 });

// ------------------------------------------------------------------------------- application

/// A fixed-rate application tick (`AppTick`).
#[event_class(AppTick)]
#[derive(Clone, Debug, PartialEq)]
pub struct AppTickEvent {
    /// The fixed tick interval, in seconds.
    pub delta_time: f32,
}
constructor!(AppTickEvent { delta_time: f32 });

/// A frame update (`AppUpdate`).
#[event_class(AppUpdate)]
#[derive(Clone, Debug, PartialEq)]
pub struct AppUpdateEvent {
    /// Seconds since the previous update.
    pub delta_time: f32,
}
constructor!(AppUpdateEvent { delta_time: f32 });

/// A frame render (`AppRender`).
#[event_class(AppRender)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppRenderEvent;
