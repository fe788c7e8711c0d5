//! Game modules: code in dynamic libraries that the engine loads, unloads and hot-reloads (rules
//! MB1-MB6).
//!
//! A game module is a library (`crate-type = ["cdylib"]`) that depends on `lumina` and declares
//! its start-up and shut-down with [`game_module!`](crate::game_module). The engine loads it from
//! a path on the game thread:
//!
//! - [`load`] copies the file to a fresh path (so a rebuild can overwrite the original while the
//!   copy is mapped, and every version has a file of its own), maps it, finds the module's
//!   record, checks that the module was built against the engine's lumina version and compiler
//!   and links the engine's own runtime (MB1, MB2), runs its start-up, then fires
//!   [`CoreDelegates::on_module_loaded`](crate::CoreDelegates::on_module_loaded) (MB3).
//! - [`unload`] runs its shut-down, removes everything the loader attributes to the module (its
//!   subscriptions to any delegate, script delegate, message bus or event processor, its queued
//!   tasks and coroutine tasks, the messages it posted or retained, its viewports, the entries of
//!   the queued senders it made, wakers of its types), fires
//!   [`CoreDelegates::on_module_unloaded`](crate::CoreDelegates::on_module_unloaded), and reports
//!   what still refers to the module (MB4). **It does not unmap the library** (MB6): the library,
//!   and every library that was mapped with it, stays mapped for the process's life, so a value
//!   the loader could not attribute keeps calling the old version's code, which is still there:
//!   a bug the report and a `tracing` warning name, never undefined behaviour.
//! - [`reload`] is hot reload (MB5): unload, then load the file at the module's path again, from
//!   a fresh copy, so from then on only the new version's subscribers run; the old version stays
//!   mapped beside it.
//! - [`unloaded`] lists the versions kept mapped, with their size in memory and what still
//!   refers to each; [`unmap`] is the explicit, `unsafe` way to give that memory back, for a
//!   program that can promise nothing of the module is reachable any more.
//!
//! Bad input is an error, never a crash: [`ModuleError`] names what was wrong and what to do.
//!
//! # What is the module's
//!
//! The loader answers "which values are the module's" in two ways, each when a value enters a
//! store (a subscription is made, a task queued, a message posted or retained, a binding bound):
//!
//! - by address: the value's code (its closure's or handler's vtable, or a plain `fn`) lies in
//!   the module's library or in a library mapped with it;
//! - by running code: the value enters while lumina runs the module's own code on this thread
//!   (its start-up or shut-down, or a task it queued), whatever the value's vtable. This covers
//!   a closure defined in a library the module links, and generic code that the engine and the
//!   module share (the instantiation lies in the engine's library).
//!
//! What neither way sees stays the module's bug to fix, not a crash: a value the module hands
//! the engine while no code of it runs under lumina (from a thread of its own, say), a callable
//! nested in an engine value, data it returns as `&'static` (a [`SettingsClass`] name, an event
//! class name). Such values keep working after the unload, because the library stays mapped;
//! a subscription among them keeps running the old version's code after a reload, which is
//! what the report is for. Unloading a module from its own code (a subscriber, a task, a
//! coroutine, a `Drop` the engine runs) is allowed: its code returns into a library that is
//! still mapped. Three unloads are refused as [`ModuleError::Busy`] because of what they would
//! do, not for memory: one from the module's own start-up (its shut-down would run before its
//! start-up returned), one while its unload is running already (from its shut-down, or a `Drop`
//! the unload runs), and one while a single-cast delegate bound to its code lends its callable
//! for a call (the callable cannot be taken back under the call, and nothing would take it back
//! later: the retry does).
//!
//! Engine and modules must share one runtime: build both with the `dynamic_linking` feature of
//! `lumina` (the guide's "Game modules and hot reload" has the commands). A module that carries its
//! own copy of the runtime is refused at load ([`ModuleError::SeparateRuntime`]), and if such a
//! module is loaded by other means, its first touch of engine state panics with a message that
//! names the cause and the fix instead of "no game thread is designated" (MB2).
//!
//! ```no_run
//! use lumina::{CoreDelegates, main_thread, module};
//!
//! main_thread::designate_game_thread();
//! let _ = CoreDelegates::get()
//!     .on_module_loaded()
//!     .add_lambda(|info| println!("loaded {info}"));
//! let game = module::load("target/debug/libarena_game.so").expect("the game module loads");
//! // ... frames; the file is rebuilt ...
//! let game = module::reload(game).expect("the new version loads");
//! module::unload(game).expect("unloads once");
//! assert!(matches!(module::unload(game), Err(module::ModuleError::NotLoaded { .. })));
//! let kept: usize = module::unloaded().iter().map(|version| version.bytes).sum();
//! println!("{} unloaded versions keep {kept} bytes mapped", module::unloaded().len());
//! ```
//!
//! [`SettingsClass`]: crate::core_delegates::SettingsClass

mod entry;
mod kept;
mod load;
mod unload;

pub use kept::{UnloadedModule, unloaded, unmap};
pub use load::load;
#[cfg(test)]
pub(crate) use unload::{release_values, remove_subscriptions};
pub use unload::{reload, unload};

pub use crate::runtime_copy::{LUMINA_RUNTIME_MARKER_V1, MARKER_SYMBOL};
pub use entry::{BuildInfo, ENTRY_SYMBOL, EntryPoint, EntryReport, ModuleEntry, RawStr, run_entry};

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::core_delegates::{CoreDelegates, ModuleInfo};
use crate::drops::Drops;
use crate::main_thread;
use crate::reflect::{RegisteredComponent, RegisteredPayload};
use crate::runtime_copy;
use crate::track;

/// Identifies one load of a module; a reload gives a new id. `Copy`, so unloading twice is a
/// [`ModuleError::NotLoaded`], not a compile error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(u64);

impl ModuleId {
    fn fresh() -> ModuleId {
        ModuleId(NEXT_MODULE.fetch_add(1, Ordering::Relaxed))
    }

    /// A fake module's id, for tests that attribute code to it with `track::add_range`.
    #[cfg(test)]
    pub(crate) const fn fake(id: u64) -> ModuleId {
        ModuleId(id)
    }
}

impl fmt::Display for ModuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "module#{}", self.0)
    }
}

/// Why a module could not be loaded or unloaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModuleError {
    /// No file at the path.
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// The file could not be copied for loading.
    Io {
        /// The path given.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
    /// The file is not a loadable library (the dynamic loader's reason says why: not an ELF
    /// file, a missing dependency, an undefined symbol).
    NotALibrary {
        /// The path given.
        path: PathBuf,
        /// The dynamic loader's message.
        reason: String,
    },
    /// The library has no [`game_module!`](crate::game_module) record.
    MissingEntryPoints {
        /// The path given.
        path: PathBuf,
    },
    /// The record was written by a lumina with another record layout.
    AbiMismatch {
        /// The path given.
        path: PathBuf,
        /// The module's record layout version.
        module: u32,
        /// The engine's.
        engine: u32,
    },
    /// The module was built against another lumina version or by another compiler (MB3).
    BuildMismatch {
        /// The module's name.
        module: String,
        /// The path given.
        path: PathBuf,
        /// The module's lumina version and compiler, as [`BuildInfo`] displays them.
        module_build: String,
        /// The engine's.
        engine_build: String,
    },
    /// The module links its own copy of the lumina runtime, not the engine's (MB2).
    SeparateRuntime {
        /// The module's name.
        module: String,
        /// The path given.
        path: PathBuf,
    },
    /// A module of this name is loaded already.
    AlreadyLoaded {
        /// The module's name.
        module: String,
    },
    /// The module's start-up panicked; the module was unloaded again.
    StartUpFailed {
        /// The module's name.
        module: String,
        /// The panic message.
        message: String,
    },
    /// The module's shut-down panicked; the module was unloaded anyway.
    ShutDownFailed {
        /// The module's name.
        module: String,
        /// The panic message.
        message: String,
    },
    /// No module is loaded under this id (unloaded already, or never loaded).
    NotLoaded {
        /// The id given.
        id: ModuleId,
    },
    /// Not now, and nothing changed: the call came from the module's own start-up (its
    /// shut-down would run before its start-up returned), a module's start-up or shut-down is
    /// running, the module is being unloaded already (the call came from its shut-down, or
    /// from code its unload runs), or a single-cast delegate bound to its code lends its
    /// callable for a call (the unload could not take it back). `reason` says which, and what
    /// to do.
    Busy {
        /// The module's name.
        module: String,
        /// What is running.
        reason: String,
    },
    /// [`unmap`] of an id that names no unloaded version kept mapped (still loaded, unmapped
    /// already, or never loaded).
    NotKept {
        /// The id given.
        id: ModuleId,
    },
    /// [`unmap`] refused, and nothing changed: the reflection registry holds types of the
    /// library, or (in debug builds) the loader's records show values still referring to it.
    StillReferenced {
        /// The module's name.
        module: String,
        /// What refers to it.
        reason: String,
    },
    /// The game thread is exiting: its list of modules is destroyed already (every module
    /// still loaded then stays mapped), so nothing can be loaded on it any more. Asked by a
    /// `Drop` that runs while the thread's locals are destroyed.
    ThreadExiting {
        /// The path given.
        path: PathBuf,
    },
}

impl fmt::Display for ModuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModuleError::NotFound { path } => {
                write!(f, "no game module at {}: no such file", path.display())
            }
            ModuleError::Io { path, reason } => {
                write!(
                    f,
                    "game module {} could not be copied for loading: {reason}",
                    path.display()
                )
            }
            ModuleError::NotALibrary { path, reason } => write!(
                f,
                "{} is not a loadable library ({reason}); a game module is a `cdylib` built \
                 against lumina with the `dynamic_linking` feature",
                path.display()
            ),
            ModuleError::MissingEntryPoints { path } => write!(
                f,
                "{} is a library but not a game module: it exports no `{ENTRY_SYMBOL}`; \
                 declare its entry points with `lumina::game_module!(start_up, shut_down)`",
                path.display()
            ),
            ModuleError::AbiMismatch {
                path,
                module,
                engine,
            } => write!(
                f,
                "game module {} has a version {module} record, the engine reads version \
                 {engine}: rebuild the module against the engine's lumina",
                path.display()
            ),
            ModuleError::BuildMismatch {
                module,
                path,
                module_build,
                engine_build,
            } => write!(
                f,
                "game module `{module}` ({}) was built against {module_build}, the engine \
                 against {engine_build}: refused (Rust has no stable ABI). Rebuild the module \
                 with the engine's toolchain and lumina version",
                path.display(),
            ),
            ModuleError::SeparateRuntime { module, path } => write!(
                f,
                "game module `{module}` ({}) carries its own copy of the lumina runtime: it \
                 would see its own core delegates, game thread and queue, not the engine's. \
                 Build the engine and the module with the `dynamic_linking` feature of `lumina` \
                 and RUSTFLAGS=\"-C prefer-dynamic\" (lumina's guide, \"Game modules and hot reload\")",
                path.display()
            ),
            ModuleError::AlreadyLoaded { module } => write!(
                f,
                "a game module named `{module}` is loaded already: unload it first, or \
                 `module::reload` it"
            ),
            ModuleError::StartUpFailed { module, message } => write!(
                f,
                "the start-up of game module `{module}` panicked: {message} (the module was \
                 unloaded again)"
            ),
            ModuleError::ShutDownFailed { module, message } => write!(
                f,
                "the shut-down of game module `{module}` panicked: {message} (its \
                 subscriptions were removed and the module unloaded anyway)"
            ),
            ModuleError::NotLoaded { id } => write!(
                f,
                "no game module is loaded as {id}: it was unloaded already (or reloaded, which \
                 gives a new id)"
            ),
            ModuleError::Busy { module, reason } => {
                write!(f, "game module `{module}` cannot be unloaded now: {reason}")
            }
            ModuleError::NotKept { id } => write!(
                f,
                "no unloaded game module is kept mapped as {id}: it is still loaded (unload it \
                 first), or was unmapped already"
            ),
            ModuleError::StillReferenced { module, reason } => write!(
                f,
                "the library of game module `{module}` cannot be unmapped: {reason}"
            ),
            ModuleError::ThreadExiting { path } => write!(
                f,
                "cannot load the game module at {}: the game thread is exiting (its module list \
                 is gone; load modules before the thread ends)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ModuleError {}

/// One loaded module.
struct Loaded {
    id: ModuleId,
    info: ModuleInfo,
    /// The fresh copy that is mapped.
    mapped: PathBuf,
    /// The address ranges mapped with it: its own library's and those of the libraries it
    /// brought (MB6: they stay mapped with it).
    ranges: Vec<(usize, usize)>,
    /// The source file's modification time when it was loaded.
    modified: Option<SystemTime>,
    entry: *const ModuleEntry,
    library: libloading::Library,
    /// Set before any of its code runs for an unload: a re-entrant unload is refused.
    unloading: bool,
}

impl Loaded {
    /// How many bytes its library and the libraries mapped with it take in the address space.
    fn bytes(&self) -> usize {
        self.ranges.iter().map(|&(start, end)| end - start).sum()
    }
}

/// The modules loaded on a thread. When the thread exits with modules still loaded (this
/// thread-local's destructor), their libraries stay mapped, like every unloaded one (MB6): the
/// thread's other thread-locals, destroyed in no order this one can choose, may still hold
/// values of theirs and drop them afterwards, running the library's code (R5).
struct Modules(Vec<Loaded>);

impl std::ops::Deref for Modules {
    type Target = Vec<Loaded>;

    fn deref(&self) -> &Vec<Loaded> {
        &self.0
    }
}

impl std::ops::DerefMut for Modules {
    fn deref_mut(&mut self) -> &mut Vec<Loaded> {
        &mut self.0
    }
}

impl Drop for Modules {
    fn drop(&mut self) {
        for loaded in self.0.drain(..) {
            std::mem::forget(loaded.library);
        }
    }
}

thread_local! {
    /// The loaded modules (only the game thread ever reaches its list).
    static MODULES: RefCell<Modules> = const { RefCell::new(Modules(Vec::new())) };
    /// Whether a module's start-up or shut-down is running on this thread.
    static IN_ENTRY: Cell<bool> = const { Cell::new(false) };
}

/// `read` on the module list, or `None` once this thread's list is destroyed: a `Drop` that runs
/// while the thread exits (an engine kept in a thread local that unloads its modules) may ask
/// after the list is gone, and a panic there would abort the process (R2). Every module still
/// loaded then stays mapped (see `Modules`), so for such a caller none is loaded.
fn modules<R>(read: impl FnOnce(&Modules) -> R) -> Option<R> {
    MODULES.try_with(|modules| read(&modules.borrow())).ok()
}

/// [`modules`] for a change of the list.
fn modules_mut<R>(change: impl FnOnce(&mut Modules) -> R) -> Option<R> {
    MODULES
        .try_with(|modules| change(&mut modules.borrow_mut()))
        .ok()
}

static NEXT_MODULE: AtomicU64 = AtomicU64::new(1);
static NEXT_COPY: AtomicU64 = AtomicU64::new(1);

/// Whether the file `id` was loaded from changed since (a rebuild): what a hot-reload loop
/// polls. `false` for an id that is not loaded.
pub fn source_changed(id: ModuleId) -> bool {
    modules(|modules| {
        modules.iter().find(|m| m.id == id).is_some_and(|m| {
            let now = m.info.path.as_deref().and_then(|path| {
                std::fs::metadata(path)
                    .and_then(|meta| meta.modified())
                    .ok()
            });
            now != m.modified
        })
    })
    .unwrap_or(false)
}

/// The modules loaded on this (the game) thread, in load order.
pub fn loaded() -> Vec<(ModuleId, ModuleInfo)> {
    modules(|modules| modules.iter().map(|m| (m.id, m.info.clone())).collect()).unwrap_or_default()
}

/// The loaded module whose library holds `address` (of its code or static data), if one does:
/// what [`this_module!`](crate::this_module) asks with the address of a function of the caller's
/// library. `None` for the engine's own addresses.
pub fn containing(address: usize) -> Option<ModuleId> {
    track::module_at(address).map(ModuleId)
}

/// How many subscriptions and values are recorded for the module `id` (0 for an unknown id).
///
/// For a loaded module: what unloading it will remove. One the module removed itself still
/// counts until its list lets go of it (outside a broadcast when the list compacts, or when the
/// list is dropped). For a version [`unloaded`] lists: what the loader still knows of that
/// refers to its code (0 once everything the unload left went): those on other threads'
/// delegates, and those a broadcast held during the unload until it ends. What the loader
/// could not attribute is not counted.
pub fn subscription_count(id: ModuleId) -> usize {
    track::count(id.0)
}

/// The path of the copy of `id`'s library that is mapped, while it is loaded.
pub fn mapped_path(id: ModuleId) -> Option<PathBuf> {
    modules(|modules| {
        modules
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.mapped.clone())
    })
    .flatten()
}

/// Runs an entry point of the loaded module `id`, as its code running on this thread (R5);
/// `Err` carries its panic message.
fn run_entry_point(id: ModuleId, what: track::Running, entry: EntryPoint) -> Result<(), String> {
    unsafe extern "C" fn write(sink: *mut c_void, message: *const u8, len: usize) {
        // SAFETY: `sink` is the `String` below; `message` is `len` readable bytes (the
        // `EntryReport` contract).
        unsafe {
            let sink = &mut *sink.cast::<String>();
            let bytes = std::slice::from_raw_parts(message, len);
            sink.push_str(&String::from_utf8_lossy(bytes));
        }
    }
    struct Entered;
    impl Drop for Entered {
        fn drop(&mut self) {
            IN_ENTRY.set(false);
        }
    }
    let mut message = String::new();
    let report = EntryReport {
        sink: (&raw mut message).cast(),
        write,
    };
    IN_ENTRY.set(true);
    let entered = Entered;
    let frame = track::enter(id.0, what);
    // SAFETY: `entry` is an entry point of a loaded module's record; `report` lives for the call.
    let ran = unsafe { entry(&report) };
    drop(frame);
    drop(entered);
    if ran { Ok(()) } else { Err(message) }
}

/// The file-backed mappings of the process, `(file, start, end)`, from `/proc/self/maps`
/// (empty elsewhere).
fn mappings() -> Vec<(String, usize, usize)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let file = fields.nth(4)?;
            file.starts_with('/').then(|| {
                Some((
                    file.to_owned(),
                    usize::from_str_radix(start, 16).ok()?,
                    usize::from_str_radix(end, 16).ok()?,
                ))
            })?
        })
        .collect()
}

#[cfg(test)]
mod tests;
