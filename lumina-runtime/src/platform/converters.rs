//! The winit values the window translation converts: modifiers and mouse buttons (`From`
//! impls), scroll deltas ([`scroll_lines`], which needs a setting).

use winit::event::{MouseButton as WinitButton, MouseScrollDelta};
use winit::keyboard::ModifiersState;

use crate::event::{Modifiers, MouseButton, Vec2};

impl From<ModifiersState> for Modifiers {
    /// The held modifier keys of winit's `state` (Shift, Control, Alt, Super). Lock states are
    /// not part of winit's modifiers; [`WinitInput`](super::WinitInput) tracks them from the
    /// lock keys.
    ///
    /// ```
    /// use lumina::event::Modifiers;
    /// use lumina::platform::winit::keyboard::ModifiersState;
    ///
    /// let held = ModifiersState::SHIFT | ModifiersState::SUPER;
    /// assert_eq!(Modifiers::from(held), Modifiers::SHIFT | Modifiers::SUPER);
    /// assert_eq!(Modifiers::from(ModifiersState::empty()), Modifiers::NONE);
    /// ```
    fn from(state: ModifiersState) -> Self {
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
}

impl From<WinitButton> for MouseButton {
    /// The lumina button of a winit button. `Other(n)` keeps winit's platform index `n`,
    /// saturated at 255.
    ///
    /// ```
    /// use lumina::event::MouseButton;
    /// use lumina::platform::winit::event::MouseButton as WinitButton;
    ///
    /// assert_eq!(MouseButton::from(WinitButton::Left), MouseButton::Left);
    /// assert_eq!(MouseButton::from(WinitButton::Other(9000)), MouseButton::Other(255));
    /// ```
    fn from(button: WinitButton) -> Self {
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
}

/// A scroll delta in lines on both axes, in lumina's directions: `x` positive to the right, `y`
/// positive away from the user. Line deltas (wheels) are taken as they are; pixel deltas
/// (touchpads), given in physical pixels, are divided by `pixels_per_line`.
///
/// winit's horizontal axis is the other way round (positive: the content moves right, i.e. the
/// user scrolls left), so `x` changes sign. Not a `From` conversion: a pixel delta needs the
/// pixels per line ([`WinitSettings`](super::WinitSettings)).
///
/// ```
/// use lumina::event::Vec2;
/// use lumina::platform::scroll_lines;
/// use lumina::platform::winit::dpi::PhysicalPosition;
/// use lumina::platform::winit::event::MouseScrollDelta;
///
/// assert_eq!(scroll_lines(MouseScrollDelta::LineDelta(1.0, 2.0), 20.0), Vec2::new(-1.0, 2.0));
/// let pixels = MouseScrollDelta::PixelDelta(PhysicalPosition::new(0.0, 50.0));
/// assert_eq!(scroll_lines(pixels, 10.0), Vec2::new(0.0, 5.0));
/// ```
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
