//! Physical keys: winit's [`KeyCode`] (a key's position, whatever the layout) to lumina's [`Key`]
//! (rule PL2).

use winit::keyboard::{KeyCode, PhysicalKey};

use crate::event::Key;

impl From<PhysicalKey> for Key {
    /// The lumina key of a winit physical key; [`Key::Unknown`] for a key that lumina's `Key`
    /// does not name and for keys winit could not identify.
    ///
    /// ```
    /// use lumina::event::Key;
    /// use lumina::platform::winit::keyboard::{KeyCode, NativeKeyCode, PhysicalKey};
    ///
    /// assert_eq!(Key::from(PhysicalKey::Code(KeyCode::KeyW)), Key::W);
    /// assert_eq!(Key::from(PhysicalKey::Code(KeyCode::LaunchMail)), Key::Unknown);
    /// let native = PhysicalKey::Unidentified(NativeKeyCode::Xkb(999));
    /// assert_eq!(Key::from(native), Key::Unknown);
    /// ```
    fn from(key: PhysicalKey) -> Self {
        match key {
            PhysicalKey::Code(code) => Key::from(code),
            PhysicalKey::Unidentified(_) => Key::Unknown,
        }
    }
}

impl From<KeyCode> for Key {
    /// The lumina key at the position of winit's `code`; [`Key::Unknown`] when `Key` has no
    /// such key (media and browser keys, F26-F35, the Japanese and Korean conversion keys, ...).
    ///
    /// `IntlBackslash` (the key left of Z on ISO keyboards) is [`Key::World1`] and `IntlRo` is
    /// [`Key::World2`], GLFW's two "non-US" keys.
    ///
    /// ```
    /// use lumina::event::Key;
    /// use lumina::platform::winit::keyboard::KeyCode;
    ///
    /// assert_eq!(Key::from(KeyCode::IntlBackslash), Key::World1);
    /// assert_eq!(Key::from(KeyCode::F26), Key::Unknown);
    /// ```
    fn from(code: KeyCode) -> Self {
        match code {
            KeyCode::Backquote => Key::GraveAccent,
            KeyCode::Backslash => Key::Backslash,
            KeyCode::BracketLeft => Key::LeftBracket,
            KeyCode::BracketRight => Key::RightBracket,
            KeyCode::Comma => Key::Comma,
            KeyCode::Digit0 => Key::Digit0,
            KeyCode::Digit1 => Key::Digit1,
            KeyCode::Digit2 => Key::Digit2,
            KeyCode::Digit3 => Key::Digit3,
            KeyCode::Digit4 => Key::Digit4,
            KeyCode::Digit5 => Key::Digit5,
            KeyCode::Digit6 => Key::Digit6,
            KeyCode::Digit7 => Key::Digit7,
            KeyCode::Digit8 => Key::Digit8,
            KeyCode::Digit9 => Key::Digit9,
            KeyCode::Equal => Key::Equal,
            KeyCode::IntlBackslash => Key::World1,
            KeyCode::IntlRo => Key::World2,
            KeyCode::KeyA => Key::A,
            KeyCode::KeyB => Key::B,
            KeyCode::KeyC => Key::C,
            KeyCode::KeyD => Key::D,
            KeyCode::KeyE => Key::E,
            KeyCode::KeyF => Key::F,
            KeyCode::KeyG => Key::G,
            KeyCode::KeyH => Key::H,
            KeyCode::KeyI => Key::I,
            KeyCode::KeyJ => Key::J,
            KeyCode::KeyK => Key::K,
            KeyCode::KeyL => Key::L,
            KeyCode::KeyM => Key::M,
            KeyCode::KeyN => Key::N,
            KeyCode::KeyO => Key::O,
            KeyCode::KeyP => Key::P,
            KeyCode::KeyQ => Key::Q,
            KeyCode::KeyR => Key::R,
            KeyCode::KeyS => Key::S,
            KeyCode::KeyT => Key::T,
            KeyCode::KeyU => Key::U,
            KeyCode::KeyV => Key::V,
            KeyCode::KeyW => Key::W,
            KeyCode::KeyX => Key::X,
            KeyCode::KeyY => Key::Y,
            KeyCode::KeyZ => Key::Z,
            KeyCode::Minus => Key::Minus,
            KeyCode::Period => Key::Period,
            KeyCode::Quote => Key::Apostrophe,
            KeyCode::Semicolon => Key::Semicolon,
            KeyCode::Slash => Key::Slash,
            KeyCode::AltLeft => Key::LeftAlt,
            KeyCode::AltRight => Key::RightAlt,
            KeyCode::Backspace => Key::Backspace,
            KeyCode::CapsLock => Key::CapsLock,
            KeyCode::ContextMenu => Key::Menu,
            KeyCode::ControlLeft => Key::LeftControl,
            KeyCode::ControlRight => Key::RightControl,
            KeyCode::Enter => Key::Enter,
            KeyCode::SuperLeft => Key::LeftSuper,
            KeyCode::SuperRight => Key::RightSuper,
            KeyCode::ShiftLeft => Key::LeftShift,
            KeyCode::ShiftRight => Key::RightShift,
            KeyCode::Space => Key::Space,
            KeyCode::Tab => Key::Tab,
            KeyCode::Delete => Key::Delete,
            KeyCode::End => Key::End,
            KeyCode::Home => Key::Home,
            KeyCode::Insert => Key::Insert,
            KeyCode::PageDown => Key::PageDown,
            KeyCode::PageUp => Key::PageUp,
            KeyCode::ArrowDown => Key::Down,
            KeyCode::ArrowLeft => Key::Left,
            KeyCode::ArrowRight => Key::Right,
            KeyCode::ArrowUp => Key::Up,
            KeyCode::NumLock => Key::NumLock,
            KeyCode::Numpad0 => Key::Keypad0,
            KeyCode::Numpad1 => Key::Keypad1,
            KeyCode::Numpad2 => Key::Keypad2,
            KeyCode::Numpad3 => Key::Keypad3,
            KeyCode::Numpad4 => Key::Keypad4,
            KeyCode::Numpad5 => Key::Keypad5,
            KeyCode::Numpad6 => Key::Keypad6,
            KeyCode::Numpad7 => Key::Keypad7,
            KeyCode::Numpad8 => Key::Keypad8,
            KeyCode::Numpad9 => Key::Keypad9,
            KeyCode::NumpadAdd => Key::KeypadAdd,
            KeyCode::NumpadDecimal => Key::KeypadDecimal,
            KeyCode::NumpadDivide => Key::KeypadDivide,
            KeyCode::NumpadEnter => Key::KeypadEnter,
            KeyCode::NumpadEqual => Key::KeypadEqual,
            KeyCode::NumpadMultiply => Key::KeypadMultiply,
            KeyCode::NumpadSubtract => Key::KeypadSubtract,
            KeyCode::Escape => Key::Escape,
            KeyCode::PrintScreen => Key::PrintScreen,
            KeyCode::ScrollLock => Key::ScrollLock,
            KeyCode::Pause => Key::Pause,
            KeyCode::F1 => Key::F1,
            KeyCode::F2 => Key::F2,
            KeyCode::F3 => Key::F3,
            KeyCode::F4 => Key::F4,
            KeyCode::F5 => Key::F5,
            KeyCode::F6 => Key::F6,
            KeyCode::F7 => Key::F7,
            KeyCode::F8 => Key::F8,
            KeyCode::F9 => Key::F9,
            KeyCode::F10 => Key::F10,
            KeyCode::F11 => Key::F11,
            KeyCode::F12 => Key::F12,
            KeyCode::F13 => Key::F13,
            KeyCode::F14 => Key::F14,
            KeyCode::F15 => Key::F15,
            KeyCode::F16 => Key::F16,
            KeyCode::F17 => Key::F17,
            KeyCode::F18 => Key::F18,
            KeyCode::F19 => Key::F19,
            KeyCode::F20 => Key::F20,
            KeyCode::F21 => Key::F21,
            KeyCode::F22 => Key::F22,
            KeyCode::F23 => Key::F23,
            KeyCode::F24 => Key::F24,
            KeyCode::F25 => Key::F25,
            // `KeyCode` is non-exhaustive: keys added by later winit versions are unknown too.
            _ => Key::Unknown,
        }
    }
}
