//! A real window (X11): an editor with its chrome (a toolbar and an outliner panel) around a game
//! viewport. winit's events go through [`WinitInput`] into one [`EventProcessor`]: the viewport
//! registry routes input to the focused viewport first, the editor chrome gets what it leaves,
//! and a window layer takes the window events (rule PL4).
//!
//! Every dispatched event prints one trace line, `trace <event> <fields> -> <layer>`, naming the
//! layer that consumed it (`viewport`, `chrome`, `window`, or `nobody`); redraws are not traced.
//! The region of the layer that consumed the last input is drawn brighter, and the focused
//! viewport has a yellow frame. Runs until the window is closed or Escape is pressed (it says so
//! when it starts).
//!
//! Run with `cargo run --example window --features winit`. Without a display it says so on stderr
//! and exits with status 2. `tests/window_example.rs` drives it under Xvfb with xdotool.

use std::cell::{Cell, RefCell};
use std::num::NonZeroU32;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use lumina::event::{
    CharInputEvent, CharInputModsEvent, Event, EventCategory, EventHandler, EventProcessor,
    FileDropEvent, FramebufferResizeEvent, InputLayer, InputViewportRegistry, Key, KeyPressedEvent,
    KeyReleasedEvent, KeyRepeatEvent, Modifiers, MouseButtonPressedEvent, MouseButtonReleasedEvent,
    MouseEnteredEvent, MouseMovedEvent, MouseScrolledEvent, Rect, Vec2, ViewportId,
    WindowCloseEvent, WindowMovedEvent, WindowRefreshEvent, WindowResizeEvent,
};
use lumina::platform::winit;
use lumina::platform::{WindowInput, WinitInput};
use winit::application::ApplicationHandler;
use winit::dpi::LogicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::raw_window_handle::{HasWindowHandle, RawWindowHandle};
use winit::window::{Window, WindowId};

/// The window's title (the test finds nothing by it, but a person does).
const TITLE: &str = "lumina window";
/// Height of the toolbar along the top, in logical units.
const TOOLBAR_HEIGHT: f32 = 40.0;
/// Width of the outliner panel on the left, below the toolbar.
const PANEL_WIDTH: f32 = 160.0;
/// The longest the event loop sleeps: a game's frame tick. Waking now and then also picks up X
/// events that the blitter's requests read from the shared connection while winit was not
/// looking, which would otherwise wait for the next event to be seen.
const TICK: Duration = Duration::from_millis(50);

/// Which layer consumed an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layer {
    Viewport,
    Chrome,
    Window,
    Nobody,
}

impl Layer {
    fn name(self) -> &'static str {
        match self {
            Layer::Viewport => "viewport",
            Layer::Chrome => "chrome",
            Layer::Window => "window",
            Layer::Nobody => "nobody",
        }
    }
}

/// What the handlers share with the window: who consumed the last input, and what the window
/// layer asked for.
#[derive(Default)]
struct Shared {
    last_input: Cell<Option<Layer>>,
    close: Cell<bool>,
    layout_changed: Cell<bool>,
    size: Cell<(f32, f32)>,
}

impl Shared {
    /// Prints the trace line of `event` consumed by `layer`, and remembers the layer if the
    /// event is input.
    fn consumed(&self, event: &dyn Event, layer: Layer) {
        if event.is::<WindowRefreshEvent>() {
            return;
        }
        println!("trace {} -> {}", describe(event), layer.name());
        if event.is_in_category(EventCategory::INPUT) {
            self.last_input.set(Some(layer));
        }
    }
}

/// An event's name and the fields the trace shows.
fn describe(event: &dyn Event) -> String {
    let name = event.name();
    let fields = if let Some(e) = event.downcast_ref::<KeyPressedEvent>() {
        format!(
            "key={} mods={} repeat={}",
            e.key,
            mods(e.modifiers),
            e.repeat
        )
    } else if let Some(e) = event.downcast_ref::<KeyReleasedEvent>() {
        format!("key={} mods={}", e.key, mods(e.modifiers))
    } else if let Some(e) = event.downcast_ref::<KeyRepeatEvent>() {
        format!("key={} count={}", e.key, e.repeat_count)
    } else if let Some(e) = event.downcast_ref::<CharInputEvent>() {
        format!("char={:?}", e.code_point)
    } else if let Some(e) = event.downcast_ref::<CharInputModsEvent>() {
        format!("char={:?} mods={}", e.code_point, mods(e.modifiers))
    } else if let Some(e) = event.downcast_ref::<MouseButtonPressedEvent>() {
        format!("button={:?} at={}", e.button, point(e.position))
    } else if let Some(e) = event.downcast_ref::<MouseButtonReleasedEvent>() {
        format!("button={:?} at={}", e.button, point(e.position))
    } else if let Some(e) = event.downcast_ref::<MouseMovedEvent>() {
        format!("at={} delta={}", point(e.position), point(e.delta))
    } else if let Some(e) = event.downcast_ref::<MouseEnteredEvent>() {
        format!("at={}", point(e.position))
    } else if let Some(e) = event.downcast_ref::<MouseScrolledEvent>() {
        format!("offset={} at={}", point(e.offset), point(e.position))
    } else if let Some(e) = event.downcast_ref::<WindowResizeEvent>() {
        format!("size={}x{}", e.size.x, e.size.y)
    } else if let Some(e) = event.downcast_ref::<FramebufferResizeEvent>() {
        format!("size={}x{}", e.size.x, e.size.y)
    } else if let Some(e) = event.downcast_ref::<WindowMovedEvent>() {
        format!("at=({},{})", e.position.x, e.position.y)
    } else if let Some(e) = event.downcast_ref::<FileDropEvent>() {
        format!("paths={:?} at={}", e.paths, point(e.position))
    } else {
        String::new()
    };
    if fields.is_empty() {
        name.to_string()
    } else {
        format!("{name} {fields}")
    }
}

fn mods(modifiers: Modifiers) -> String {
    let names = [
        (Modifiers::SHIFT, "SHIFT"),
        (Modifiers::CONTROL, "CONTROL"),
        (Modifiers::ALT, "ALT"),
        (Modifiers::SUPER, "SUPER"),
    ];
    let held: Vec<&str> = names
        .iter()
        .filter(|(flag, _)| modifiers.contains(*flag))
        .map(|(_, name)| *name)
        .collect();
    if held.is_empty() {
        "NONE".to_string()
    } else {
        held.join("+")
    }
}

fn point(p: Vec2) -> String {
    format!("({},{})", p.x, p.y)
}

/// The game viewport: WASD and the arrows move the camera (without Control, Alt or Super held),
/// the wheel zooms, clicks and motion inside it are its own. Other keys and text are left to the
/// chrome.
struct GameViewport {
    shared: Rc<Shared>,
    camera: Cell<(i32, i32)>,
    zoom: Cell<f32>,
}

impl GameViewport {
    fn movement(key: Key, modifiers: Modifiers) -> Option<(i32, i32)> {
        if modifiers.intersects(Modifiers::CONTROL | Modifiers::ALT | Modifiers::SUPER) {
            return None;
        }
        match key {
            Key::W | Key::Up => Some((0, 1)),
            Key::S | Key::Down => Some((0, -1)),
            Key::A | Key::Left => Some((-1, 0)),
            Key::D | Key::Right => Some((1, 0)),
            _ => None,
        }
    }
}

impl EventHandler for GameViewport {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        let consumed = if let Some(press) = event.downcast_ref::<KeyPressedEvent>() {
            match Self::movement(press.key, press.modifiers) {
                Some((dx, dz)) => {
                    let (x, z) = self.camera.get();
                    self.camera.set((x + dx, z + dz));
                    true
                }
                None => false,
            }
        } else if let Some(release) = event.downcast_ref::<KeyReleasedEvent>() {
            Self::movement(release.key, release.modifiers).is_some()
        } else if let Some(repeat) = event.downcast_ref::<KeyRepeatEvent>() {
            Self::movement(repeat.key, repeat.modifiers).is_some()
        } else if let Some(scroll) = event.downcast_ref::<MouseScrolledEvent>() {
            self.zoom
                .set(self.zoom.get() * 1.1f32.powf(scroll.offset.y));
            true
        } else {
            // Clicks, releases and motion reach the viewport only inside it (or, for a release,
            // while it has the focus): all of them are its own.
            event.is::<MouseButtonPressedEvent>()
                || event.is::<MouseButtonReleasedEvent>()
                || event.is::<MouseMovedEvent>()
        };
        if consumed {
            self.shared.consumed(event, Layer::Viewport);
        }
        consumed
    }
}

/// The editor chrome: every key and character the viewport leaves (shortcuts, the outliner's
/// search field; Escape quits), and the mouse over the toolbar and the panel.
struct EditorChrome {
    shared: Rc<Shared>,
    search: RefCell<String>,
}

impl EventHandler for EditorChrome {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        if let Some(c) = event.downcast_ref::<CharInputEvent>() {
            self.search.borrow_mut().push(c.code_point);
        }
        // The editor's quit shortcut (the viewport leaves Escape to the chrome).
        if let Some(press) = event.downcast_ref::<KeyPressedEvent>()
            && press.key == Key::Escape
        {
            self.shared.close.set(true);
        }
        let consumed = event.is_in_category(EventCategory::KEYBOARD)
            || event.is_in_category(EventCategory::MOUSE);
        if consumed {
            self.shared.consumed(event, Layer::Chrome);
        }
        consumed
    }
}

/// The window layer: resizes lay the regions out again, a close request ends the program.
struct WindowLayer {
    shared: Rc<Shared>,
}

impl EventHandler for WindowLayer {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        if let Some(resize) = event.downcast_ref::<WindowResizeEvent>() {
            self.shared
                .size
                .set((resize.size.x as f32, resize.size.y as f32));
            self.shared.layout_changed.set(true);
        }
        if event.is::<WindowCloseEvent>() {
            self.shared.close.set(true);
        }
        let consumed = event.is_in_category(EventCategory::WINDOW);
        if consumed {
            self.shared.consumed(event, Layer::Window);
        }
        consumed
    }
}

/// The last handler: traces what nobody consumed.
struct Nobody {
    shared: Rc<Shared>,
}

impl EventHandler for Nobody {
    fn on_event(&self, event: &mut dyn Event) -> bool {
        self.shared.consumed(event, Layer::Nobody);
        false
    }
}

/// The game viewport's rectangle in a window of `size` (logical units).
fn viewport_rect((width, height): (f32, f32)) -> Rect {
    Rect::new(
        PANEL_WIDTH,
        TOOLBAR_HEIGHT,
        (width - PANEL_WIDTH).max(0.0),
        (height - TOOLBAR_HEIGHT).max(0.0),
    )
}

/// The window, its blitter and the input side.
struct Open {
    window: Rc<Window>,
    surface: softbuffer::Surface<Rc<Window>, Rc<Window>>,
    input: WinitInput,
    announced: bool,
}

struct App {
    processor: Rc<EventProcessor>,
    registry: Rc<InputViewportRegistry>,
    shared: Rc<Shared>,
    game_id: ViewportId,
    // The handlers, held here: the processor and the registry hold them weakly.
    _handlers: (
        Rc<GameViewport>,
        Rc<EditorChrome>,
        Rc<WindowLayer>,
        Rc<Nobody>,
    ),
    open: Option<Open>,
    error: Option<String>,
}

impl App {
    fn new() -> App {
        let processor = Rc::new(EventProcessor::new());
        let shared = Rc::new(Shared::default());
        shared.size.set((640.0, 400.0));

        let registry = Rc::new(InputViewportRegistry::new());
        let _ = registry.register(&processor); // InputLayer::Viewport (1000)
        let game = Rc::new(GameViewport {
            shared: Rc::clone(&shared),
            camera: Cell::new((0, 0)),
            zoom: Cell::new(1.0),
        });
        let game_id = registry.add_viewport(&game, viewport_rect(shared.size.get()));

        let chrome = Rc::new(EditorChrome {
            shared: Rc::clone(&shared),
            search: RefCell::new(String::new()),
        });
        let _ = processor.register_event_handler(&chrome, InputLayer::EditorChrome); // 500
        let window = Rc::new(WindowLayer {
            shared: Rc::clone(&shared),
        });
        let _ = processor.register_event_handler(&window, InputLayer::Default); // 0
        let nobody = Rc::new(Nobody {
            shared: Rc::clone(&shared),
        });
        let _ = processor.register_event_handler(&nobody, i32::MIN);

        App {
            processor,
            registry,
            shared,
            game_id,
            _handlers: (game, chrome, window, nobody),
            open: None,
            error: None,
        }
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, error: String) {
        self.error = Some(error);
        event_loop.exit();
    }

    /// Draws the regions: toolbar, panel, viewport; the last consumer's region brighter; a
    /// yellow frame around the focused viewport.
    fn draw(&mut self) -> Result<(), String> {
        let focused = self.registry.focused() == Some(self.game_id);
        let last = self.shared.last_input.get();
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        let size = open.window.inner_size();
        let (Some(width), Some(height)) =
            (NonZeroU32::new(size.width), NonZeroU32::new(size.height))
        else {
            return Ok(());
        };
        open.surface
            .resize(width, height)
            .map_err(|e| format!("cannot resize the surface: {e}"))?;
        let mut buffer = open
            .surface
            .buffer_mut()
            .map_err(|e| format!("cannot get the surface's buffer: {e}"))?;
        let scale = open.window.scale_factor() as f32;
        let (width, height) = (size.width as usize, size.height as usize);
        let toolbar = (TOOLBAR_HEIGHT * scale) as usize;
        let panel = (PANEL_WIDTH * scale) as usize;
        let frame = (4.0 * scale) as usize;
        let chrome_lit = last == Some(Layer::Chrome);
        let viewport_lit = last == Some(Layer::Viewport);
        for y in 0..height {
            for x in 0..width {
                let colour = if y < toolbar {
                    if chrome_lit { 0x00a0_7830 } else { 0x0030_3030 }
                } else if x < panel {
                    if chrome_lit { 0x00c0_9040 } else { 0x0048_4848 }
                } else {
                    let edge = x < panel + frame
                        || x + frame >= width
                        || y < toolbar + frame
                        || y + frame >= height;
                    if focused && edge {
                        0x00ff_d000
                    } else if viewport_lit {
                        0x0030_80e0
                    } else {
                        0x0018_3058
                    }
                };
                buffer[y * width + x] = colour;
            }
        }
        buffer
            .present()
            .map_err(|e| format!("cannot present the frame: {e}"))?;
        if !open.announced {
            open.announced = true;
            let id = match open.window.window_handle().map(|h| h.as_raw()) {
                Ok(RawWindowHandle::Xlib(handle)) => handle.window.to_string(),
                Ok(RawWindowHandle::Xcb(handle)) => handle.window.to_string(),
                _ => "unknown".to_string(),
            };
            println!("ready window={id} size={}x{}", size.width, size.height);
        }
        Ok(())
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.open.is_some() {
            return;
        }
        let (width, height) = self.shared.size.get();
        let attributes = Window::default_attributes()
            .with_title(TITLE)
            .with_inner_size(LogicalSize::new(width, height));
        let window = match event_loop.create_window(attributes) {
            Ok(window) => Rc::new(window),
            Err(e) => return self.fail(event_loop, format!("cannot create the window: {e}")),
        };
        let context = match softbuffer::Context::new(Rc::clone(&window)) {
            Ok(context) => context,
            Err(e) => return self.fail(event_loop, format!("cannot open the blitter: {e}")),
        };
        let surface = match softbuffer::Surface::new(&context, Rc::clone(&window)) {
            Ok(surface) => surface,
            Err(e) => return self.fail(event_loop, format!("cannot make the surface: {e}")),
        };
        let input = WinitInput::from(&*window);
        window.request_redraw();
        self.open = Some(Open {
            window,
            surface,
            input,
            announced: false,
        });
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        event_loop.set_control_flow(ControlFlow::wait_duration(TICK));
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        open.input.window_event(&self.processor, &event);
        if matches!(
            event,
            WindowEvent::Resized(_) | WindowEvent::Moved(_) | WindowEvent::Occluded(_)
        ) {
            // winit 0.30 has no minimize / maximize / restore events: ask the window.
            open.input
                .dispatch(&self.processor, WindowInput::from(&*open.window));
        }
        if self.shared.layout_changed.replace(false) {
            self.registry
                .set_rect(self.game_id, viewport_rect(self.shared.size.get()));
        }
        if self.shared.close.get() {
            event_loop.exit();
            return;
        }
        if matches!(event, WindowEvent::RedrawRequested) {
            if let Err(e) = self.draw() {
                self.fail(event_loop, e);
            }
        } else {
            open.window.request_redraw();
        }
    }
}

fn main() -> ExitCode {
    let event_loop = match EventLoop::new() {
        Ok(event_loop) => event_loop,
        Err(e) => {
            eprintln!(
                "window: no display to open a window on ({e}). Run it in an X session, or under \
                 Xvfb: `xvfb-run cargo run --example window --features winit`."
            );
            return ExitCode::from(2);
        }
    };
    println!("window: press Escape or close the window to quit");
    let mut app = App::new();
    if let Err(e) = event_loop.run_app(&mut app) {
        eprintln!("window: the event loop failed: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(e) = app.error {
        eprintln!("window: {e}");
        return ExitCode::FAILURE;
    }
    println!("closed");
    ExitCode::SUCCESS
}
