//! [`WinitInput`]: winit window events to lumina events, dispatched through an
//! [`EventProcessor`] (rule PL1).

use std::path::PathBuf;

use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, Ime, MouseButton as WinitButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{ModifiersState, PhysicalKey};
use winit::window::Window;

use super::converters::{modifiers_from_winit, mouse_button_from_winit, scroll_lines};
use super::keys::key_from_physical;
use crate::event::{
    CharInputEvent, CharInputModsEvent, EventProcessor, FileDropEvent, FramebufferResizeEvent,
    IVec2, Key, KeyPressedEvent, KeyReleasedEvent, KeyRepeatEvent, Modifiers,
    MouseButtonPressedEvent, MouseButtonReleasedEvent, MouseEnteredEvent, MouseLeftEvent,
    MouseMovedEvent, MouseScrolledEvent, UVec2, Vec2, WindowCloseEvent,
    WindowContentScaleChangedEvent, WindowFocusEvent, WindowLostFocusEvent, WindowMaximizedEvent,
    WindowMinimizedEvent, WindowMovedEvent, WindowRefreshEvent, WindowResizeEvent,
    WindowRestoredEvent,
};

/// How many physical pixels of a touchpad's scroll make one line, unless set otherwise.
pub const DEFAULT_PIXELS_PER_LINE: f32 = 20.0;

/// Turns one window's winit [`WindowEvent`]s into lumina events and dispatches them through an
/// [`EventProcessor`] (rule PL1), so they reach the viewport registry and the layers below it.
///
/// It owns what the translation needs and winit's events do not carry: the modifiers held and
/// the lock states, the last cursor position (for the position of clicks, scrolls and drops, and
/// the delta of moves), the scale factor, the count of a held key's repeats, and whether the
/// window is minimized or maximized.
///
/// [`window_event`](Self::window_event) takes a whole `WindowEvent`; one method per kind of event
/// does the work, so each is usable (and testable) from the parts winit exposes publicly:
///
/// | winit | lumina |
/// |---|---|
/// | `KeyboardInput` | [`KeyPressedEvent`] (with `repeat`), [`KeyRepeatEvent`] for repeats, [`KeyReleasedEvent`]; its text as [`CharInputEvent`] (not with Control or Alt held) + [`CharInputModsEvent`] per character |
/// | `Ime::Commit` | [`CharInputEvent`] + [`CharInputModsEvent`] per character |
/// | `ModifiersChanged` | nothing: the modifiers of the next events |
/// | `MouseInput` | [`MouseButtonPressedEvent`] / [`MouseButtonReleasedEvent`] at the cursor |
/// | `CursorMoved` | [`MouseMovedEvent`] with the delta since the last move |
/// | `MouseWheel` | [`MouseScrolledEvent`], both axes, in lines (see [`scroll_lines`](super::scroll_lines)) |
/// | `CursorEntered` / `CursorLeft` | [`MouseEnteredEvent`] (at the first position reported after it) / [`MouseLeftEvent`] |
/// | `Resized` | [`WindowResizeEvent`] (logical size) and [`FramebufferResizeEvent`] (pixels) |
/// | `Moved` | [`WindowMovedEvent`] (logical position) |
/// | `Focused` | [`WindowFocusEvent`] / [`WindowLostFocusEvent`] |
/// | `CloseRequested` | [`WindowCloseEvent`] |
/// | `ScaleFactorChanged` | [`WindowContentScaleChangedEvent`] |
/// | `DroppedFile` | [`FileDropEvent`] at the cursor (winit reports one file per event) |
/// | `RedrawRequested` | [`WindowRefreshEvent`] |
///
/// winit 0.30 has no minimize / maximize / restore events: call
/// [`sync_window_state`](Self::sync_window_state) after `Resized`, `Moved` and `Occluded`, and it
/// asks the window and reports [`WindowMinimizedEvent`], [`WindowMaximizedEvent`] and
/// [`WindowRestoredEvent`] on each change. Positions and sizes are logical (divided by the scale
/// factor), like GLFW's screen coordinates; the framebuffer size is in pixels. The lock states
/// (Caps Lock, Num Lock) are not reported by winit 0.30: they are taken as off at start and
/// toggled by their keys.
///
/// Every method returns whether a handler consumed what it dispatched.
///
/// ```
/// use lumina::event::{Event, EventProcessor, InputLayer, KeyPressedEvent, Key, Modifiers};
/// use lumina::platform::WinitInput;
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use winit::event::ElementState;
/// use winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};
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
/// input.modifiers_changed(ModifiersState::CONTROL);
/// let key = PhysicalKey::Code(KeyCode::KeyS);
/// input.keyboard_input(&processor, key, ElementState::Pressed, false, Some("\u{13}"));
/// assert_eq!(*pressed.borrow(), [KeyPressedEvent::new(Key::S, Modifiers::CONTROL)]);
/// ```
#[derive(Debug, Clone)]
pub struct WinitInput {
    modifiers: Modifiers,
    cursor: Vec2,
    cursor_inside: bool,
    entering: bool,
    scale_factor: f64,
    pixels_per_line: f32,
    repeat: Option<(Key, u32)>,
    minimized: bool,
    maximized: bool,
}

impl Default for WinitInput {
    fn default() -> Self {
        Self::new()
    }
}

impl WinitInput {
    /// A translator for a window with scale factor 1, no modifier held, the cursor outside.
    pub const fn new() -> Self {
        WinitInput {
            modifiers: Modifiers::NONE,
            cursor: Vec2::new(0.0, 0.0),
            cursor_inside: false,
            entering: false,
            scale_factor: 1.0,
            pixels_per_line: DEFAULT_PIXELS_PER_LINE,
            repeat: None,
            minimized: false,
            maximized: false,
        }
    }

    /// A translator for `window`: its scale factor and its minimized / maximized state.
    pub fn for_window(window: &Window) -> Self {
        WinitInput {
            scale_factor: window.scale_factor(),
            minimized: window.is_minimized().unwrap_or(false),
            maximized: window.is_maximized(),
            ..Self::new()
        }
    }

    /// The modifiers and lock states held now.
    pub fn modifiers(&self) -> Modifiers {
        self.modifiers
    }

    /// The last cursor position, in logical window coordinates.
    pub fn cursor_position(&self) -> Vec2 {
        self.cursor
    }

    /// Whether the cursor is inside the window.
    pub fn is_cursor_inside(&self) -> bool {
        self.cursor_inside
    }

    /// The window's scale factor (physical pixels per logical unit).
    pub fn scale_factor(&self) -> f64 {
        self.scale_factor
    }

    /// Sets the scale factor without reporting a change.
    pub fn set_scale_factor(&mut self, scale_factor: f64) {
        self.scale_factor = scale_factor;
    }

    /// How many physical pixels of a touchpad scroll make one line.
    pub fn pixels_per_line(&self) -> f32 {
        self.pixels_per_line
    }

    /// Sets how many physical pixels of a touchpad scroll make one line (default
    /// [`DEFAULT_PIXELS_PER_LINE`]).
    pub fn set_pixels_per_line(&mut self, pixels: f32) {
        self.pixels_per_line = pixels;
    }

    /// Whether the window was minimized when last reported.
    pub fn is_minimized(&self) -> bool {
        self.minimized
    }

    /// Whether the window was maximized when last reported.
    pub fn is_maximized(&self) -> bool {
        self.maximized
    }

    /// Translates and dispatches one window event; `true` if a handler consumed what it became.
    /// Events with no lumina counterpart (touch, gestures, theme, ...) dispatch nothing.
    pub fn window_event(&mut self, processor: &EventProcessor, event: &WindowEvent) -> bool {
        match event {
            WindowEvent::KeyboardInput { event, .. } => self.keyboard_input(
                processor,
                event.physical_key,
                event.state,
                event.repeat,
                event.text.as_deref(),
            ),
            WindowEvent::ModifiersChanged(modifiers) => {
                self.modifiers_changed(modifiers.state());
                false
            }
            WindowEvent::Ime(Ime::Commit(text)) => self.text_input(processor, text),
            WindowEvent::CursorMoved { position, .. } => self.cursor_moved(processor, *position),
            WindowEvent::CursorEntered { .. } => {
                self.cursor_entered();
                false
            }
            WindowEvent::CursorLeft { .. } => self.cursor_left(processor),
            WindowEvent::MouseInput { state, button, .. } => {
                self.mouse_input(processor, *state, *button)
            }
            WindowEvent::MouseWheel { delta, .. } => self.mouse_wheel(processor, *delta),
            WindowEvent::Resized(size) => self.resized(processor, *size),
            WindowEvent::Moved(position) => self.moved(processor, *position),
            WindowEvent::Focused(focused) => self.focused(processor, *focused),
            WindowEvent::CloseRequested => processor.dispatch(WindowCloseEvent),
            WindowEvent::ScaleFactorChanged { scale_factor, .. } => {
                self.scale_factor_changed(processor, *scale_factor)
            }
            WindowEvent::DroppedFile(path) => self.dropped_file(processor, path.clone()),
            WindowEvent::RedrawRequested => processor.dispatch(WindowRefreshEvent),
            _ => false,
        }
    }

    /// A key went down or up. `repeat` is winit's auto-repeat flag; `text` the text the press
    /// produced, dispatched as character events after the key (control characters, such as
    /// Enter's `"\r"` or Ctrl+S's `"\u{13}"`, are not text and are left out).
    pub fn keyboard_input(
        &mut self,
        processor: &EventProcessor,
        physical_key: PhysicalKey,
        state: ElementState,
        repeat: bool,
        text: Option<&str>,
    ) -> bool {
        let key = key_from_physical(physical_key);
        let modifiers = self.modifiers;
        match state {
            ElementState::Pressed if repeat => {
                let count = match self.repeat {
                    Some((held, count)) if held == key => count + 1,
                    _ => 1,
                };
                self.repeat = Some((key, count));
                let mut consumed =
                    processor.dispatch(KeyPressedEvent::new(key, modifiers).repeated());
                consumed |= processor.dispatch(KeyRepeatEvent::new(key, modifiers, count));
                consumed | self.text_input(processor, text.unwrap_or(""))
            }
            ElementState::Pressed => {
                self.repeat = None;
                match key {
                    Key::CapsLock => self.toggle(Modifiers::CAPS_LOCK),
                    Key::NumLock => self.toggle(Modifiers::NUM_LOCK),
                    _ => {}
                }
                let consumed = processor.dispatch(KeyPressedEvent::new(key, modifiers));
                consumed | self.text_input(processor, text.unwrap_or(""))
            }
            ElementState::Released => {
                if self.repeat.is_some_and(|(held, _)| held == key) {
                    self.repeat = None;
                }
                processor.dispatch(KeyReleasedEvent::new(key, modifiers))
            }
        }
    }

    /// The held modifiers changed (winit reports them apart from the keys). Dispatches nothing:
    /// the next key, character and button events carry them. Lock states are kept.
    pub fn modifiers_changed(&mut self, state: ModifiersState) {
        let locks = self.modifiers & (Modifiers::CAPS_LOCK | Modifiers::NUM_LOCK);
        self.modifiers = modifiers_from_winit(state) | locks;
    }

    /// Text was typed: per character, a [`CharInputEvent`] (unless Control or Alt is held, as
    /// in GLFW) and a [`CharInputModsEvent`]; control characters are left out.
    pub fn text_input(&mut self, processor: &EventProcessor, text: &str) -> bool {
        // As GLFW: with Control or Alt held the text is a shortcut, not typing, so only the
        // event with the modifiers is sent.
        let plain = !self
            .modifiers
            .intersects(Modifiers::CONTROL | Modifiers::ALT);
        let mut consumed = false;
        for code_point in text.chars().filter(|c| !c.is_control()) {
            if plain {
                consumed |= processor.dispatch(CharInputEvent::new(code_point));
            }
            consumed |= processor.dispatch(CharInputModsEvent::new(code_point, self.modifiers));
        }
        consumed
    }

    /// The cursor moved to `position` (physical pixels). The delta is from the previous position
    /// inside the window (zero for the first move after entering). The first move after
    /// [`cursor_entered`](Self::cursor_entered) reports the [`MouseEnteredEvent`] first, at this
    /// position.
    pub fn cursor_moved(
        &mut self,
        processor: &EventProcessor,
        position: PhysicalPosition<f64>,
    ) -> bool {
        let position = self.logical(position.x, position.y);
        let mut consumed = false;
        let delta = if self.entering || !self.cursor_inside {
            self.entering = false;
            self.cursor_inside = true;
            consumed |= processor.dispatch(MouseEnteredEvent::new(position));
            Vec2::default()
        } else {
            Vec2::new(position.x - self.cursor.x, position.y - self.cursor.y)
        };
        self.cursor = position;
        consumed | processor.dispatch(MouseMovedEvent::new(position, delta))
    }

    /// The cursor entered the window. winit gives no position here: the
    /// [`MouseEnteredEvent`] is dispatched with the next [`cursor_moved`](Self::cursor_moved).
    pub fn cursor_entered(&mut self) {
        self.entering = true;
    }

    /// The cursor left the window: a [`MouseLeftEvent`].
    pub fn cursor_left(&mut self, processor: &EventProcessor) -> bool {
        self.entering = false;
        self.cursor_inside = false;
        processor.dispatch(MouseLeftEvent)
    }

    /// A mouse button went down or up, at the last cursor position.
    pub fn mouse_input(
        &mut self,
        processor: &EventProcessor,
        state: ElementState,
        button: WinitButton,
    ) -> bool {
        let button = mouse_button_from_winit(button);
        match state {
            ElementState::Pressed => processor.dispatch(MouseButtonPressedEvent::new(
                button,
                self.modifiers,
                self.cursor,
            )),
            ElementState::Released => processor.dispatch(MouseButtonReleasedEvent::new(
                button,
                self.modifiers,
                self.cursor,
            )),
        }
    }

    /// A wheel or touchpad scrolled, at the last cursor position; both axes, in lines.
    pub fn mouse_wheel(&mut self, processor: &EventProcessor, delta: MouseScrollDelta) -> bool {
        let offset = scroll_lines(delta, self.pixels_per_line);
        processor.dispatch(MouseScrolledEvent::new(offset, self.cursor))
    }

    /// The window's client area is now `size` physical pixels: a [`WindowResizeEvent`] with the
    /// logical size, then a [`FramebufferResizeEvent`] with the pixels.
    pub fn resized(&mut self, processor: &EventProcessor, size: PhysicalSize<u32>) -> bool {
        let logical = UVec2::new(
            (f64::from(size.width) / self.scale_factor).round() as u32,
            (f64::from(size.height) / self.scale_factor).round() as u32,
        );
        let consumed = processor.dispatch(WindowResizeEvent::new(logical));
        let framebuffer = UVec2::new(size.width, size.height);
        consumed | processor.dispatch(FramebufferResizeEvent::new(framebuffer))
    }

    /// The window moved to `position` (physical pixels on the desktop): a [`WindowMovedEvent`]
    /// with the logical position.
    pub fn moved(&mut self, processor: &EventProcessor, position: PhysicalPosition<i32>) -> bool {
        let position = IVec2::new(
            (f64::from(position.x) / self.scale_factor).round() as i32,
            (f64::from(position.y) / self.scale_factor).round() as i32,
        );
        processor.dispatch(WindowMovedEvent::new(position))
    }

    /// The window gained or lost the input focus.
    pub fn focused(&mut self, processor: &EventProcessor, focused: bool) -> bool {
        if focused {
            processor.dispatch(WindowFocusEvent)
        } else {
            // Keys released while unfocused are never reported: no repeat outlives the focus.
            self.repeat = None;
            processor.dispatch(WindowLostFocusEvent)
        }
    }

    /// The scale factor changed (e.g. the window moved to another monitor): a
    /// [`WindowContentScaleChangedEvent`] with it on both axes.
    pub fn scale_factor_changed(&mut self, processor: &EventProcessor, scale_factor: f64) -> bool {
        self.scale_factor = scale_factor;
        let scale = scale_factor as f32;
        processor.dispatch(WindowContentScaleChangedEvent::new(Vec2::new(scale, scale)))
    }

    /// A file was dropped on the window: a [`FileDropEvent`] at the last cursor position.
    pub fn dropped_file(&mut self, processor: &EventProcessor, path: PathBuf) -> bool {
        processor.dispatch(FileDropEvent::new(vec![path], self.cursor))
    }

    /// The window is now `minimized` and / or `maximized`: reports each change as
    /// [`WindowMinimizedEvent`], [`WindowMaximizedEvent`] or [`WindowRestoredEvent`] (restored
    /// from minimized, or from maximized to normal). Nothing if nothing changed.
    pub fn window_state(
        &mut self,
        processor: &EventProcessor,
        minimized: bool,
        maximized: bool,
    ) -> bool {
        let (was_minimized, was_maximized) = (self.minimized, self.maximized);
        self.minimized = minimized;
        let mut consumed = false;
        if minimized {
            if !was_minimized {
                consumed |= processor.dispatch(WindowMinimizedEvent);
            }
            // A minimized window keeps the maximized state it will be restored to.
            return consumed;
        }
        self.maximized = maximized;
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

    /// Asks `window` whether it is minimized and maximized and reports the changes (see
    /// [`window_state`](Self::window_state)). A platform that cannot tell whether the window is
    /// minimized keeps the last state.
    pub fn sync_window_state(&mut self, processor: &EventProcessor, window: &Window) -> bool {
        let minimized = window.is_minimized().unwrap_or(self.minimized);
        self.window_state(processor, minimized, window.is_maximized())
    }

    fn toggle(&mut self, lock: Modifiers) {
        if self.modifiers.contains(lock) {
            self.modifiers.remove(lock);
        } else {
            self.modifiers.insert(lock);
        }
    }

    fn logical(&self, x: f64, y: f64) -> Vec2 {
        Vec2::new(
            (x / self.scale_factor) as f32,
            (y / self.scale_factor) as f32,
        )
    }
}
