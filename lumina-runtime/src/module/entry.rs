//! The record a game module exports (rule MB3): its name, the build it was compiled against,
//! the runtime copy it links, and its two entry points. [`game_module!`](crate::game_module)
//! writes it; the loader reads it.
//!
//! The record is `#[repr(C)]` and reached through one exported function,
//! [`ENTRY_SYMBOL`], whose name carries the record's layout version: an engine never reads a
//! record laid out by another version of this file.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};

/// The exported function that returns a module's [`ModuleEntry`]; the `_v1` is
/// [`ModuleEntry::ABI_VERSION`].
pub const ENTRY_SYMBOL: &str = "lumina_game_module_v1";

/// The build of lumina that a piece of code was compiled against: what the loader compares
/// between the engine and a module before running any of the module's code (MB3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuildInfo {
    /// The version of the lumina runtime, e.g. `"0.1.0"`.
    pub lumina_version: &'static str,
    /// The compiler, as `rustc --version` prints it.
    pub rustc_version: &'static str,
}

impl BuildInfo {
    /// The build of the code that evaluates it: in a module, the build the module was compiled
    /// against (the constant is copied into the module when it is compiled).
    pub const CURRENT: BuildInfo = BuildInfo {
        lumina_version: env!("CARGO_PKG_VERSION"),
        rustc_version: env!("LUMINA_RUSTC_VERSION"),
    };
}

impl std::fmt::Display for BuildInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lumina {} built by {}",
            self.lumina_version, self.rustc_version
        )
    }
}

/// A string in the record: pointer and length of UTF-8 bytes with static lifetime.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawStr {
    ptr: *const u8,
    len: usize,
}

impl RawStr {
    /// Wraps a static string.
    pub const fn new(text: &'static str) -> RawStr {
        RawStr {
            ptr: text.as_ptr(),
            len: text.len(),
        }
    }

    /// The text, read while the library that holds it is mapped; invalid UTF-8 becomes `�`.
    ///
    /// # Safety
    ///
    /// `ptr` and `len` must describe readable memory (a record written by [`RawStr::new`] in a
    /// library that is still loaded).
    pub(crate) unsafe fn to_string_lossy(self) -> String {
        if self.ptr.is_null() {
            return String::new();
        }
        // SAFETY: readable for `len` bytes (contract).
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Where an entry point reports a panic: the engine's sink and the function that appends a
/// message to it. Lets a module whose panic cannot unwind into the engine (a module with its own
/// copy of std, say) still say what went wrong.
#[repr(C)]
#[derive(Debug)]
pub struct EntryReport {
    /// The engine's sink, passed back to `write`.
    pub sink: *mut c_void,
    /// Appends `len` bytes of UTF-8 at `message` to the sink.
    pub write: unsafe extern "C" fn(sink: *mut c_void, message: *const u8, len: usize),
}

/// A module's start-up or shut-down as exported: returns `true` when it ran to the end, `false`
/// after reporting its panic to `report`.
pub type EntryPoint = unsafe extern "C" fn(report: *const EntryReport) -> bool;

/// The record a game module exports through [`ENTRY_SYMBOL`]; written by
/// [`game_module!`](crate::game_module).
#[repr(C)]
#[derive(Debug)]
pub struct ModuleEntry {
    /// [`ModuleEntry::ABI_VERSION`] of the lumina that wrote the record.
    pub abi_version: u32,
    /// The module's name (its crate name).
    pub name: RawStr,
    /// [`BuildInfo::lumina_version`] of the module's build.
    pub lumina_version: RawStr,
    /// [`BuildInfo::rustc_version`] of the module's build.
    pub rustc_version: RawStr,
    /// The address of the runtime marker of the runtime copy the module links: the engine's own
    /// when the module shares the engine's runtime (MB1), another one when it carries a copy.
    pub runtime_marker: *const u8,
    /// The module's start-up.
    pub start_up: EntryPoint,
    /// The module's shut-down.
    pub shut_down: EntryPoint,
}

// SAFETY: the record is immutable static data (its pointers point at static, immutable bytes and
// code), so sharing it between threads cannot race.
unsafe impl Sync for ModuleEntry {}

impl ModuleEntry {
    /// The layout version of this record.
    pub const ABI_VERSION: u32 = 1;

    /// The record of a module called `name` with these entry points, for the build this is
    /// compiled in. Used by [`game_module!`](crate::game_module).
    pub const fn new(name: &'static str, start_up: EntryPoint, shut_down: EntryPoint) -> Self {
        ModuleEntry {
            abi_version: Self::ABI_VERSION,
            name: RawStr::new(name),
            lumina_version: RawStr::new(BuildInfo::CURRENT.lumina_version),
            rustc_version: RawStr::new(BuildInfo::CURRENT.rustc_version),
            runtime_marker: crate::runtime_copy::marker(),
            start_up,
            shut_down,
        }
    }
}

/// Runs a module's start-up or shut-down `body` for its exported entry point: a panic is caught
/// here, in the module's own runtime, and reported to the engine's `report` as text.
///
/// # Safety
///
/// `report` must point at a valid [`EntryReport`] for the duration of the call.
pub unsafe fn run_entry(report: *const EntryReport, body: fn()) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => true,
        Err(payload) => {
            let message = crate::drops::panic_text(&*payload);
            // SAFETY: `report` is valid for the call (contract); `write` reads `len` bytes.
            unsafe {
                let report = &*report;
                (report.write)(report.sink, message.as_ptr(), message.len());
            }
            // The payload may hold code of this runtime copy: dropped here, where it belongs,
            // under the guard: a panic of its `Drop` would unwind into the engine's
            // `extern "C"` call and abort the process (R2).
            crate::drops::drop_payload(payload);
            false
        }
    }
}

/// Declares the start-up and shut-down of a game module: a library (`crate-type = ["cdylib"]`)
/// that an engine loads with [`module::load`](crate::module::load) (rules MB3, MB4).
///
/// `start_up` runs when the engine loads the module: it subscribes to the engine's delegates
/// (through [`CoreDelegates::get`](crate::CoreDelegates::get) and anything else the engine hands
/// out). `shut_down` runs when the engine unloads it; after it returns, the engine removes every
/// subscription whose code lies in the module's library, so a module need not remember its
/// handles. Both are plain `fn()`; a panic in either is reported to the engine as an error.
///
/// The macro exports one function, `lumina_game_module_v1`, returning a record with the
/// module's name (its crate name), the lumina version and compiler it was built with (checked
/// by the engine before any of the module's code runs) and the two entry points.
///
// `standalone_crate`: this example and the one of `this_module!` each export
// `lumina_game_module_v1`; merged into one doctest crate (edition 2024) they would clash, and
// rustdoc would then compile every doctest of the crate on its own.
/// ```rust,standalone_crate
/// use lumina::CoreDelegates;
///
/// fn start_up() {
///     let _ = CoreDelegates::get()
///         .on_world_travelled()
///         .add_lambda(|old, new| println!("arena game: {old} -> {new}"));
/// }
///
/// fn shut_down() {
///     println!("arena game: saving before unload");
/// }
///
/// lumina::game_module!(start_up, shut_down);
/// ```
///
/// Build the module and the engine against one shared runtime (the `dynamic_linking` feature
/// of `lumina`, see the guide's "Game modules and hot reload"): a module that links its own copy of the runtime is refused at
/// load (MB2).
#[macro_export]
macro_rules! game_module {
    ($start_up:path, $shut_down:path $(,)?) => {
        const _: () = {
            unsafe extern "C" fn __lumina_start_up(
                report: *const $crate::module::EntryReport,
            ) -> bool {
                // SAFETY: the engine passes a valid report for the call.
                unsafe { $crate::module::run_entry(report, $start_up) }
            }

            unsafe extern "C" fn __lumina_shut_down(
                report: *const $crate::module::EntryReport,
            ) -> bool {
                // SAFETY: the engine passes a valid report for the call.
                unsafe { $crate::module::run_entry(report, $shut_down) }
            }

            static __LUMINA_MODULE_ENTRY: $crate::module::ModuleEntry =
                $crate::module::ModuleEntry::new(
                    ::core::env!("CARGO_CRATE_NAME"),
                    __lumina_start_up,
                    __lumina_shut_down,
                );

            /// The module's record, for the engine's loader.
            #[unsafe(no_mangle)]
            pub extern "C" fn lumina_game_module_v1() -> *const $crate::module::ModuleEntry {
                &__LUMINA_MODULE_ENTRY
            }
        };
    };
}

/// The [`ModuleId`](crate::module::ModuleId) of the game module whose code calls it, or `None`
/// when the caller is not a loaded game module's code (the engine's). A module may call it from
/// anywhere: its start-up and shut-down, its subscribers, its queued tasks, its threads, as long
/// as it is loaded (while its unload runs too).
///
/// It expands to the address of a function defined at the call site, so it names the library the
/// calling code was compiled into ([`module::containing`](crate::module::containing)).
///
/// ```rust,standalone_crate
/// use lumina::module::ModuleId;
///
/// fn start_up() {
///     let me: Option<ModuleId> = lumina::this_module!();
///     println!("started as {me:?}");
/// }
/// # fn shut_down() {}
/// lumina::game_module!(start_up, shut_down);
/// // Here, in a program that is not a loaded module, there is none.
/// assert_eq!(lumina::this_module!(), None);
/// ```
#[macro_export]
macro_rules! this_module {
    () => {{
        fn __lumina_this_module() {}
        $crate::module::containing(__lumina_this_module as fn() as usize)
    }};
}
