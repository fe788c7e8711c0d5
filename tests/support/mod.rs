//! Helpers shared by the integration tests of the game thread and the core delegates.

#![allow(dead_code)] // each test file uses a subset

use std::any::Any;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

/// The text of a panic payload (`panic!` with a literal gives `&str`, with arguments `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Runs `f` with a `tracing` subscriber that records every event on this thread as text
/// (`LEVEL fields message`), and returns what `f` returned and the recorded text.
pub fn capture_tracing<R>(f: impl FnOnce() -> R) -> (R, String) {
    capture_tracing_at(tracing::Level::INFO, f)
}

/// [`capture_tracing`], recording events down to `level` (`DEBUG` for the message bus's
/// "nobody heard it", GB7).
pub fn capture_tracing_at<R>(level: tracing::Level, f: impl FnOnce() -> R) -> (R, String) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buffer);
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(move || Sink(Arc::clone(&sink)))
        .without_time()
        .with_target(false)
        .finish();
    let result = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(
        buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
    )
    .expect("tracing output is UTF-8");
    (result, text)
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs the example `name` with `features` and the cargo that runs this test, from the
/// repository root, writing into `folder` (its one argument); panics with its stderr if it fails.
pub fn run_example_into(name: &str, features: &str, folder: &std::path::Path) {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "--example",
            name,
            "--features",
            features,
            "--",
        ])
        .arg(folder)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the example failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
