//! Platform input: real windows and gamepads feed the [`EventProcessor`](crate::EventProcessor)
//! (rules PL1-PL3). Each half is behind a cargo feature, off by default:
//!
//! - `winit`: [`WinitInput`] turns a winit 0.30 window's `WindowEvent`s into lumina events
//!   (PL1); [`key_from_physical`] maps every physical key lumina's [`Key`](crate::event::Key)
//!   names, and anything else to `Key::Unknown` (PL2). The conversions are small functions, one
//!   per kind of value.
//! - `gilrs`: [`GamepadInput`] and [`dispatch_gamepad_event`] turn gamepad connects and
//!   disconnects into joystick events with the gamepad's id (PL3).
//!
//! The dispatched events go through the processor like any other, so an
//! [`InputViewportRegistry`](crate::event::InputViewportRegistry) registered on it routes them
//! to the focused viewport first. The crates are re-exported as [`winit`] and [`gilrs`], so a
//! game names the same versions.

#[cfg(feature = "winit")]
mod converters;
#[cfg(feature = "gilrs")]
mod gamepad;
#[cfg(feature = "winit")]
mod keys;
#[cfg(feature = "winit")]
mod window;

#[cfg(feature = "winit")]
pub use converters::{modifiers_from_winit, mouse_button_from_winit, scroll_lines};
#[cfg(feature = "gilrs")]
pub use gamepad::{GamepadInput, dispatch_gamepad_event};
#[cfg(feature = "gilrs")]
pub use gilrs;
#[cfg(feature = "winit")]
pub use keys::{key_from_code, key_from_physical};
#[cfg(feature = "winit")]
pub use window::{DEFAULT_PIXELS_PER_LINE, WinitInput};
#[cfg(feature = "winit")]
pub use winit;
