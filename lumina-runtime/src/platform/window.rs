//! [`WinitInput`]: winit window events to lumina events, dispatched through an
//! [`EventProcessor`] (rule PL1).

use std::path::Path;

use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, Ime, MouseButton as WinitButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{ModifiersState, PhysicalKey};
use winit::window::Window;

use super::converters::scroll_lines;
use crate::event::{
    CharInputEvent, CharInputModsEvent, EventProcessor, FileDropEvent, FramebufferResizeEvent,
    IVec2, Key, KeyPressedEvent, KeyReleasedEvent, KeyRepeatEvent, Modifiers, MouseButton,
    MouseButtonPressedEvent, MouseButtonReleasedEvent, MouseEnteredEvent, MouseLeftEvent,
    MouseMovedEvent, MouseScrolledEvent, UVec2, Vec2, WindowCloseEvent,
    WindowContentScaleChangedEvent, WindowFocusEvent, WindowLostFocusEvent, WindowMaximizedEvent,
    WindowMinimizedEvent, WindowMovedEvent, WindowRefreshEvent, WindowResizeEvent,
    WindowRestoredEvent,
};

/// How many physical pixels of a touchpad's scroll make one line, unless set otherwise
/// ([`WinitSettings::pixels_per_line`]).
pub const DEFAULT_PIXELS_PER_LINE: f32 = 20.0;

/// One thing a window reported, in winit's own values: what [`WinitInput::dispatch`] translates
/// into lumina events (the table on [`WinitInput`] says into which).
///
/// [`WinitInput::window_event`] makes one from each winit [`WindowEvent`] lumina has a
/// counterpart for (`WindowInput::try_from(&event)`, which gives the event back when there is
/// none). Made directly, it reports what winit's events carry without a winit event, whose
/// parts (such as a keyboard event's) cannot all be built outside winit: a test harness, a
/// replay, or a platform layer of one's own on winit's value types. [`State`](Self::State) is
/// the one variant that is no winit event: winit 0.30 reports no minimize, maximize or restore,
/// so the window is asked (`WindowInput::from(&window)`).
///
/// ```
/// use lumina::event::{Event, EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
/// use lumina::platform::{WindowInput, WinitInput};
/// use lumina::platform::winit::event::ElementState;
/// use lumina::platform::winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// let processor = EventProcessor::new();
/// let pressed = Rc::new(RefCell::new(Vec::new()));
/// let log = Rc::clone(&pressed);
/// let handler = Rc::new(move |event: &mut dyn Event| {
///     if let Some(press) = event.downcast_ref::<KeyPressedEvent>() {
///         log.borrow_mut().push(press.clone());
///     }
///     false
/// });
/// processor.register_event_handler(&handler, InputLayer::Default);
///
/// let mut input = WinitInput::new();
/// input.dispatch(&processor, WindowInput::ModifiersChanged(ModifiersState::CONTROL));
/// let ctrl_s = WindowInput::Key {
///     key: PhysicalKey::Code(KeyCode::KeyS),
///     state: ElementState::Pressed,
///     repeat: false,
///     text: Some("\u{13}"),
/// };
/// assert!(!input.dispatch(&processor, ctrl_s)); // dispatched, not consumed
/// assert_eq!(*pressed.borrow(), [KeyPressedEvent::new(Key::S, Modifiers::CONTROL)]);
/// assert_eq!(input.state().modifiers, Modifiers::CONTROL);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum WindowInput<'a> {
    /// winit's `WindowEvent::KeyboardInput` (its `KeyEvent`'s `physical_key`, `state`, `repeat`
    /// and `text`): a key went down or up. `repeat` is winit's auto-repeat flag; `text` the text
    /// the press produced, dispatched as character events after the key (control characters,
    /// such as Enter's `"\r"` or Ctrl+S's `"\u{13}"`, are not text and are left out).
    Key {
        /// The key's position on the keyboard (see `Key::from`).
        key: PhysicalKey,
        /// Down or up.
        state: ElementState,
        /// Whether the press is an auto-repeat of a held key.
        repeat: bool,
        /// The text the press typed, if any.
        text: Option<&'a str>,
    },
    /// winit's `WindowEvent::ModifiersChanged` (its `state()`): the held modifiers changed.
    /// Dispatches nothing: the next key, character and button events carry them. Lock states
    /// are kept.
    ModifiersChanged(ModifiersState),
    /// winit's `WindowEvent::Ime(Ime::Commit(text))`: text was typed through an input method.
    /// Per character, a [`CharInputEvent`] (unless Control or Alt is held, as in GLFW) and a
    /// [`CharInputModsEvent`]; control characters are left out.
    Text(&'a str),
    /// winit's `WindowEvent::CursorMoved` (its `position`, in physical pixels): the cursor
    /// moved. The delta is from the previous position inside the window (zero for the first
    /// move after entering); the first move after [`CursorEntered`](Self::CursorEntered) reports
    /// the [`MouseEnteredEvent`] first, at this position.
    CursorMoved(PhysicalPosition<f64>),
    /// winit's `WindowEvent::CursorEntered`: the cursor entered the window. winit gives no
    /// position here: the [`MouseEnteredEvent`] is dispatched with the next
    /// [`CursorMoved`](Self::CursorMoved).
    CursorEntered,
    /// winit's `WindowEvent::CursorLeft`: the cursor left the window, a [`MouseLeftEvent`].
    CursorLeft,
    /// winit's `WindowEvent::MouseInput` (its `state` and `button`): a mouse button went down or
    /// up, at the last cursor position.
    MouseButton {
        /// Down or up.
        state: ElementState,
        /// Which button (see `MouseButton::from`).
        button: WinitButton,
    },
    /// winit's `WindowEvent::MouseWheel` (its `delta`): a wheel or touchpad scrolled, at the last
    /// cursor position; both axes, in lines (see [`scroll_lines`]).
    MouseWheel(MouseScrollDelta),
    /// winit's `WindowEvent::Resized`: the window's client area is now this many physical
    /// pixels. A [`WindowResizeEvent`] with the logical size, then a [`FramebufferResizeEvent`]
    /// with the pixels.
    Resized(PhysicalSize<u32>),
    /// winit's `WindowEvent::Moved`: the window moved to this position (physical pixels on the
    /// desktop), a [`WindowMovedEvent`] with the logical position.
    Moved(PhysicalPosition<i32>),
    /// winit's `WindowEvent::Focused`: the window gained (`true`) or lost the input focus.
    Focused(bool),
    /// winit's `WindowEvent::CloseRequested`: a [`WindowCloseEvent`].
    CloseRequested,
    /// winit's `WindowEvent::ScaleFactorChanged` (its `scale_factor`), e.g. the window moved to
    /// another monitor: a [`WindowContentScaleChangedEvent`] with it on both axes.
    ScaleFactorChanged(f64),
    /// winit's `WindowEvent::DroppedFile`: a file was dropped on the window, a [`FileDropEvent`]
    /// at the last cursor position (winit reports one file per event).
    DroppedFile(&'a Path),
    /// winit's `WindowEvent::RedrawRequested`: a [`WindowRefreshEvent`].
    RedrawRequested,
    /// No winit event: the window is now `minimized` and / or `maximized`, as its
    /// `is_minimized()` and `is_maximized()` say (`WindowInput::from(&window)` asks them; winit
    /// 0.30 reports no minimize, maximize or restore, so ask after `Resized`, `Moved` and
    /// `Occluded`). Each change is reported as [`WindowMinimizedEvent`],
    /// [`WindowMaximizedEvent`] or [`WindowRestoredEvent`] (restored from minimized, or from
    /// maximized to normal); nothing if nothing changed. A `minimized` of `None` (a platform
    /// that cannot tell) keeps the last state.
    State {
        /// Whether the window is minimized; `None` if the platform cannot tell.
        minimized: Option<bool>,
        /// Whether the window is maximized.
        maximized: bool,
    },
}

impl<'a> TryFrom<&'a WindowEvent> for WindowInput<'a> {
    /// The event itself, when lumina has no counterpart for it (touch, gestures, theme, an
    /// input method's preedit, ...).
    type Error = &'a WindowEvent;

    /// What winit's `event` reports, as a [`WindowInput`].
    fn try_from(event: &'a WindowEvent) -> Result<Self, Self::Error> {
        Ok(match event {
            WindowEvent::KeyboardInput { event, .. } => WindowInput::Key {
                key: event.physical_key,
                state: event.state,
                repeat: event.repeat,
                text: event.text.as_deref(),
            },
            WindowEvent::ModifiersChanged(modifiers) => {
                WindowInput::ModifiersChanged(modifiers.state())
            }
            WindowEvent::Ime(Ime::Commit(text)) => WindowInput::Text(text),
            WindowEvent::CursorMoved { position, .. } => WindowInput::CursorMoved(*position),
            WindowEvent::CursorEntered { .. } => WindowInput::CursorEntered,
            WindowEvent::CursorLeft { .. } => WindowInput::CursorLeft,
            WindowEvent::MouseInput { state, button, .. } => WindowInput::MouseButton {
                state: *state,
                button: *button,
            },
            WindowEvent::MouseWheel { delta, .. } => WindowInput::MouseWheel(*delta),
            WindowEvent::Resized(size) => WindowInput::Resized(*size),
            WindowEvent::Moved(position) => WindowInput::Moved(*position),
            WindowEvent::Focused(focused) => WindowInput::Focused(*focused),
            WindowEvent::CloseRequested => WindowInput::CloseRequested,
            WindowEvent::ScaleFactorChanged { scale_factor, .. } => {
                WindowInput::ScaleFactorChanged(*scale_factor)
            }
            WindowEvent::DroppedFile(path) => WindowInput::DroppedFile(path),
            WindowEvent::RedrawRequested => WindowInput::RedrawRequested,
            other => return Err(other),
        })
    }
}

impl From<&Window> for WindowInput<'_> {
    /// The window's minimized and maximized state now, as [`WindowInput::State`].
    fn from(window: &Window) -> Self {
        WindowInput::State {
            minimized: window.is_minimized(),
            maximized: window.is_maximized(),
        }
    }
}

/// What a [`WinitInput`] knows of its window, as last reported: [`WinitInput::state`] reads it,
/// [`WinitInput::set_state`] replaces it without reporting anything.
///
/// ```
/// use lumina::event::Modifiers;
/// use lumina::platform::{WindowState, WinitInput};
///
/// let mut input = WinitInput::new();
/// assert_eq!(input.state(), WindowState::default());
/// assert_eq!(input.state().scale_factor, 1.0);
/// // A scale factor learned elsewhere, without a WindowContentScaleChanged event:
/// input.set_state(WindowState { scale_factor: 2.0, ..input.state() });
/// assert_eq!(input.state().scale_factor, 2.0);
/// assert_eq!(input.state().modifiers, Modifiers::NONE);
/// assert!(!input.state().cursor_inside);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowState {
    /// The modifiers and lock states held now.
    pub modifiers: Modifiers,
    /// The last cursor position, in logical window coordinates.
    pub cursor_position: Vec2,
    /// Whether the cursor is inside the window.
    pub cursor_inside: bool,
    /// The window's scale factor (physical pixels per logical unit).
    pub scale_factor: f64,
    /// Whether the window was minimized when last reported.
    pub minimized: bool,
    /// Whether the window was maximized when last reported (a minimized window keeps the
    /// maximized state it will be restored to).
    pub maximized: bool,
}

impl WindowState {
    /// Scale factor 1, no modifier held, the cursor outside, neither minimized nor maximized.
    const INITIAL: WindowState = WindowState {
        modifiers: Modifiers::NONE,
        cursor_position: Vec2::new(0.0, 0.0),
        cursor_inside: false,
        scale_factor: 1.0,
        minimized: false,
        maximized: false,
    };
}

impl Default for WindowState {
    /// Scale factor 1, no modifier held, the cursor outside at (0, 0), neither minimized nor
    /// maximized.
    fn default() -> Self {
        Self::INITIAL
    }
}

impl From<&Window> for WindowState {
    /// `window`'s scale factor and its minimized / maximized state; the rest as
    /// [`WindowState::default`].
    fn from(window: &Window) -> Self {
        WindowState {
            scale_factor: window.scale_factor(),
            minimized: window.is_minimized().unwrap_or(false),
            maximized: window.is_maximized(),
            ..Self::INITIAL
        }
    }
}

/// How a [`WinitInput`] translates: [`WinitInput::settings`], set at any time.
///
/// ```
/// use lumina::platform::{DEFAULT_PIXELS_PER_LINE, WinitInput};
///
/// let mut input = WinitInput::new();
/// assert_eq!(input.settings.pixels_per_line, DEFAULT_PIXELS_PER_LINE);
/// input.settings.pixels_per_line = 40.0; // a touchpad's 40 pixels scroll one line
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WinitSettings {
    /// How many physical pixels of a touchpad scroll make one line (default
    /// [`DEFAULT_PIXELS_PER_LINE`]); see [`scroll_lines`].
    pub pixels_per_line: f32,
}

impl WinitSettings {
    const INITIAL: WinitSettings = WinitSettings {
        pixels_per_line: DEFAULT_PIXELS_PER_LINE,
    };
}

impl Default for WinitSettings {
    /// [`DEFAULT_PIXELS_PER_LINE`].
    fn default() -> Self {
        Self::INITIAL
    }
}

/// Turns one window's winit [`WindowEvent`]s into lumina events and dispatches them through an
/// [`EventProcessor`] (rule PL1), so they reach the viewport registry and the layers below it.
///
/// It owns what the translation needs and winit's events do not carry ([`WindowState`]): the
/// modifiers held and the lock states, the last cursor position (for the position of clicks,
/// scrolls and drops, and the delta of moves), the scale factor, and whether the window is
/// minimized or maximized; and, privately, the count of a held key's repeats.
///
/// [`window_event`](Self::window_event) takes a whole `WindowEvent`, makes it a
/// [`WindowInput`] and hands that to [`dispatch`](Self::dispatch), which does the work;
/// `dispatch` is usable (and testable) with what winit's events carry, without an event:
///
/// | winit | [`WindowInput`] | lumina |
/// |---|---|---|
/// | `KeyboardInput` | `Key` | [`KeyPressedEvent`] (with `repeat`), [`KeyRepeatEvent`] for repeats, [`KeyReleasedEvent`]; its text as [`CharInputEvent`] (not with Control or Alt held) + [`CharInputModsEvent`] per character |
/// | `Ime::Commit` | `Text` | [`CharInputEvent`] + [`CharInputModsEvent`] per character |
/// | `ModifiersChanged` | `ModifiersChanged` | nothing: the modifiers of the next events |
/// | `MouseInput` | `MouseButton` | [`MouseButtonPressedEvent`] / [`MouseButtonReleasedEvent`] at the cursor |
/// | `CursorMoved` | `CursorMoved` | [`MouseMovedEvent`] with the delta since the last move |
/// | `MouseWheel` | `MouseWheel` | [`MouseScrolledEvent`], both axes, in lines (see [`scroll_lines`]) |
/// | `CursorEntered` / `CursorLeft` | `CursorEntered` / `CursorLeft` | [`MouseEnteredEvent`] (at the first position reported after it) / [`MouseLeftEvent`] |
/// | `Resized` | `Resized` | [`WindowResizeEvent`] (logical size) and [`FramebufferResizeEvent`] (pixels) |
/// | `Moved` | `Moved` | [`WindowMovedEvent`] (logical position) |
/// | `Focused` | `Focused` | [`WindowFocusEvent`] / [`WindowLostFocusEvent`] |
/// | `CloseRequested` | `CloseRequested` | [`WindowCloseEvent`] |
/// | `ScaleFactorChanged` | `ScaleFactorChanged` | [`WindowContentScaleChangedEvent`] |
/// | `DroppedFile` | `DroppedFile` | [`FileDropEvent`] at the cursor (winit reports one file per event) |
/// | `RedrawRequested` | `RedrawRequested` | [`WindowRefreshEvent`] |
/// | none: the window, asked | `State` | [`WindowMinimizedEvent`], [`WindowMaximizedEvent`], [`WindowRestoredEvent`] on each change |
///
/// winit 0.30 has no minimize / maximize / restore events: after `Resized`, `Moved` and
/// `Occluded`, dispatch `WindowInput::from(&window)`, which asks the window. Positions and sizes
/// are logical (divided by the scale factor), like GLFW's screen coordinates; the framebuffer
/// size is in pixels. The lock states (Caps Lock, Num Lock) are not reported by winit 0.30: they
/// are taken as off at start and toggled by their keys.
///
/// Make one per window with `WinitInput::from(&window)`, which starts from the window's scale
/// factor and state; [`new`](Self::new) starts from [`WindowState::default`].
///
/// ```no_run
/// use lumina::event::EventProcessor;
/// use lumina::platform::winit::event::WindowEvent;
/// use lumina::platform::winit::window::Window;
/// use lumina::platform::{WindowInput, WinitInput};
///
/// fn on_window_event(
///     input: &mut WinitInput,
///     processor: &EventProcessor,
///     window: &Window,
///     event: &WindowEvent,
/// ) {
///     input.window_event(processor, event); // translated and dispatched
///     if matches!(
///         event,
///         WindowEvent::Resized(_) | WindowEvent::Moved(_) | WindowEvent::Occluded(_)
///     ) {
///         // Minimized, maximized or restored: winit does not say, the window does.
///         input.dispatch(processor, WindowInput::from(window));
///     }
/// }
/// # let _ = on_window_event;
/// ```
#[derive(Debug, Clone)]
pub struct WinitInput {
    /// How the translation works; change it at any time.
    pub settings: WinitSettings,
    state: WindowState,
    entering: bool,
    repeat: Option<(Key, u32)>,
}

impl Default for WinitInput {
    fn default() -> Self {
        Self::new()
    }
}

impl From<&Window> for WinitInput {
    /// A translator for `window`: its scale factor and its minimized / maximized state
    /// ([`WindowState::from`]), the default [`WinitSettings`].
    fn from(window: &Window) -> Self {
        WinitInput {
            state: WindowState::from(window),
            ..Self::new()
        }
    }
}

impl WinitInput {
    /// A translator starting from [`WindowState::default`] (scale factor 1, no modifier held,
    /// the cursor outside) and the default [`WinitSettings`]. For a real window, prefer
    /// `WinitInput::from(&window)`: it starts with the window's scale factor.
    pub const fn new() -> Self {
        WinitInput {
            settings: WinitSettings::INITIAL,
            state: WindowState::INITIAL,
            entering: false,
            repeat: None,
        }
    }

    /// What the translator knows of its window now (modifiers, cursor, scale factor, minimized
    /// and maximized), as last reported.
    pub fn state(&self) -> WindowState {
        self.state
    }

    /// Replaces what the translator knows of its window, dispatching nothing: e.g. a scale
    /// factor learned elsewhere, `input.set_state(WindowState { scale_factor, ..input.state() })`.
    /// What follows is translated against it (a cursor position set here is where the next
    /// move's delta starts).
    pub fn set_state(&mut self, state: WindowState) {
        self.state = state;
    }

    /// Translates and dispatches one winit window event (through [`WindowInput::try_from`] and
    /// [`dispatch`](Self::dispatch)); `true` if a handler consumed what it became. Events with
    /// no lumina counterpart (touch, gestures, theme, ...) dispatch nothing.
    pub fn window_event(&mut self, processor: &EventProcessor, event: &WindowEvent) -> bool {
        WindowInput::try_from(event).is_ok_and(|input| self.dispatch(processor, input))
    }

    /// Translates what the window reported into lumina events (see the table on [`WinitInput`]
    /// and each [`WindowInput`] variant), updates the [`state`](Self::state), and dispatches the
    /// events through `processor`; `true` if a handler consumed any of them.
    pub fn dispatch(&mut self, processor: &EventProcessor, input: WindowInput<'_>) -> bool {
        match input {
            WindowInput::Key {
                key,
                state,
                repeat,
                text,
            } => self.key(processor, key, state, repeat, text.unwrap_or("")),
            WindowInput::ModifiersChanged(state) => {
                let locks = self.state.modifiers & (Modifiers::CAPS_LOCK | Modifiers::NUM_LOCK);
                self.state.modifiers = Modifiers::from(state) | locks;
                false
            }
            WindowInput::Text(text) => self.text(processor, text),
            WindowInput::CursorMoved(position) => self.cursor_moved(processor, position),
            WindowInput::CursorEntered => {
                self.entering = true;
                false
            }
            WindowInput::CursorLeft => {
                self.entering = false;
                self.state.cursor_inside = false;
                processor.dispatch(MouseLeftEvent)
            }
            WindowInput::MouseButton { state, button } => {
                self.mouse_button(processor, state, MouseButton::from(button))
            }
            WindowInput::MouseWheel(delta) => {
                let offset = scroll_lines(delta, self.settings.pixels_per_line);
                processor.dispatch(MouseScrolledEvent::new(offset, self.state.cursor_position))
            }
            WindowInput::Resized(size) => self.resized(processor, size),
            WindowInput::Moved(position) => {
                let scale = self.state.scale_factor;
                let position = IVec2::new(
                    (f64::from(position.x) / scale).round() as i32,
                    (f64::from(position.y) / scale).round() as i32,
                );
                processor.dispatch(WindowMovedEvent::new(position))
            }
            WindowInput::Focused(true) => processor.dispatch(WindowFocusEvent),
            WindowInput::Focused(false) => {
                // Keys released while unfocused are never reported: no repeat outlives the focus.
                self.repeat = None;
                processor.dispatch(WindowLostFocusEvent)
            }
            WindowInput::CloseRequested => processor.dispatch(WindowCloseEvent),
            WindowInput::ScaleFactorChanged(scale_factor) => {
                self.state.scale_factor = scale_factor;
                let scale = scale_factor as f32;
                processor.dispatch(WindowContentScaleChangedEvent::new(Vec2::new(scale, scale)))
            }
            WindowInput::DroppedFile(path) => processor.dispatch(FileDropEvent::new(
                vec![path.to_path_buf()],
                self.state.cursor_position,
            )),
            WindowInput::RedrawRequested => processor.dispatch(WindowRefreshEvent),
            WindowInput::State {
                minimized,
                maximized,
            } => {
                let minimized = minimized.unwrap_or(self.state.minimized);
                self.window_state(processor, minimized, maximized)
            }
        }
    }

    /// [`WindowInput::Key`], its text included.
    fn key(
        &mut self,
        processor: &EventProcessor,
        physical_key: PhysicalKey,
        state: ElementState,
        repeat: bool,
        text: &str,
    ) -> bool {
        let key = Key::from(physical_key);
        let modifiers = self.state.modifiers;
        match state {
            ElementState::Pressed if repeat => {
                let count = match self.repeat {
                    Some((held, count)) if held == key => count + 1,
                    _ => 1,
                };
                self.repeat = Some((key, count));
                let mut consumed = processor.dispatch(KeyPressedEvent {
                    repeat: true,
                    ..KeyPressedEvent::new(key, modifiers)
                });
                consumed |= processor.dispatch(KeyRepeatEvent::new(key, modifiers, count));
                consumed | self.text(processor, text)
            }
            ElementState::Pressed => {
                self.repeat = None;
                match key {
                    Key::CapsLock => self.toggle(Modifiers::CAPS_LOCK),
                    Key::NumLock => self.toggle(Modifiers::NUM_LOCK),
                    _ => {}
                }
                let consumed = processor.dispatch(KeyPressedEvent::new(key, modifiers));
                consumed | self.text(processor, text)
            }
            ElementState::Released => {
                if self.repeat.is_some_and(|(held, _)| held == key) {
                    self.repeat = None;
                }
                processor.dispatch(KeyReleasedEvent::new(key, modifiers))
            }
        }
    }

    /// [`WindowInput::Text`], and the text of a key press.
    fn text(&mut self, processor: &EventProcessor, text: &str) -> bool {
        let modifiers = self.state.modifiers;
        // As GLFW: with Control or Alt held the text is a shortcut, not typing, so only the
        // event with the modifiers is sent.
        let plain = (modifiers & (Modifiers::CONTROL | Modifiers::ALT)).is_empty();
        let mut consumed = false;
        for code_point in text.chars().filter(|c| !c.is_control()) {
            if plain {
                consumed |= processor.dispatch(CharInputEvent::new(code_point));
            }
            consumed |= processor.dispatch(CharInputModsEvent::new(code_point, modifiers));
        }
        consumed
    }

    /// [`WindowInput::CursorMoved`].
    fn cursor_moved(
        &mut self,
        processor: &EventProcessor,
        position: PhysicalPosition<f64>,
    ) -> bool {
        let scale = self.state.scale_factor;
        let position = Vec2::new((position.x / scale) as f32, (position.y / scale) as f32);
        let mut consumed = false;
        let delta = if self.entering || !self.state.cursor_inside {
            self.entering = false;
            self.state.cursor_inside = true;
            consumed |= processor.dispatch(MouseEnteredEvent::new(position));
            Vec2::default()
        } else {
            let last = self.state.cursor_position;
            Vec2::new(position.x - last.x, position.y - last.y)
        };
        self.state.cursor_position = position;
        consumed | processor.dispatch(MouseMovedEvent::new(position, delta))
    }

    /// [`WindowInput::MouseButton`].
    fn mouse_button(
        &mut self,
        processor: &EventProcessor,
        state: ElementState,
        button: MouseButton,
    ) -> bool {
        let (modifiers, at) = (self.state.modifiers, self.state.cursor_position);
        match state {
            ElementState::Pressed => {
                processor.dispatch(MouseButtonPressedEvent::new(button, modifiers, at))
            }
            ElementState::Released => {
                processor.dispatch(MouseButtonReleasedEvent::new(button, modifiers, at))
            }
        }
    }

    /// [`WindowInput::Resized`].
    fn resized(&mut self, processor: &EventProcessor, size: PhysicalSize<u32>) -> bool {
        let scale = self.state.scale_factor;
        let logical = UVec2::new(
            (f64::from(size.width) / scale).round() as u32,
            (f64::from(size.height) / scale).round() as u32,
        );
        let consumed = processor.dispatch(WindowResizeEvent::new(logical));
        let framebuffer = UVec2::new(size.width, size.height);
        consumed | processor.dispatch(FramebufferResizeEvent::new(framebuffer))
    }

    /// [`WindowInput::State`], with the platform's unknown already resolved.
    fn window_state(
        &mut self,
        processor: &EventProcessor,
        minimized: bool,
        maximized: bool,
    ) -> bool {
        let (was_minimized, was_maximized) = (self.state.minimized, self.state.maximized);
        self.state.minimized = minimized;
        let mut consumed = false;
        if minimized {
            if !was_minimized {
                consumed |= processor.dispatch(WindowMinimizedEvent);
            }
            // A minimized window keeps the maximized state it will be restored to.
            return consumed;
        }
        self.state.maximized = maximized;
        if was_minimized {
            consumed |= processor.dispatch(WindowRestoredEvent);
            if maximized && !was_maximized {
                consumed |= processor.dispatch(WindowMaximizedEvent);
            }
        } else if maximized && !was_maximized {
            consumed |= processor.dispatch(WindowMaximizedEvent);
        } else if !maximized && was_maximized {
            consumed |= processor.dispatch(WindowRestoredEvent);
        }
        consumed
    }

    fn toggle(&mut self, lock: Modifiers) {
        let modifiers = &mut self.state.modifiers;
        if modifiers.contains(lock) {
            *modifiers -= lock;
        } else {
            *modifiers |= lock;
        }
    }
}
