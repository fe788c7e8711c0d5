//! PL4: a real window under a real X server routes input through the processor and the viewport
//! registry. Runs `examples/window.rs` under its own Xvfb (on a free display number), drives it
//! with xdotool (keys, text, clicks, scroll, a resize) and closes it as a window manager does
//! (WM_DELETE_WINDOW); checks the example's trace of which layer consumed what, and the pixels of
//! a screenshot (xwd, converted to PNG with netpbm) saved under `target/`.
//!
//! Needs Debian's `xvfb xdotool x11-apps netpbm` (`.ci/run` installs them); without them the
//! test fails and says what to install. Run with
//! `cargo test --features winit --test window_example -- --nocapture` to see the trace.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt, EventMask};

const INSTALL: &str = "apt-get install -y xvfb xdotool x11-apps netpbm";

/// How long one step may take before the test gives up (the example answers in milliseconds).
const STEP: Duration = Duration::from_secs(20);

/// Fails with an instruction unless every tool the test needs is on the PATH.
fn require_tools() {
    let missing: Vec<&str> = ["Xvfb", "xdotool", "xwd", "xwdtopnm", "pnmtopng"]
        .into_iter()
        .filter(|tool| {
            !std::env::var_os("PATH").is_some_and(|path| {
                std::env::split_paths(&path).any(|dir| dir.join(tool).is_file())
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the PL4 window test needs {missing:?}, which are not installed: run `{INSTALL}` \
         (as root; .ci/run does it)"
    );
}

/// The cargo features this test was built with, for building the example the same way (no
/// rebuild of the library).
fn features() -> &'static str {
    if cfg!(feature = "gilrs") {
        "winit,gilrs"
    } else {
        "winit"
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
            }
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Builds the example and returns the path of its binary.
fn build_example() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--quiet",
            "--example",
            "window",
            "--features",
            features(),
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the window example does not build");
    target_dir().join("debug/examples/window")
}

/// A child process killed (by its own id) when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts Xvfb on a display number it picks itself (`-displayfd`), and returns it with the
/// number.
fn start_xvfb() -> (Guard, u32) {
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1024x768x24",
            "-nolisten",
            "tcp",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start Xvfb ({e}): run `{INSTALL}`"));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let guard = Guard(child);
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("Xvfb reports its display");
    let display = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("Xvfb did not report a display number: {line:?}"));
    (guard, display)
}

/// The example's output, line by line, with everything read so far.
struct Trace {
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Trace {
    /// Waits for the next line containing `needle` and returns it; every line read is kept.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line with {needle:?} in {STEP:?}; read so far:\n{}",
                        self.all()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "the example ended before {needle:?}; its output:\n{}",
                        self.all()
                    )
                }
            }
        }
    }

    /// Waits for the trace line of an event (`needle` is its start) and checks the layer that
    /// consumed it.
    fn consumed(&mut self, event: &str, layer: &str) {
        let line = self.expect(&format!("trace {event}"));
        assert!(
            line.ends_with(&format!("-> {layer}")),
            "expected {event} to be consumed by {layer}: {line}\n{}",
            self.all()
        );
    }

    fn all(&self) -> String {
        self.seen.join("\n")
    }
}

/// Runs xdotool on `display`.
fn xdotool(display: u32, args: &[&str]) {
    let output = Command::new("xdotool")
        .args(args)
        .env("DISPLAY", format!(":{display}"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run xdotool ({e}): run `{INSTALL}`"));
    assert!(
        output.status.success(),
        "xdotool {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Asks `window` to close as a window manager's close button does: a WM_DELETE_WINDOW client
/// message (xdotool 3.2016 has no command for it; `windowclose` destroys the window instead).
fn request_close(display: u32, window: u32) {
    let (conn, _) = x11rb::connect(Some(&format!(":{display}"))).expect("connects to Xvfb");
    let atom = |name: &[u8]| {
        conn.intern_atom(false, name)
            .expect("intern_atom is sent")
            .reply()
            .expect("intern_atom answers")
            .atom
    };
    let (protocols, delete) = (atom(b"WM_PROTOCOLS"), atom(b"WM_DELETE_WINDOW"));
    let message = ClientMessageEvent::new(32, window, protocols, [delete, 0, 0, 0, 0]);
    conn.send_event(false, window, EventMask::NO_EVENT, message)
        .expect("the close request is sent");
    // A round trip before the connection closes: the server has handled the request by then
    // (closing right after a flush can lose it when the server sees the hang-up first).
    conn.get_input_focus()
        .expect("get_input_focus is sent")
        .reply()
        .expect("the server answers after the close request");
}

/// The colour (0xRRGGBB) at each of `points` in a binary PPM image (what `xwdtopnm` writes).
fn ppm_colours(ppm: &[u8], points: &[(usize, usize)]) -> (usize, usize, Vec<u32>) {
    // Header: "P6", width, height, maxval, each separated by whitespace, then one byte.
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while ppm[at].is_ascii_whitespace() {
            at += 1;
        }
        if ppm[at] == b'#' {
            while ppm[at] != b'\n' {
                at += 1;
            }
            continue;
        }
        let start = at;
        while !ppm[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&ppm[start..at]).into_owned());
    }
    assert_eq!(fields[0], "P6", "xwdtopnm writes a colour PPM");
    assert_eq!(fields[3], "255", "8 bits per channel");
    let (width, height): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let pixels = &ppm[at + 1..];
    let colours = points
        .iter()
        .map(|&(x, y)| {
            let i = (y * width + x) * 3;
            u32::from_be_bytes([0, pixels[i], pixels[i + 1], pixels[i + 2]])
        })
        .collect();
    (width, height, colours)
}

/// Saves a screenshot of `window` as PNG and returns it with its pixels as PPM.
fn screenshot(display: u32, window: u32, png: &Path) -> Vec<u8> {
    let xwd = png.with_extension("xwd");
    let output = Command::new("xwd")
        .args(["-silent", "-id", &window.to_string(), "-out"])
        .arg(&xwd)
        .env("DISPLAY", format!(":{display}"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run xwd ({e}): run `{INSTALL}`"));
    assert!(output.status.success(), "xwd failed: {output:?}");
    let ppm = Command::new("xwdtopnm")
        .arg(&xwd)
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run xwdtopnm ({e}): run `{INSTALL}`"));
    assert!(ppm.status.success(), "xwdtopnm failed");
    let mut converter = Command::new("pnmtopng")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run pnmtopng ({e}): run `{INSTALL}`"));
    let mut stdin = converter.stdin.take().expect("piped");
    let pixels = ppm.stdout.clone();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &pixels));
    let mut encoded = Vec::new();
    converter
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut encoded)
        .expect("pnmtopng writes");
    writer.join().unwrap().expect("pnmtopng reads");
    assert!(converter.wait().expect("pnmtopng ends").success());
    assert!(encoded.starts_with(b"\x89PNG"), "pnmtopng wrote a PNG");
    std::fs::write(png, &encoded).expect("the screenshot is written");
    let _ = std::fs::remove_file(&xwd);
    ppm.stdout
}

// The example's colours (0xRRGGBB): each region dark, or lit when its layer consumed the last
// input; the focused viewport's frame.
const TOOLBAR: u32 = 0x30_3030;
const PANEL: u32 = 0x48_4848;
const TOOLBAR_LIT: u32 = 0xa0_7830;
const PANEL_LIT: u32 = 0xc0_9040;
const VIEWPORT: u32 = 0x18_3058;
const VIEWPORT_LIT: u32 = 0x30_80e0;
const FRAME: u32 = 0xff_d000;

/// Takes screenshots of `window` into `png` until the pixels at `probes` have the `expected`
/// colours (the example redraws after each input, so the first may come before that redraw).
fn screenshot_showing(
    display: u32,
    window: u32,
    png: &Path,
    probes: &[(usize, usize)],
    expected: &[u32],
) {
    let mut colours = Vec::new();
    for _ in 0..20 {
        let ppm = screenshot(display, window, png);
        colours = ppm_colours(&ppm, probes).2;
        if colours == expected {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let hex = |c: &[u32]| c.iter().map(|c| format!("{c:06x}")).collect::<Vec<_>>();
    panic!(
        "{} shows {:?} at {probes:?}, expected {:?}",
        png.display(),
        hex(&colours),
        hex(expected)
    );
}

#[test]
fn pl4_real_window_under_xvfb_routes_input_viewport_first_then_chrome() {
    require_tools();
    let binary = build_example();
    let (_xvfb, display) = start_xvfb();

    let mut child = Command::new(&binary)
        .env("DISPLAY", format!(":{display}"))
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let mut example = Guard(child);
    let (sender, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut trace = Trace {
        lines,
        seen: Vec::new(),
    };

    let ready = trace.expect("ready window=");
    let window: u32 = ready
        .split_whitespace()
        .find_map(|field| field.strip_prefix("window="))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no window id in {ready:?}"));
    assert!(ready.ends_with("size=640x400"), "{ready}");
    let id = window.to_string();
    let x = |args: &[&str]| xdotool(display, args);

    // Motion over the viewport is the viewport's.
    x(&["mousemove", "--window", &id, "400", "200"]);
    trace.consumed("MouseMoved at=(400,200)", "viewport");
    x(&["windowfocus", "--sync", &id]);
    trace.consumed("WindowFocus", "window");

    // Keys: before the viewport has the focus they go to the chrome.
    x(&["key", "w"]);
    trace.consumed("KeyPressed key=W mods=NONE repeat=false", "chrome");
    // A click into the viewport focuses it; then WASD is the viewport's.
    x(&["click", "1"]);
    trace.consumed("MouseButtonPressed button=Left at=(400,200)", "viewport");
    trace.consumed("MouseButtonReleased button=Left at=(400,200)", "viewport");
    x(&["key", "w"]);
    trace.consumed("KeyPressed key=W mods=NONE repeat=false", "viewport");
    // What the viewport leaves reaches the chrome: shortcuts and text.
    x(&["key", "ctrl+s"]);
    trace.consumed("KeyPressed key=S mods=CONTROL repeat=false", "chrome");
    trace.consumed("CharInputMods char='s' mods=CONTROL", "chrome");
    x(&["type", "hi"]);
    trace.consumed("KeyPressed key=H mods=NONE repeat=false", "chrome");
    trace.consumed("CharInput char='h'", "chrome");
    trace.consumed("CharInputMods char='h' mods=NONE", "chrome");
    trace.consumed("CharInput char='i'", "chrome");

    // Scrolling: over the viewport it zooms, over the outliner panel it is the chrome's. (Under
    // Xvfb, winit reports each xdotool wheel click twice, as the button and as the scroll
    // valuator the server derives from it: the trace shows both.)
    x(&["click", "4"]);
    trace.consumed("MouseScrolled offset=(0,1) at=(400,200)", "viewport");
    x(&["mousemove", "--window", &id, "50", "200"]);
    trace.consumed("MouseMoved at=(50,200)", "chrome");
    x(&["click", "5"]);
    trace.consumed("MouseScrolled offset=(0,-1) at=(50,200)", "chrome");
    x(&["mousemove", "--window", &id, "50", "100"]);
    trace.consumed("MouseMoved at=(50,100) delta=(0,-100)", "chrome");

    // A click on the toolbar takes the focus from the viewport: keys are the chrome's again.
    x(&["mousemove", "--window", &id, "300", "20", "click", "1"]);
    trace.consumed("MouseButtonPressed button=Left at=(300,20)", "chrome");
    x(&["key", "d"]);
    trace.consumed("KeyPressed key=D mods=NONE repeat=false", "chrome");
    // Now the chrome consumed the last input: toolbar and panel lit, the viewport dark and
    // without the focus frame.
    let chrome_png = target_dir().join("pl4-window-chrome.png");
    let probes = [(400, 20), (80, 300), (400, 270), (161, 270)];
    let lit_chrome = [TOOLBAR_LIT, PANEL_LIT, VIEWPORT, VIEWPORT];
    screenshot_showing(display, window, &chrome_png, &probes, &lit_chrome);
    println!("screenshot: {}", chrome_png.display());

    // A resize: window events are the window layer's, and the viewport grows with the window.
    x(&["windowsize", &id, "800", "500"]);
    trace.consumed("WindowResize size=800x500", "window");
    trace.consumed("FramebufferResize size=800x500", "window");
    x(&["mousemove", "--window", &id, "700", "450", "click", "1"]);
    trace.consumed("MouseButtonPressed button=Left at=(700,450)", "viewport");
    trace.consumed("MouseButtonReleased button=Left at=(700,450)", "viewport");
    x(&["key", "Right"]);
    trace.consumed("KeyPressed key=Right mods=NONE repeat=false", "viewport");

    // The screenshot shows the regions: toolbar and panel in chrome grey, the viewport lit
    // (it consumed the last input) inside the yellow frame of the focus.
    let png = target_dir().join("pl4-window.png");
    let probes = [(400, 20), (80, 300), (480, 270), (161, 270), (797, 270)];
    let lit_viewport = [TOOLBAR, PANEL, VIEWPORT_LIT, FRAME, FRAME];
    screenshot_showing(display, window, &png, &probes, &lit_viewport);
    println!("screenshot: {}", png.display());

    // Closing as a window manager does: a close request, then the example ends by itself.
    request_close(display, window);
    trace.consumed("WindowClose", "window");
    trace.expect("closed");
    let status = example.0.wait().expect("the example ends");
    let mut errors = String::new();
    stderr.read_to_string(&mut errors).expect("stderr is read");
    assert!(status.success(), "the example failed: {status}: {errors}");

    println!("trace of the window example:\n{}", trace.all());
}

#[test]
fn pl4_window_example_without_a_display_says_so_and_fails() {
    let binary = build_example();
    let output = Command::new(&binary)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .expect("the example starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}
