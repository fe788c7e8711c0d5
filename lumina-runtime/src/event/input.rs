//! Device vocabulary of the events: [`Key`], [`MouseButton`], [`Modifiers`], and the small
//! vectors positions and sizes are given in.

use std::fmt;

use super::bits::bit_flags;

/// Declares [`Key`] from one table of (variant, platform key code), so the enum, `ALL`, `name()`
/// and the code mapping cannot drift apart.
macro_rules! keys {
    ($( $(#[$doc:meta])* $Variant:ident = $code:literal ,)*) => {
        /// A key of a physical keyboard, named by its position on a US layout (as GLFW names
        /// keys); text input comes as [`CharInputEvent`](super::CharInputEvent) instead.
        ///
        /// Covers a full keyboard: letters, digits, punctuation, function keys F1-F25, the
        /// navigation and editing block, the keypad, locks, and both sides of each modifier.
        /// [`code`](Key::code) and `Key::from(code)` convert to and from the platform layer's
        /// key codes (GLFW's numbering); `Modifiers::from(key)` is the modifier flag a key sets.
        ///
        /// ```
        /// use lumina::event::Key;
        ///
        /// use lumina::event::Modifiers;
        ///
        /// assert_eq!(Key::from(65), Key::A);
        /// assert_eq!(Key::Escape.code(), 256);
        /// assert_eq!(Key::from(-7), Key::Unknown);
        /// assert_eq!(Key::F12.to_string(), "F12");
        /// assert_eq!(Modifiers::from(Key::LeftShift), Modifiers::SHIFT);
        /// assert!(Modifiers::from(Key::A).is_empty()); // not a modifier key
        /// ```
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
        #[non_exhaustive]
        pub enum Key {
            /// A key the platform could not identify.
            #[default]
            Unknown,
            $( $(#[$doc])* $Variant, )*
        }

        impl Key {
            /// Every identified key (not `Unknown`), in key-code order.
            pub const ALL: &'static [Key] = &[$(Key::$Variant),*];

            /// The key's name, e.g. `"A"`, `"LeftShift"`, `"Keypad7"`.
            pub const fn name(self) -> &'static str {
                match self {
                    Key::Unknown => "Unknown",
                    $( Key::$Variant => stringify!($Variant), )*
                }
            }

            /// The platform key code (GLFW's numbering); -1 for `Unknown`.
            pub const fn code(self) -> i32 {
                match self {
                    Key::Unknown => -1,
                    $( Key::$Variant => $code, )*
                }
            }

        }

        /// The key of a platform key code (GLFW's numbering, as [`Key::code`] gives it);
        /// `Unknown` for a code that names no key.
        impl From<i32> for Key {
            fn from(code: i32) -> Key {
                match code {
                    $( $code => Key::$Variant, )*
                    _ => Key::Unknown,
                }
            }
        }
    };
}

keys! {
    /// Space bar.
    Space = 32,
    /// `'`
    Apostrophe = 39,
    /// `,`
    Comma = 44,
    /// `-`
    Minus = 45,
    /// `.`
    Period = 46,
    /// `/`
    Slash = 47,
    /// Digit 0 of the main block.
    Digit0 = 48,
    /// Digit 1.
    Digit1 = 49,
    /// Digit 2.
    Digit2 = 50,
    /// Digit 3.
    Digit3 = 51,
    /// Digit 4.
    Digit4 = 52,
    /// Digit 5.
    Digit5 = 53,
    /// Digit 6.
    Digit6 = 54,
    /// Digit 7.
    Digit7 = 55,
    /// Digit 8.
    Digit8 = 56,
    /// Digit 9.
    Digit9 = 57,
    /// `;`
    Semicolon = 59,
    /// `=`
    Equal = 61,
    /// Letter A.
    A = 65,
    /// Letter B.
    B = 66,
    /// Letter C.
    C = 67,
    /// Letter D.
    D = 68,
    /// Letter E.
    E = 69,
    /// Letter F.
    F = 70,
    /// Letter G.
    G = 71,
    /// Letter H.
    H = 72,
    /// Letter I.
    I = 73,
    /// Letter J.
    J = 74,
    /// Letter K.
    K = 75,
    /// Letter L.
    L = 76,
    /// Letter M.
    M = 77,
    /// Letter N.
    N = 78,
    /// Letter O.
    O = 79,
    /// Letter P.
    P = 80,
    /// Letter Q.
    Q = 81,
    /// Letter R.
    R = 82,
    /// Letter S.
    S = 83,
    /// Letter T.
    T = 84,
    /// Letter U.
    U = 85,
    /// Letter V.
    V = 86,
    /// Letter W.
    W = 87,
    /// Letter X.
    X = 88,
    /// Letter Y.
    Y = 89,
    /// Letter Z.
    Z = 90,
    /// `[`
    LeftBracket = 91,
    /// `\`
    Backslash = 92,
    /// `]`
    RightBracket = 93,
    /// `` ` ``
    GraveAccent = 96,
    /// Non-US key #1.
    World1 = 161,
    /// Non-US key #2.
    World2 = 162,
    /// Escape.
    Escape = 256,
    /// Enter / Return.
    Enter = 257,
    /// Tab.
    Tab = 258,
    /// Backspace.
    Backspace = 259,
    /// Insert.
    Insert = 260,
    /// Delete.
    Delete = 261,
    /// Right arrow.
    Right = 262,
    /// Left arrow.
    Left = 263,
    /// Down arrow.
    Down = 264,
    /// Up arrow.
    Up = 265,
    /// Page Up.
    PageUp = 266,
    /// Page Down.
    PageDown = 267,
    /// Home.
    Home = 268,
    /// End.
    End = 269,
    /// Caps Lock.
    CapsLock = 280,
    /// Scroll Lock.
    ScrollLock = 281,
    /// Num Lock.
    NumLock = 282,
    /// Print Screen.
    PrintScreen = 283,
    /// Pause / Break.
    Pause = 284,
    /// F1.
    F1 = 290,
    /// F2.
    F2 = 291,
    /// F3.
    F3 = 292,
    /// F4.
    F4 = 293,
    /// F5.
    F5 = 294,
    /// F6.
    F6 = 295,
    /// F7.
    F7 = 296,
    /// F8.
    F8 = 297,
    /// F9.
    F9 = 298,
    /// F10.
    F10 = 299,
    /// F11.
    F11 = 300,
    /// F12.
    F12 = 301,
    /// F13.
    F13 = 302,
    /// F14.
    F14 = 303,
    /// F15.
    F15 = 304,
    /// F16.
    F16 = 305,
    /// F17.
    F17 = 306,
    /// F18.
    F18 = 307,
    /// F19.
    F19 = 308,
    /// F20.
    F20 = 309,
    /// F21.
    F21 = 310,
    /// F22.
    F22 = 311,
    /// F23.
    F23 = 312,
    /// F24.
    F24 = 313,
    /// F25.
    F25 = 314,
    /// Keypad 0.
    Keypad0 = 320,
    /// Keypad 1.
    Keypad1 = 321,
    /// Keypad 2.
    Keypad2 = 322,
    /// Keypad 3.
    Keypad3 = 323,
    /// Keypad 4.
    Keypad4 = 324,
    /// Keypad 5.
    Keypad5 = 325,
    /// Keypad 6.
    Keypad6 = 326,
    /// Keypad 7.
    Keypad7 = 327,
    /// Keypad 8.
    Keypad8 = 328,
    /// Keypad 9.
    Keypad9 = 329,
    /// Keypad `.`
    KeypadDecimal = 330,
    /// Keypad `/`
    KeypadDivide = 331,
    /// Keypad `*`
    KeypadMultiply = 332,
    /// Keypad `-`
    KeypadSubtract = 333,
    /// Keypad `+`
    KeypadAdd = 334,
    /// Keypad Enter.
    KeypadEnter = 335,
    /// Keypad `=`
    KeypadEqual = 336,
    /// Left Shift.
    LeftShift = 340,
    /// Left Control.
    LeftControl = 341,
    /// Left Alt / Option.
    LeftAlt = 342,
    /// Left Super (Windows / Command).
    LeftSuper = 343,
    /// Right Shift.
    RightShift = 344,
    /// Right Control.
    RightControl = 345,
    /// Right Alt / AltGr.
    RightAlt = 346,
    /// Right Super.
    RightSuper = 347,
    /// Menu / context-menu key.
    Menu = 348,
}

/// The modifier flag `key` sets while held: one flag for each of the eight modifier keys (Shift,
/// Control, Alt, Super; left and right), [`Modifiers::NONE`] for every other key.
impl From<Key> for Modifiers {
    fn from(key: Key) -> Modifiers {
        match key {
            Key::LeftShift | Key::RightShift => Modifiers::SHIFT,
            Key::LeftControl | Key::RightControl => Modifiers::CONTROL,
            Key::LeftAlt | Key::RightAlt => Modifiers::ALT,
            Key::LeftSuper | Key::RightSuper => Modifiers::SUPER,
            _ => Modifiers::NONE,
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mouse button. Mice with more buttons report them as `Other(n)` (n = 5 for the sixth, ...).
///
/// Converts to and from the platform layer's zero-based button index (Left 0, Right 1, Middle 2,
/// Back 3, Forward 4) with `From`:
///
/// ```
/// use lumina::event::MouseButton;
///
/// assert_eq!(MouseButton::from(0), MouseButton::Left);
/// assert_eq!(MouseButton::from(6), MouseButton::Other(6));
/// assert_eq!(u8::from(MouseButton::Forward), 4);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum MouseButton {
    /// Primary button.
    Left,
    /// Secondary button.
    Right,
    /// Wheel button.
    Middle,
    /// Fourth button, usually "back".
    Back,
    /// Fifth button, usually "forward".
    Forward,
    /// Any further button, by its zero-based index (5 and up).
    Other(u8),
}

/// The zero-based button index of the platform layer (Left 0, Right 1, Middle 2, ...).
impl From<MouseButton> for u8 {
    fn from(button: MouseButton) -> u8 {
        match button {
            MouseButton::Left => 0,
            MouseButton::Right => 1,
            MouseButton::Middle => 2,
            MouseButton::Back => 3,
            MouseButton::Forward => 4,
            MouseButton::Other(index) => index,
        }
    }
}

/// The button of a zero-based platform index.
impl From<u8> for MouseButton {
    fn from(index: u8) -> MouseButton {
        match index {
            0 => MouseButton::Left,
            1 => MouseButton::Right,
            2 => MouseButton::Middle,
            3 => MouseButton::Back,
            4 => MouseButton::Forward,
            other => MouseButton::Other(other),
        }
    }
}

bit_flags! {
    /// The modifier keys and lock states held during a key, character or mouse event.
    ///
    /// ```
    /// use lumina::event::Modifiers;
    ///
    /// let held = Modifiers::CONTROL | Modifiers::SHIFT;
    /// assert!(held.contains(Modifiers::CONTROL));
    /// assert!(!held.contains(Modifiers::ALT));
    /// assert_eq!(format!("{held:?}"), "Modifiers(SHIFT | CONTROL)");
    /// ```
    pub struct Modifiers(u8) {
        /// A Shift key.
        const SHIFT = 1 << 0;
        /// A Control key.
        const CONTROL = 1 << 1;
        /// An Alt / Option key.
        const ALT = 1 << 2;
        /// A Super key (Windows / Command).
        const SUPER = 1 << 3;
        /// Caps Lock is on.
        const CAPS_LOCK = 1 << 4;
        /// Num Lock is on.
        const NUM_LOCK = 1 << 5;
    }
}

macro_rules! vector {
    ($(#[$doc:meta])* $Name:ident($T:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Debug, Default)]
        pub struct $Name {
            /// Horizontal component.
            pub x: $T,
            /// Vertical component.
            pub y: $T,
        }

        impl $Name {
            /// A vector from its components.
            pub const fn new(x: $T, y: $T) -> Self {
                $Name { x, y }
            }
        }

        impl From<($T, $T)> for $Name {
            fn from((x, y): ($T, $T)) -> Self {
                $Name { x, y }
            }
        }
    };
}

vector! {
    /// A position, offset or scale in window coordinates (pixels, origin top left).
    Vec2(f32)
}
vector! {
    /// A signed integer position, e.g. of a window on the desktop.
    IVec2(i32)
}
vector! {
    /// An unsigned integer size, e.g. of a window or framebuffer in pixels.
    UVec2(u32)
}
