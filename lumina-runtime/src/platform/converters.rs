//! One small conversion per winit value the window translation needs: modifiers, mouse buttons,
//! scroll deltas.

use winit::event::{MouseButton as WinitButton, MouseScrollDelta};
use winit::keyboard::ModifiersState;

use crate::event::{Modifiers, MouseButton, Vec2};

/// The held modifier keys of winit's `state` (Shift, Control, Alt, Super). Lock states are not
/// part of winit's modifiers; [`WinitInput`](super::WinitInput) tracks them from the lock keys.
pub fn modifiers_from_winit(state: ModifiersState) -> Modifiers {
    let mut modifiers = Modifiers::NONE;
    if state.shift_key() {
        modifiers |= Modifiers::SHIFT;
    }
    if state.control_key() {
        modifiers |= Modifiers::CONTROL;
    }
    if state.alt_key() {
        modifiers |= Modifiers::ALT;
    }
    if state.super_key() {
        modifiers |= Modifiers::SUPER;
    }
    modifiers
}

/// The lumina button of a winit button. `Other(n)` keeps winit's platform index `n`, saturated
/// at 255.
pub fn mouse_button_from_winit(button: WinitButton) -> MouseButton {
    match button {
        WinitButton::Left => MouseButton::Left,
        WinitButton::Right => MouseButton::Right,
        WinitButton::Middle => MouseButton::Middle,
        WinitButton::Back => MouseButton::Back,
        WinitButton::Forward => MouseButton::Forward,
        WinitButton::Other(index) => {
            MouseButton::from_index(u8::try_from(index).unwrap_or(u8::MAX))
        }
    }
}

/// A scroll delta in lines on both axes, in lumina's directions: `x` positive to the right, `y`
/// positive away from the user. Line deltas (wheels) are taken as they are; pixel deltas
/// (touchpads), given in physical pixels, are divided by `pixels_per_line`.
///
/// winit's horizontal axis is the other way round (positive: the content moves right, i.e. the
/// user scrolls left), so `x` changes sign.
pub fn scroll_lines(delta: MouseScrollDelta, pixels_per_line: f32) -> Vec2 {
    let (x, y) = match delta {
        MouseScrollDelta::LineDelta(x, y) => (x, y),
        MouseScrollDelta::PixelDelta(pixels) => (
            pixels.x as f32 / pixels_per_line,
            pixels.y as f32 / pixels_per_line,
        ),
    };
    // `0.0 - x`, not `-x`: no axis reads -0.
    Vec2::new(0.0 - x, y)
}
