//! Platform input: real windows and gamepads feed the [`EventProcessor`](crate::EventProcessor)
//! (rules PL1-PL3). Each half is behind a cargo feature, off by default:
//!
//! - `winit`: [`WinitInput`] turns a winit 0.30 window's `WindowEvent`s into lumina events
//!   (PL1), through [`WindowInput`], what the window reported in winit's values, which can also
//!   be made without a winit event; [`WindowState`] is what it knows of the window and
//!   [`WinitSettings`] how it translates. winit's values convert with `From`:
//!   `Key::from(physical_key)` maps every physical key lumina's [`Key`](crate::event::Key)
//!   names, and anything else to `Key::Unknown` (PL2); `Modifiers::from(modifiers_state)`,
//!   `MouseButton::from(button)`; [`scroll_lines`] turns a scroll delta into lines.
//! - `gilrs`: [`GamepadInput`] turns gamepad connects and disconnects into joystick events with
//!   the gamepad's id (PL3).
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
pub use converters::scroll_lines;
#[cfg(feature = "gilrs")]
pub use gamepad::GamepadInput;
#[cfg(feature = "gilrs")]
pub use gilrs;
#[cfg(feature = "winit")]
pub use window::{DEFAULT_PIXELS_PER_LINE, WindowInput, WindowState, WinitInput, WinitSettings};
#[cfg(feature = "winit")]
pub use winit;
