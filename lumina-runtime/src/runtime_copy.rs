//! One runtime per process (rules MB1, MB2): the marker every copy of the runtime exports, and
//! the check that tells a second copy it is one.
//!
//! A game module built against `lumina` without the `dynamic_linking` feature carries its own
//! copy of the runtime, with its own core delegates, game thread, queue, handle counter and
//! reflection registry: a second, separate engine. Every copy exports the symbol
//! [`MARKER_SYMBOL`]. The engine's copy is in the process's global symbol scope (it is the
//! executable's shared `lumina-dylib`, or a runtime linked into the executable); a module's
//! copy, loaded with its library, is not. So a copy that looks the marker up in the process and
//! finds one at another address than its own knows it is a second copy. It says so at its first
//! touch of engine state, instead of "no game thread is designated".

/// This copy's identity: a private static, so every reference to it binds inside the library
/// that holds the copy (an exported symbol would be interposed by the engine's).
static IDENTITY: u8 = 1;

/// The exported marker: the address of this copy's identity. The process's global symbol scope
/// resolves it to the engine's copy.
// (Not exported in this crate's own unit-test build, which also links the normal build through the
// facade dev-dependency: the linker would see the symbol twice.)
#[cfg_attr(not(test), unsafe(no_mangle))]
#[used]
pub static LUMINA_RUNTIME_MARKER_V1: &u8 = &IDENTITY;

/// The name of [`LUMINA_RUNTIME_MARKER_V1`] in the symbol table.
pub const MARKER_SYMBOL: &str = "LUMINA_RUNTIME_MARKER_V1";

/// The identity of this copy of the runtime.
pub(crate) const fn marker() -> *const u8 {
    &raw const IDENTITY
}

/// The identity of the copy the process's global symbol scope resolves the marker to, if any.
#[cfg(all(unix, not(miri)))]
fn process_marker() -> Option<*const u8> {
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbol is the `&u8` static of a runtime copy, initialized at load time; it is
    // read, never written.
    let symbol = unsafe { this.get::<*const *const u8>(b"LUMINA_RUNTIME_MARKER_V1\0") }.ok()?;
    // SAFETY: as above: the address of a live, initialized `&u8`.
    Some(unsafe { **symbol })
}

#[cfg(any(not(unix), miri))]
fn process_marker() -> Option<*const u8> {
    None
}

/// When this code runs in a second copy of the runtime, the error that names the cause and the
/// fix (MB2); `None` in the engine's copy (or when no other copy is visible).
pub(crate) fn second_copy_error(what: &str) -> Option<String> {
    let engine = process_marker()?;
    if std::ptr::eq(engine, marker()) {
        return None;
    }
    Some(format!(
        "lumina: {what} touched from a game module that carries its own copy of the lumina \
         runtime (the engine's runtime is at {engine:p}, this copy at {:p}): the module has its \
         own core delegates, game thread, queue and handle counter, a second engine that nothing \
         drives. Build the engine and the module against one shared runtime: enable the \
         `dynamic_linking` feature of `lumina` in both and build both with \
         RUSTFLAGS=\"-C prefer-dynamic\" (see lumina's guide, \"Game modules and hot reload\")",
        marker()
    ))
}

/// Panics with the MB2 error when this is a second copy of the runtime.
#[track_caller]
pub(crate) fn assert_engine_copy(what: &str) {
    if let Some(error) = second_copy_error(what) {
        panic!("{error}");
    }
}
