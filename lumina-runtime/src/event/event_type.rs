//! [`EventType`], the kind of an input or window event, and [`EventCategory`], its bit-flag
//! categories (rule E1).

use std::fmt;
use std::str::FromStr;

use super::bits::bit_flags;

bit_flags! {
    /// The categories of an [`EventType`], as bit flags: a handler interested in every keyboard
    /// event tests `event.is_in_category(EventCategory::KEYBOARD)` instead of listing types.
    /// `EventCategory::from(ty)` is the categories of an [`EventType`].
    ///
    /// ```
    /// use lumina::event::{EventCategory, EventType};
    ///
    /// let key = EventCategory::from(EventType::KeyPressed);
    /// assert!(key.contains(EventCategory::KEYBOARD | EventCategory::INPUT));
    /// assert!((key & (EventCategory::MOUSE | EventCategory::WINDOW)).is_empty());
    /// assert_eq!(format!("{key:?}"), "EventCategory(KEYBOARD | INPUT)");
    /// ```
    pub struct EventCategory(u8) {
        /// Key presses, releases, repeats and character input.
        const KEYBOARD = 1 << 0;
        /// Mouse buttons, motion, scrolling, entering and leaving.
        const MOUSE = 1 << 1;
        /// Window state: size, position, focus, scale, framebuffer, dropped files.
        const WINDOW = 1 << 2;
        /// Everything a user does with a device: keyboard, mouse and joystick events.
        const INPUT = 1 << 3;
        /// The application's own ticks: AppTick, AppUpdate, AppRender.
        const APPLICATION = 1 << 4;
        /// Joystick connection changes.
        const JOYSTICK = 1 << 5;
    }
}

/// Declares [`EventType`] from one table, so the variants, `ALL`, `name()` and the categories
/// cannot drift apart.
macro_rules! event_types {
    ($( $(#[$doc:meta])* $Variant:ident => $($category:ident)|* ;)*) => {
        /// The kind of an event: exactly the variants of the engine's `EEventType` (rule E1).
        ///
        /// Every event class names one of these with `#[event_class(Variant)]`. `None` is the
        /// type of game events that are not one of the engine's input or window events
        /// (rule E5); events are told apart by their Rust type, never by this value alone.
        ///
        /// ```
        /// use lumina::event::EventType;
        ///
        /// let ty: EventType = "MouseScrolled".parse().unwrap();
        /// assert_eq!(ty, EventType::MouseScrolled);
        /// assert_eq!(ty.to_string(), "MouseScrolled");
        /// assert_eq!(EventType::ALL.len(), 29);
        /// let error = "MouseScroled".parse::<EventType>().unwrap_err();
        /// assert!(error.to_string().starts_with("unknown event type `MouseScroled`; expected one of: None, KeyPressed"));
        /// ```
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
        #[repr(u8)]
        pub enum EventType {
            $( $(#[$doc])* $Variant, )*
        }

        impl EventType {
            /// Every event type, in declaration order (`None` first).
            pub const ALL: [EventType; [$(EventType::$Variant),*].len()] = [$(EventType::$Variant),*];

            /// The variant's name, e.g. `"KeyPressed"`; what [`Display`](fmt::Display) prints and
            /// [`FromStr`] parses.
            pub const fn name(self) -> &'static str {
                match self {
                    $( EventType::$Variant => stringify!($Variant), )*
                }
            }

        }

        /// The categories an event type belongs to (none for `None`).
        impl From<EventType> for EventCategory {
            fn from(ty: EventType) -> EventCategory {
                match ty {
                    $( EventType::$Variant => EventCategory(0 $(| EventCategory::$category.0)*), )*
                }
            }
        }
    };
}

event_types! {
    /// No engine event type: the type of custom game events that are not input or window events.
    #[default]
    None => ;
    /// A key went down.
    KeyPressed => KEYBOARD | INPUT;
    /// A key went up.
    KeyReleased => KEYBOARD | INPUT;
    /// A held key repeated.
    KeyRepeat => KEYBOARD | INPUT;
    /// A character was typed (text input, after the keyboard layout).
    CharInput => KEYBOARD | INPUT;
    /// A character was typed, with the modifiers held.
    CharInputMods => KEYBOARD | INPUT;
    /// A mouse button went down.
    MouseButtonPressed => MOUSE | INPUT;
    /// A mouse button went up.
    MouseButtonReleased => MOUSE | INPUT;
    /// The cursor moved.
    MouseMoved => MOUSE | INPUT;
    /// A wheel or touchpad scrolled.
    MouseScrolled => MOUSE | INPUT;
    /// The cursor entered the window.
    MouseEntered => MOUSE | INPUT;
    /// The cursor left the window.
    MouseLeft => MOUSE | INPUT;
    /// The window's size changed.
    WindowResize => WINDOW;
    /// The user asked to close the window.
    WindowClose => WINDOW;
    /// The window gained focus.
    WindowFocus => WINDOW;
    /// The window lost focus.
    WindowLostFocus => WINDOW;
    /// The window moved.
    WindowMoved => WINDOW;
    /// The window was maximized.
    WindowMaximized => WINDOW;
    /// The window was minimized.
    WindowMinimized => WINDOW;
    /// The window was restored from maximized or minimized.
    WindowRestored => WINDOW;
    /// The window's contents need redrawing.
    WindowRefresh => WINDOW;
    /// The window's content scale (DPI) changed.
    WindowContentScaleChanged => WINDOW;
    /// The window's framebuffer size changed.
    FramebufferResize => WINDOW;
    /// Files were dropped on the window.
    FileDrop => WINDOW;
    /// A joystick or gamepad was connected.
    JoystickConnected => JOYSTICK | INPUT;
    /// A joystick or gamepad was disconnected.
    JoystickDisconnected => JOYSTICK | INPUT;
    /// A fixed-rate application tick.
    AppTick => APPLICATION;
    /// A frame update, with the frame's delta time.
    AppUpdate => APPLICATION;
    /// A frame render.
    AppRender => APPLICATION;
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing an [`EventType`] from a string that names none. Its message lists the
/// valid names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseEventTypeError {
    input: String,
}

impl ParseEventTypeError {
    /// The string that failed to parse.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl fmt::Display for ParseEventTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown event type `{}`; expected one of: ", self.input)?;
        for (i, ty) in EventType::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(ty.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseEventTypeError {}

impl FromStr for EventType {
    type Err = ParseEventTypeError;

    /// Parses a variant name exactly as [`name`](EventType::name) spells it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventType::ALL
            .into_iter()
            .find(|ty| ty.name() == s)
            .ok_or_else(|| ParseEventTypeError {
                input: s.to_owned(),
            })
    }
}
