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
//! let kept: usize = module::unloaded().iter().map(|version| version.bytes()).sum();
//! println!("{} unloaded versions keep {kept} bytes mapped", module::unloaded().len());
//! ```
//!
//! [`SettingsClass`]: crate::core_delegates::SettingsClass

mod entry;

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

/// Loads the game module at `path`, runs its start-up and fires `on_module_loaded` (MB3);
/// returns its id. On the game thread only (T1).
///
/// The file is copied to a fresh path first (in a `lumina-modules-<pid>` folder of the
/// temporary directory) and the copy is mapped, so a rebuild may overwrite `path` meanwhile.
///
/// # Errors
///
/// [`ModuleError`]: the file is missing, not a library, not a game module, built against another
/// lumina or compiler, linking its own runtime copy, a module of that name is loaded, or its
/// start-up panicked. No code of the module runs before every check passed.
///
/// # Panics
///
/// Off the game thread (T1).
#[track_caller]
pub fn load(path: impl AsRef<Path>) -> Result<ModuleId, ModuleError> {
    main_thread::assert_game_thread("`module::load`");
    load_as(path.as_ref())
}

/// [`load`] of a path.
fn load_as(path: &Path) -> Result<ModuleId, ModuleError> {
    if IN_ENTRY.get() {
        return Err(ModuleError::Busy {
            module: path.display().to_string(),
            reason: "a module's start-up or shut-down is running; retry after it returns (at \
                     the next frame, say)"
                .to_owned(),
        });
    }
    if !path.is_file() {
        return Err(ModuleError::NotFound {
            path: path.to_owned(),
        });
    }
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let mapped = fresh_copy(path)?;
    let result = map_and_start(path, &mapped, modified);
    if result.is_err() {
        let _ = std::fs::remove_file(&mapped);
    }
    result
}

/// Copies `path` to a fresh file of the module folder.
fn fresh_copy(path: &Path) -> Result<PathBuf, ModuleError> {
    let io = |error: std::io::Error| ModuleError::Io {
        path: path.to_owned(),
        reason: error.to_string(),
    };
    let dir = std::env::temp_dir().join(format!("lumina-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io)?;
    let stem = path
        .file_stem()
        .map_or_else(|| "module".into(), |stem| stem.to_string_lossy());
    let extension = path
        .extension()
        .map_or_else(String::new, |ext| format!(".{}", ext.to_string_lossy()));
    let copy = dir.join(format!(
        "{stem}.{}{extension}",
        NEXT_COPY.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::copy(path, &copy).map_err(io)?;
    copy.canonicalize().map_err(io)
}

fn map_and_start(
    path: &Path,
    mapped: &Path,
    modified: Option<SystemTime>,
) -> Result<ModuleId, ModuleError> {
    let before = mapped_files();
    // SAFETY: loading a library runs its initializers. A game module's are Rust's (none, or
    // those of `inventory`); a library that is not a game module is the user's choice of path,
    // which is what this function exists to load.
    let library =
        unsafe { libloading::Library::new(mapped) }.map_err(|error| ModuleError::NotALibrary {
            path: path.to_owned(),
            reason: loader_reason(&error, mapped, path),
        })?;
    // The module's own library and every library the loader mapped for it (MB6): code in
    // those is the module's, and they stay mapped with it.
    let ranges = mappings()
        .into_iter()
        .filter(|(file, ..)| !before.contains(file))
        .map(|(_, start, end)| (start, end))
        .collect();
    match check_record(&library, path) {
        Ok((entry, name)) => start(library, entry, name, path, mapped, ranges, modified),
        Err(error) => {
            // None of its code ran (only initializers): nothing of it can be referred to.
            drop(library);
            let _ = std::fs::remove_file(mapped);
            Err(error)
        }
    }
}

/// The module's record, checked (MB3, MB2), and its name.
fn check_record(
    library: &libloading::Library,
    path: &Path,
) -> Result<(*const ModuleEntry, String), ModuleError> {
    // SAFETY: `lumina_game_module_v1` is exported by `game_module!` with this signature. A
    // foreign library exporting the name with another signature is outside what can be checked.
    let entry = unsafe {
        library
            .get::<extern "C" fn() -> *const ModuleEntry>(ENTRY_SYMBOL.as_bytes())
            .map(|function| function())
    }
    .map_err(|_| ModuleError::MissingEntryPoints {
        path: path.to_owned(),
    })?;
    if entry.is_null() {
        return Err(ModuleError::MissingEntryPoints {
            path: path.to_owned(),
        });
    }
    // SAFETY: the record is static data of the mapped library; its first field is the layout
    // version, which every layout keeps first.
    let abi_version = unsafe { (*entry).abi_version };
    if abi_version != ModuleEntry::ABI_VERSION {
        return Err(ModuleError::AbiMismatch {
            path: path.to_owned(),
            module: abi_version,
            engine: ModuleEntry::ABI_VERSION,
        });
    }
    // SAFETY: a record of this layout (checked above), in the mapped library.
    let record = unsafe { &*entry };
    // SAFETY: the record's strings are static data of the mapped library.
    let (name, lumina_version, rustc_version) = unsafe {
        (
            record.name.to_string_lossy(),
            record.lumina_version.to_string_lossy(),
            record.rustc_version.to_string_lossy(),
        )
    };
    let engine = BuildInfo::CURRENT;
    if lumina_version != engine.lumina_version || rustc_version != engine.rustc_version {
        return Err(ModuleError::BuildMismatch {
            module: name,
            path: path.to_owned(),
            module_build: format!("lumina {lumina_version} built by {rustc_version}"),
            engine_build: engine.to_string(),
        });
    }
    if !std::ptr::eq(record.runtime_marker, runtime_copy::marker()) {
        return Err(ModuleError::SeparateRuntime {
            module: name,
            path: path.to_owned(),
        });
    }
    match modules(|modules| modules.iter().any(|m| m.info.name() == name)) {
        Some(true) => return Err(ModuleError::AlreadyLoaded { module: name }),
        Some(false) => {}
        None => {
            return Err(ModuleError::ThreadExiting {
                path: path.to_owned(),
            });
        }
    }
    Ok((entry, name))
}

/// Registers a checked module, runs its start-up and fires `on_module_loaded`.
#[allow(clippy::too_many_arguments)]
fn start(
    library: libloading::Library,
    entry: *const ModuleEntry,
    name: String,
    path: &Path,
    mapped: &Path,
    ranges: Vec<(usize, usize)>,
    modified: Option<SystemTime>,
) -> Result<ModuleId, ModuleError> {
    // SAFETY: a checked record in the mapped library.
    let record = unsafe { &*entry };
    let id = ModuleId::fresh();
    for &(start, end) in &ranges {
        track::add_range(id.0, start, end);
    }
    let info = ModuleInfo::new(name.clone()).with_path(path);
    let mut loaded = Some(Loaded {
        id,
        info: info.clone(),
        mapped: mapped.to_owned(),
        ranges,
        modified,
        entry,
        library,
        unloading: false,
    });
    let _ = modules_mut(|modules| modules.extend(loaded.take()));
    if let Some(unlisted) = loaded {
        // The list went since the check (the thread is exiting): nothing of the module ran.
        track::remove_range(id.0);
        std::mem::forget(unlisted.library);
        return Err(ModuleError::ThreadExiting {
            path: path.to_owned(),
        });
    }
    if let Err(message) = run_entry_point(id, track::Running::StartUp, record.start_up) {
        // Its subscriptions go, its library is unmapped (it never counted as loaded: no
        // `on_module_unloaded`); the start-up's panic is the error.
        let _ = finish_unload(id, false);
        return Err(ModuleError::StartUpFailed {
            module: name,
            message,
        });
    }
    CoreDelegates::get().on_module_loaded().broadcast(&info);
    Ok(id)
}

/// The dynamic loader's message, with the copy's path replaced by the path the user gave.
fn loader_reason(error: &libloading::Error, mapped: &Path, path: &Path) -> String {
    let reason =
        std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string);
    reason.replace(&mapped.display().to_string(), &path.display().to_string())
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

/// The files mapped in the process now.
fn mapped_files() -> std::collections::HashSet<String> {
    mappings().into_iter().map(|(file, ..)| file).collect()
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

/// Unloads a module (MB4, MB6): runs its shut-down, removes everything the loader attributes to
/// it, fires `on_module_unloaded`, and keeps its library mapped (see [`unloaded`] and
/// [`unmap`]). Returns what it was.
///
/// Called from the module's own code (a subscriber, a queued task, a coroutine, a `Drop` the
/// engine runs) the unload runs at once: that code returns into its library, which stays
/// mapped. What still refers to the module afterwards (a subscription the loader could not
/// remove: on another thread's delegate, or one a running broadcast holds until it ends) is
/// counted in [`UnloadedModule::still_referenced`] and named in a `tracing` warning.
///
/// # Errors
///
/// [`ModuleError::NotLoaded`] for an id that is not loaded (unloading twice);
/// [`ModuleError::Busy`] from the module's own start-up, while a module's start-up or
/// shut-down runs, while the module is being unloaded already, or while a single-cast
/// delegate bound to its code lends its callable for a call (nothing happened: retry later); [`ModuleError::ShutDownFailed`] when its shut-down panicked (the module is unloaded
/// all the same).
///
/// # Panics
///
/// Off the game thread (T1).
#[track_caller]
pub fn unload(id: ModuleId) -> Result<ModuleInfo, ModuleError> {
    main_thread::assert_game_thread("`module::unload`");
    check_unload(id)?;
    finish_unload(id, true)
}

/// The checks of [`unload`] and [`reload`]: what an unload from here would do wrong.
fn check_unload(id: ModuleId) -> Result<(), ModuleError> {
    let Some((name, unloading)) = modules(|modules| {
        modules
            .iter()
            .find(|m| m.id == id)
            .map(|m| (m.info.name().to_owned(), m.unloading))
    })
    .flatten() else {
        return Err(ModuleError::NotLoaded { id });
    };
    let busy = |reason: &str| {
        Err(ModuleError::Busy {
            module: name.clone(),
            reason: reason.to_owned(),
        })
    };
    if unloading {
        return busy(
            "it is being unloaded already (this call came from code its unload runs: its \
             shut-down, or the `Drop` of one of its callables or captures)",
        );
    }
    if track::starting_up(id.0) {
        return busy(
            "this call came from its own start-up, which must return first; queue the unload \
             with `main_thread::enqueue` to run it at the next frame",
        );
    }
    if IN_ENTRY.get() {
        return busy(
            "a module's start-up or shut-down is running; retry after it returns (at the next \
             frame, say)",
        );
    }
    if track::any_in_call(id.0) {
        return busy(
            "a single-cast delegate bound to its code lends its callable for a call, which the \
             unload could not take back; retry after the call returns, e.g. from a task queued \
             with `main_thread::enqueue`",
        );
    }
    Ok(())
}

/// Shut-down and `on_module_unloaded` (for a module that started), removal of everything
/// attributed to it; its library is kept mapped (MB6).
fn finish_unload(id: ModuleId, started: bool) -> Result<ModuleInfo, ModuleError> {
    // Unloading before any of its code runs: an unload re-entered from its shut-down or from a
    // `Drop` below is refused.
    let entry = modules_mut(|modules| {
        let module = modules.iter_mut().find(|m| m.id == id)?;
        module.unloading = true;
        Some(module.entry)
    })
    .flatten();
    let Some(entry) = entry else {
        return Err(ModuleError::NotLoaded { id });
    };
    let failed = if started {
        // SAFETY: the record of a loaded module.
        run_entry_point(id, track::Running::ShutDown, unsafe { (*entry).shut_down }).err()
    } else {
        None
    };
    // From here on every step runs user code (the `Drop`s of the module's callables, values and
    // tasks; the engine's `on_module_unloaded` subscribers) and runs to its end even when one of
    // them panics, and so does the unload: the first panic resumes once the module is gone (R3).
    let mut drops = Drops::default();
    let mut released = Released::default();
    let mut settled = released.release_all(id, &mut drops);
    let loaded = modules_mut(|modules| {
        let index = modules.iter().position(|m| m.id == id)?;
        Some(modules.remove(index))
    })
    .flatten();
    let Some(loaded) = loaded else {
        // Unreachable: only this function removes a module, and it is refused while unloading.
        return Err(ModuleError::NotLoaded { id });
    };
    if started {
        drops.run(|| CoreDelegates::get().on_module_unloaded().broadcast());
        // The engine's subscribers may have dropped values of the module that left more of it.
        settled &= released.release_all(id, &mut drops);
    }
    // A release hook of the module's code (it set it with `set_destroyed_hook`) would go on
    // being called for the engine's releases: uninstalled with the module (MB4).
    if crate::script_delegate::remove_destroyed_hook_if(|hook| {
        track::belongs_to(id.0, track::code_of(&hook))
    }) {
        tracing::warn!(
            module = loaded.info.name(),
            "lumina: game module `{}` had installed the script delegates' destroyed hook; it \
             was uninstalled with the module (releases are logged as leaks until a host \
             installs one)",
            loaded.info.name()
        );
    }
    // Only now: a value the drops above made is attributed to the module while its range is
    // registered, so the rounds above find it.
    track::remove_range(id.0);
    released.warn(loaded.info.name());
    let panicked = drops.into_text();
    if !settled {
        tracing::warn!(
            module = loaded.info.name(),
            "lumina: unloading game module `{}` ran `Drop`s that went on subscribing, queuing \
             or spawning its code round after round; what they made last is still there",
            loaded.info.name()
        );
    }
    let referenced = track::count(id.0);
    if referenced > 0 {
        tracing::warn!(
            module = loaded.info.name(),
            "lumina: game module `{}` was unloaded with {referenced} subscription(s) or \
             value(s) still referring to it: on delegates of other threads, which the game \
             thread cannot remove, or held by a broadcast (or bus delivery) running around the \
             unload until it ends; its library stays mapped, so they run its old code",
            loaded.info.name()
        );
    }
    let info = loaded.info.clone();
    keep(loaded);
    if let Some(text) = panicked {
        Drops::resume_text(text);
    }
    match failed {
        Some(message) => Err(ModuleError::ShutDownFailed {
            module: info.name().to_owned(),
            message,
        }),
        None => Ok(info),
    }
}

/// What an unload released of a module on this thread, over its rounds.
#[derive(Default)]
struct Released {
    /// Messages of its types posted from other threads, dropped.
    swept: usize,
    /// Tasks it queued with `main_thread::enqueue`, dropped unrun.
    queued: usize,
    /// Coroutine tasks it spawned, dropped unpolled.
    tasks: usize,
    /// Wakers of its types waiting for the next frame (`main_thread::wake_next_frame`), dropped
    /// unwoken.
    wakers: usize,
    /// Registry entries of queued senders it made (`main_thread::QueuedSender`), dropped: a
    /// clone of such a sender kept elsewhere sends nothing from then on.
    senders: usize,
}

impl Released {
    /// How many rounds [`release_all`](Self::release_all) makes before it gives up.
    const ROUNDS: usize = 16;

    /// Releases everything of `id` on this thread: its subscriptions and values, then the tasks
    /// it queued (they would run its code after the unmapping), then its coroutine tasks (they
    /// would be polled). Their `Drop`s are user code that may leave more of the module behind
    /// (subscribe its code again, queue or spawn a task of it, post a value of its types): again
    /// until a round finds nothing, at most [`ROUNDS`](Self::ROUNDS) times. Whether it settled.
    /// A panicking `Drop` goes to `drops` (R3).
    fn release_all(&mut self, id: ModuleId, drops: &mut Drops) -> bool {
        for _ in 0..Self::ROUNDS {
            let before = (
                self.swept,
                self.queued,
                self.tasks,
                self.wakers,
                self.senders,
            );
            drops.run(|| self.swept += release_values(id));
            drops.run(|| {
                self.queued += main_thread::drop_queued(|origin| origin.is_of(id.0));
            });
            drops.run(|| {
                self.tasks += track::TASK_HOOKS
                    .get()
                    .map_or(0, |hooks| (hooks.drop_tasks)(&|origin| origin.is_of(id.0)));
            });
            drops.run(|| {
                self.wakers += main_thread::drop_frame_wakers(|waker| {
                    track::belongs_to(id.0, track::code_of_waker(waker))
                });
            });
            drops.run(|| {
                self.senders += main_thread::drop_targets(|deliver| {
                    track::belongs_to(id.0, track::code_of(deliver))
                });
            });
            if (
                self.swept,
                self.queued,
                self.tasks,
                self.wakers,
                self.senders,
            ) == before
                && track::record_ids_here(id.0).is_empty()
            {
                return true;
            }
        }
        false
    }

    /// Says what the unload of module `name` dropped that was still waiting.
    fn warn(&self, name: &str) {
        let Released {
            swept,
            queued,
            tasks,
            wakers,
            senders,
        } = *self;
        if senders > 0 {
            tracing::warn!(
                module = name,
                "lumina: game module `{name}` was unloaded with {senders} queued sender(s) it \
                 made still held (by other threads or the engine); they send nothing from now on"
            );
        }
        if wakers > 0 {
            tracing::warn!(
                module = name,
                "lumina: game module `{name}` was unloaded with {wakers} waker(s) of its types \
                 waiting for the next frame (left by frame-waiting futures it polled); they were \
                 dropped unwoken"
            );
        }
        if tasks > 0 {
            tracing::warn!(
                module = name,
                "lumina: game module `{name}` was unloaded with {tasks} coroutine task(s) it \
                 spawned still running; they were dropped unpolled"
            );
        }
        if swept > 0 {
            tracing::warn!(
                module = name,
                "lumina: game module `{name}` was unloaded with {swept} message(s) of its types \
                 posted from other threads and not delivered yet; they were dropped"
            );
        }
        if queued > 0 {
            tracing::warn!(
                module = name,
                "lumina: game module `{name}` was unloaded with {queued} task(s) it queued with \
                 `main_thread::enqueue` still waiting; they were dropped unrun"
            );
        }
    }
}

/// Removes every subscription of `id` on this thread and drops the values of its types that other
/// threads handed over and nothing consumed yet (messages posted to a bus from another thread).
/// Returns how many values were swept.
///
/// Every step runs to its end, and the steps after it run, when a `Drop` it runs panics; the
/// first panic resumes once all of them ran (R3).
pub(crate) fn release_values(id: ModuleId) -> usize {
    let mut drops = Drops::default();
    drops.run(|| remove_subscriptions(id));
    // A holder's sweep waits for a thread that was moving the holder's values out (a bus's
    // thread queuing what its inbox held, see `track::Sweep`): those it queued are recorded by
    // the time the sweep returns, on that thread, so they are removed below.
    let mut swept = 0;
    drops.run(|| swept = track::sweep(id.0));
    drops.run(|| remove_subscriptions(id));
    drops.finish();
    swept
}

/// Removes every recorded subscription of `id` on this thread, dropping the callables; again
/// while those drops (user code, M13) subscribe more. A record whose block is busy (a list
/// broadcasting, which only marks the subscription removed and keeps the callable until its
/// outermost broadcast ends, M4; a binding being called; a value lent out) is kept, marked left,
/// until its value goes: it counts as still referring to the module (MB6). Records on other
/// threads stay too. A panicking `Drop` does not stop it: its panic resumes once every
/// subscription is removed (R3).
pub(crate) fn remove_subscriptions(id: ModuleId) {
    let mut drops = Drops::default();
    loop {
        let ids = track::record_ids_here(id.0);
        if ids.is_empty() {
            break;
        }
        for record in ids {
            // Taken one at a time, never as a batch: a removal runs user `Drop`s, which may drop
            // another list of this module's records; that list forgets them, so its address is
            // never used after it was freed (R1).
            let Some(record) = track::take_record(record) else {
                continue;
            };
            drops.run(|| {
                // SAFETY: on the list's own thread (`record_ids_here`), and the list is alive:
                // its record was still registered, and a dropped list forgets its records. Asked
                // before the removal, which may free the list (a busy one keeps what it holds
                // past it, so it is alive for `keep_left` below, which only stores the record).
                let busy = unsafe { record.busy() };
                // SAFETY: as above; nothing ran since.
                unsafe { record.remove() };
                if busy {
                    track::keep_left(record);
                }
            });
        }
    }
    drops.finish();
}

/// Hot reload (MB5): unloads `id` and loads the file at its path again (a fresh copy of it, so
/// the new version is mapped beside the old one, which stays mapped, MB6). Returns the new id.
///
/// From the module's own code it runs at once, like [`unload`]; from its start-up, its
/// shut-down or a `Drop` its unload runs, it is refused like [`unload`].
///
/// # Errors
///
/// Those of [`unload`] (then the old version stays loaded when it was `Busy`) and of [`load`].
///
/// # Panics
///
/// Off the game thread (T1).
#[track_caller]
pub fn reload(id: ModuleId) -> Result<ModuleId, ModuleError> {
    main_thread::assert_game_thread("`module::reload`");
    let path = modules(|modules| {
        modules
            .iter()
            .find(|m| m.id == id)
            .and_then(|m| m.info.path().map(Path::to_owned))
    })
    .flatten()
    .ok_or(ModuleError::NotLoaded { id })?;
    check_unload(id)?;
    finish_unload(id, true)?;
    load(path)
}

// ---- kept libraries (MB6) ----------------------------------------------------------------------

/// An unloaded version of a game module whose library stays mapped (MB6): what [`unloaded`]
/// lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnloadedModule {
    id: ModuleId,
    info: ModuleInfo,
    mapped: PathBuf,
    bytes: usize,
}

impl UnloadedModule {
    /// The id it had while loaded.
    pub fn id(&self) -> ModuleId {
        self.id
    }

    /// What it was (name, path).
    pub fn info(&self) -> &ModuleInfo {
        &self.info
    }

    /// The copy of its library that stays mapped.
    pub fn mapped_path(&self) -> &Path {
        &self.mapped
    }

    /// How many bytes of address space its library and the libraries mapped with it take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many subscriptions and values the loader still knows of that refer to its code (0
    /// once everything the unload left went): those on other threads' delegates, and those a
    /// broadcast held during the unload until it ends. What the loader could not attribute is
    /// not counted.
    pub fn still_referenced(&self) -> usize {
        track::count(self.id.0)
    }
}

/// One unloaded version kept mapped, with its handle (never closed but by [`unmap`]).
struct Kept {
    unloaded: UnloadedModule,
    library: libloading::Library,
}

/// The unloaded versions kept mapped, in unload order. A static: never dropped, so the
/// libraries stay mapped to the process's end.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

fn kept<R>(with: impl FnOnce(&mut Vec<Kept>) -> R) -> R {
    with(
        &mut KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// Keeps an unloaded module's library mapped (MB6).
fn keep(loaded: Loaded) {
    let unloaded = UnloadedModule {
        id: loaded.id,
        bytes: loaded.bytes(),
        info: loaded.info,
        mapped: loaded.mapped,
    };
    kept(|kept| {
        kept.push(Kept {
            unloaded,
            library: loaded.library,
        });
    });
}

/// The unloaded versions of game modules whose libraries stay mapped (MB6), in unload order:
/// what hot reload keeps in memory.
///
/// ```no_run
/// use lumina::module;
///
/// let versions = module::unloaded();
/// let bytes: usize = versions.iter().map(|version| version.bytes()).sum();
/// println!("{} unloaded versions keep {bytes} bytes mapped", versions.len());
/// ```
pub fn unloaded() -> Vec<UnloadedModule> {
    kept(|kept| kept.iter().map(|k| k.unloaded.clone()).collect())
}

/// Unmaps the library of the unloaded module `id` (and, with it, the libraries it brought that
/// nothing else holds), giving its memory back. Safe code never needs it: [`unload`] keeps the
/// library mapped so that nothing left of the module can crash the engine.
///
/// In every build the call is refused when the reflection registry holds types the library
/// registered (`#[script_delegate]` payloads, components: the registry cannot forget them);
/// in debug builds also when the loader's records show a value still referring to the module
/// ([`UnloadedModule::still_referenced`] is not 0).
///
/// # Safety
///
/// Nothing of the module's code or data may be reachable any more: no callable, waker, task,
/// message or value of its types anywhere (the loader's records cover only what it could
/// attribute, see the [module docs](self)), no `&'static` reference into its data (a
/// [`SettingsClass`](crate::core_delegates::SettingsClass) or event class name it handed out,
/// a `&'static str` it returned), and no thread running its code.
///
/// # Errors
///
/// [`ModuleError::NotKept`] when `id` is loaded, unmapped already or unknown;
/// [`ModuleError::StillReferenced`] when refused as said above (nothing changed).
///
/// # Panics
///
/// Off the game thread (T1).
pub unsafe fn unmap(id: ModuleId) -> Result<(), ModuleError> {
    main_thread::assert_game_thread("`module::unmap`");
    let Some(index) = kept(|kept| kept.iter().position(|k| k.unloaded.id == id)) else {
        return Err(ModuleError::NotKept { id });
    };
    let (name, mapped) = kept(|kept| {
        let unloaded = &kept[index].unloaded;
        (unloaded.info.name().to_owned(), unloaded.mapped.clone())
    });
    let refused = |reason: String| {
        Err(ModuleError::StillReferenced {
            module: name.clone(),
            reason,
        })
    };
    let ranges: Vec<(usize, usize)> = mappings()
        .into_iter()
        .filter(|(file, ..)| Path::new(file) == mapped)
        .map(|(_, start, end)| (start, end))
        .collect();
    let inside = |address: usize| {
        ranges
            .iter()
            .any(|&(start, end)| address >= start && address < end)
    };
    let reflected = inventory::iter::<RegisteredPayload>
        .into_iter()
        .any(|registered| inside(std::ptr::from_ref(registered).addr()))
        || inventory::iter::<RegisteredComponent>
            .into_iter()
            .any(|registered| inside(std::ptr::from_ref(registered).addr()));
    if reflected {
        return refused(
            "it registered reflected types (`#[script_delegate]`, `ScriptComponent`), which the \
             reflection registry cannot forget"
                .to_owned(),
        );
    }
    let referenced = track::count(id.0);
    if cfg!(debug_assertions) && referenced > 0 {
        return refused(format!(
            "{referenced} subscription(s) or value(s) still refer to it (debug builds check \
             the loader's records)"
        ));
    }
    let Kept { library, unloaded } = kept(|kept| kept.remove(index));
    // Location addresses cached for bind sites may be reused by the next library (R5).
    crate::bind_site::library_unmapped();
    drop(library);
    let _ = std::fs::remove_file(&unloaded.mapped);
    Ok(())
}

/// Whether the file `id` was loaded from changed since (a rebuild): what a hot-reload loop
/// polls. `false` for an id that is not loaded.
pub fn source_changed(id: ModuleId) -> bool {
    modules(|modules| {
        modules.iter().find(|m| m.id == id).is_some_and(|m| {
            let now = m.info.path().and_then(|path| {
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

/// How many subscriptions are recorded for the loaded module `id` (0 for an id that is not
/// loaded): what unloading it will remove. One the module removed itself still counts until its
/// list lets go of it (outside a broadcast when the list compacts, or when the list is
/// dropped).
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

#[cfg(test)]
mod tests {
    use super::{Loaded, MODULES, ModuleEntry, ModuleId, RawStr, track};
    use crate::bus::{MessageBus, TagKey};
    use crate::core_delegates::ModuleInfo;
    use std::cell::Cell;
    use std::path::PathBuf;
    use std::rc::Rc;

    /// A payload whose type counts as the fake module's; says when it is dropped.
    struct Loot(Rc<Cell<bool>>, #[allow(dead_code)] u32);

    impl Drop for Loot {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    /// MB6, MB4: a message the module posts into a queue the engine created, and a retained
    /// message it sends into the slot the engine's filled, carry a type whose code is the
    /// engine's (here `Loot`, as `Box<dyn Fn()>` in a real module): only the running code says
    /// they are the module's. Recorded when they enter the store, the module's unload drops
    /// exactly them; the engine's stay. The mirror case: the engine's retained message
    /// replacing the module's is not dropped by the unload. Without the records made on entry
    /// (the queue's record was made when the engine created it; the slot was reused in place
    /// with no record), the unload dropped nothing and the engine delivered (and replayed) the
    /// module's values after the unload.
    #[test]
    fn mb6_a_modules_posted_and_retained_values_in_engine_stores_go_with_its_unload() {
        const FAKE: ModuleId = ModuleId(u64::MAX - 49);
        static POSTED: TagKey<Loot> = TagKey::new("MB6Running.Posted", false);
        static KEPT: TagKey<Loot> = TagKey::new("MB6Running.Kept", true);
        let _game = crate::main_thread::GameThreadScope::enter();
        let bus: MessageBus<u32> = MessageBus::new();
        let flag = || Rc::new(Cell::new(false));
        let (engine_posted, module_posted, engine_kept, module_kept) =
            (flag(), flag(), flag(), flag());
        // A module is loaded (a range no code word falls in): `Loot`'s code is no module's.
        #[cfg(not(miri))]
        track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE.0, 0, 1);
        bus.post(&POSTED, Loot(Rc::clone(&engine_posted), 1));
        bus.send(&KEPT, Loot(flag(), 0));
        {
            // The module's code runs (its task, say): what it posts and retains is its own.
            let _module_code = track::enter(FAKE.0, track::Running::Task);
            bus.post(&POSTED, Loot(Rc::clone(&module_posted), 2));
            bus.send(&KEPT, Loot(Rc::clone(&module_kept), 3));
        }
        assert_eq!(track::count(FAKE.0), 2, "both recorded on entry");
        let _ = super::release_values(FAKE);
        assert!(
            module_posted.get() && module_kept.get(),
            "the module's went"
        );
        assert!(!engine_posted.get(), "the engine's message stays");
        assert_eq!(bus.posted(), 1);
        assert!(bus.retained(&KEPT).is_none());
        assert_eq!(bus.deliver_posted(), 1);
        assert!(engine_posted.get(), "delivered, then dropped");
        // The mirror case: the module's retained message replaced by the engine's.
        {
            let _module_code = track::enter(FAKE.0, track::Running::Task);
            bus.send(&KEPT, Loot(flag(), 4));
        }
        assert_eq!(track::count(FAKE.0), 1);
        bus.send(&KEPT, Loot(Rc::clone(&engine_kept), 5));
        assert_eq!(
            track::count(FAKE.0),
            0,
            "the engine's value is not the module's"
        );
        let _ = super::release_values(FAKE);
        assert!(
            !engine_kept.get(),
            "the unload left the engine's retained message"
        );
        assert!(bus.retained(&KEPT).is_some());
        track::remove_range(FAKE.0);
    }

    unsafe extern "C" fn shut_down(_: *const super::EntryReport) -> bool {
        true
    }

    static ENTRY: ModuleEntry = ModuleEntry {
        abi_version: ModuleEntry::ABI_VERSION,
        name: RawStr::new("fake"),
        lumina_version: RawStr::new(""),
        rustc_version: RawStr::new(""),
        runtime_marker: std::ptr::null(),
        start_up: shut_down,
        shut_down,
    };

    fn loaded(id: ModuleId) -> bool {
        MODULES.with_borrow(|modules| modules.iter().any(|m| m.id == id))
    }

    /// R3 (and MB4, R5): an unload runs to its end when a `Drop` it runs panics, then resumes
    /// that panic. Without it, the first panicking `Drop` stopped the unload halfway: the
    /// module's other subscriptions stayed (its code went on running after its shut-down), and
    /// the module stayed "being unloaded" for good.
    #[test]
    fn r3_an_unload_completes_when_a_drop_it_runs_panics_then_resumes_the_panic() {
        use crate::drops::panic_text;
        use crate::invocation::InvocationList;
        use std::any::Any;

        const FAKE: ModuleId = ModuleId(u64::MAX - 44);
        /// A module's capture whose `Drop` panics.
        struct Loud;
        impl Drop for Loud {
            fn drop(&mut self) {
                panic!("a module's capture panicked");
            }
        }
        /// A module's capture that counts its drops.
        struct Counted(Rc<Cell<usize>>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let _game = crate::main_thread::GameThreadScope::enter();
        let dropped = Rc::new(Cell::new(0));
        let loud: Rc<dyn Any> = Rc::new(Loud);
        let counted: Rc<dyn Any> = Rc::new(Counted(Rc::clone(&dropped)));
        // Attribute exactly these two types' code to the fake module, after a placeholder range
        // no code word falls in (see `track`'s `r1_mb4_an_unload_whose_drop_frees_...`: a range
        // at 0 would claim the values of tests running in parallel; under Miri, one test at a
        // time, the zero word as before).
        #[cfg(not(miri))]
        track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE.0, 0, 1);
        for it in [&loud, &counted] {
            let vtable = track::code_of(&**it).expect("a module is loaded").vtable();
            track::add_range(FAKE.0, vtable, vtable + 1);
        }
        let list: InvocationList<Rc<dyn Any>> = InvocationList::new();
        // Recorded first, so removed first.
        let _ = list.add(loud);
        let _ = list.add(counted);
        assert_eq!(track::count(FAKE.0), 2);
        MODULES.with_borrow_mut(|modules| {
            modules.push(Loaded {
                id: FAKE,
                info: ModuleInfo::new("fake"),
                // No such mapping: the unload leaves the (not really loaded) library alone.
                mapped: PathBuf::from("/nonexistent/r3-unload-fake.so"),
                modified: None,
                entry: &ENTRY,
                library: libloading::os::unix::Library::this().into(),
                unloading: false,
                ranges: Vec::new(),
            });
        });
        let heard = Rc::new(Cell::new(false));
        let sink = Rc::clone(&heard);
        let _unloaded = crate::CoreDelegates::get()
            .on_module_unloaded()
            .add_lambda(move || sink.set(true));
        let payload = std::panic::catch_unwind(|| super::unload(FAKE))
            .expect_err("the panic of the Drop resumes");
        assert_eq!(panic_text(&*payload), "a module's capture panicked");
        assert!(!loaded(FAKE), "the module is gone");
        assert!(
            list.is_empty(),
            "every subscription of the module was removed"
        );
        assert_eq!(dropped.get(), 1);
        assert_eq!(track::count(FAKE.0), 0);
        assert!(heard.get(), "on_module_unloaded fired");
        track::remove_range(FAKE.0);
    }

    /// MB6, M4: a subscription of the module that its unload finds in a list that is
    /// broadcasting can only be marked removed: its callable stays in its slot until that
    /// broadcast ends (the list's settle drops it then). A `Drop` the unload ran subscribed the
    /// module's code to that list. Its record stays, marked left, so the module counts as still
    /// referred to (a debug build's `unmap` refuses) until the settle dropped the callable, and
    /// goes then.
    #[test]
    fn r5_mb6_a_module_callable_whose_removal_waits_for_a_broadcast_is_still_referenced_until_it_ends()
     {
        use crate::invocation::InvocationList;
        use std::any::Any;

        const FAKE: ModuleId = ModuleId(u64::MAX - 45);
        type Anys = InvocationList<Rc<dyn Any>>;
        /// A module's capture that counts its drops.
        struct Counted(Rc<Cell<usize>>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        /// A module's capture whose `Drop` subscribes more of the module's code to `list`.
        struct Respawn {
            list: Rc<Anys>,
            spawn: Option<Rc<dyn Any>>,
        }
        impl Drop for Respawn {
            fn drop(&mut self) {
                if let Some(spawn) = self.spawn.take() {
                    let _ = self.list.add(spawn);
                }
            }
        }
        let _game = crate::main_thread::GameThreadScope::enter();
        let dropped = Rc::new(Cell::new(0));
        let host: Rc<Anys> = Rc::default();
        let module_list: Anys = InvocationList::new();
        // Attribute exactly these two types' code to the fake module (see
        // `r3_an_unload_completes_when_a_drop_it_runs_panics_then_resumes_the_panic`).
        #[cfg(not(miri))]
        track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE.0, 0, 1);
        // Made beforehand, so that its vtable is the one attributed (Miri does not keep one
        // vtable per type).
        let spawn: Rc<dyn Any> = Rc::new(Counted(Rc::clone(&dropped)));
        let vtable = track::code_of(&*spawn)
            .expect("a module is loaded")
            .vtable();
        track::add_range(FAKE.0, vtable, vtable + 1);
        let respawn: Rc<dyn Any> = Rc::new(Respawn {
            list: Rc::clone(&host),
            spawn: Some(spawn),
        });
        let vtable = track::code_of(&*respawn)
            .expect("a module is loaded")
            .vtable();
        track::add_range(FAKE.0, vtable, vtable + 1);
        let _ = module_list.add(respawn);
        // The host's own subscriber: no code of the module (one word, not 0: the placeholder
        // range under Miri claims the zero word).
        let _ = host.add(Rc::new(7_usize) as Rc<dyn Any>);
        assert_eq!(track::count(FAKE.0), 1);
        let inside = Rc::new(Cell::new(None));
        let seen = Rc::clone(&inside);
        host.broadcast_with((), |_, ()| {
            let swept = super::release_values(FAKE);
            seen.set(Some((track::count(FAKE.0), swept, dropped.get())));
        });
        assert_eq!(
            inside.get(),
            Some((1, 0, 0)),
            "the callable left in the broadcasting list is recorded as left (it still refers to \
             the module), and is not dropped while the list broadcasts"
        );
        assert_eq!(dropped.get(), 1, "the broadcast's end dropped it");
        assert_eq!(track::count(FAKE.0), 0);
        track::remove_range(FAKE.0);
    }

    /// MB4, R5, R4: a game module's code may bind a managed listener to a script delegate with
    /// an `extern "C" fn` of its own (`bind_managed` is a safe call), and may install the
    /// release hook with `set_destroyed_hook`. Its unload must remove that binding (handing it
    /// to the hook once, as `Removed`) and uninstall that hook, while the library is mapped.
    /// Without it, the binding stayed (a managed listener counted as no module's code), and the
    /// next broadcast called the thunk in the unmapped library; the hook stayed installed, and
    /// the next release called it there. (Not under Miri, which cannot `dlopen`: no `r5_` in
    /// its name.)
    #[test]
    fn mb4_a_managed_thunk_and_a_release_hook_of_the_module_go_before_the_unmap() {
        use crate::script_delegate::{
            DestroyedHook, ManagedBinding, ManagedThunk, ReleaseReason, ScriptDelegate,
            ScriptDelegateBase, destroyed_hook, set_destroyed_hook,
        };
        use std::ffi::c_void;

        const FAKE: ModuleId = ModuleId(u64::MAX - 46);
        thread_local! {
            static MODULE_CALLS: Cell<usize> = const { Cell::new(0) };
            static ENGINE_CALLS: Cell<usize> = const { Cell::new(0) };
            static RELEASED: std::cell::RefCell<Vec<(u64, ReleaseReason)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        /// The module's thunk.
        extern "C" fn module_thunk(_: *mut c_void, _: *const c_void) {
            MODULE_CALLS.set(MODULE_CALLS.get() + 1);
        }
        /// The engine's (the host's) thunk.
        extern "C" fn engine_thunk(_: *mut c_void, _: *const c_void) {
            ENGINE_CALLS.set(ENGINE_CALLS.get() + 1);
        }
        /// The module's release hook.
        extern "C" fn module_hook(
            _: *const ScriptDelegateBase,
            bindings: *const ManagedBinding,
            count: usize,
            reason: ReleaseReason,
        ) {
            // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
            let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
            RELEASED.with_borrow_mut(|released| {
                released.extend(bindings.iter().map(|binding| (binding.id, reason)));
            });
        }
        let _game = crate::main_thread::GameThreadScope::enter();
        let _lock = crate::ffi::tests::HOOK_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Each made into a pointer once (Miri gives every reification of a function an address
        // of its own): the values bound and installed are the ones attributed.
        let module_thunk: ManagedThunk = module_thunk;
        let module_hook: DestroyedHook = module_hook;
        let previous = set_destroyed_hook(Some(module_hook));
        // Attribute exactly the module's thunk and hook to the fake module.
        for code in [
            (module_thunk as *const ()).addr(),
            (module_hook as *const ()).addr(),
        ] {
            track::add_range(FAKE.0, code, code + 1);
        }
        let delegate: ScriptDelegate<()> = ScriptDelegate::new();
        let module_id = delegate.bind_managed(Some(module_thunk), std::ptr::null_mut());
        let engine_id = delegate.bind_managed(Some(engine_thunk), std::ptr::null_mut());
        assert_ne!(module_id, 0);
        assert_eq!(
            track::count(FAKE.0),
            1,
            "the module's managed binding is the module's"
        );
        MODULES.with_borrow_mut(|modules| {
            modules.push(Loaded {
                id: FAKE,
                info: ModuleInfo::new("fake"),
                // No such mapping: the unload leaves the (not really loaded) library alone.
                mapped: PathBuf::from("/nonexistent/mb4-managed-fake.so"),
                modified: None,
                entry: &ENTRY,
                library: libloading::os::unix::Library::this().into(),
                unloading: false,
                ranges: Vec::new(),
            });
        });
        let unloaded = super::unload(FAKE);
        let hook_after = destroyed_hook();
        set_destroyed_hook(previous);
        track::remove_range(FAKE.0);
        assert!(unloaded.is_ok(), "{unloaded:?}");
        assert_eq!(
            delegate
                .managed_bindings()
                .iter()
                .map(|binding| binding.id)
                .collect::<Vec<_>>(),
            [engine_id],
            "the unload removed the module's managed binding, and only it"
        );
        assert_eq!(
            RELEASED.with_borrow_mut(std::mem::take),
            [(module_id, ReleaseReason::Removed)],
            "released once, while the module's hook was still mapped, with its reason"
        );
        assert!(
            hook_after.is_none(),
            "the module's release hook was uninstalled by its unload"
        );
        delegate.broadcast(&());
        assert_eq!(MODULE_CALLS.get(), 0, "no code of the module runs after");
        assert_eq!(ENGINE_CALLS.get(), 1);
        assert!(!delegate.unbind_managed(module_id));
        assert!(delegate.unbind_managed(engine_id));
        assert_eq!(track::count(FAKE.0), 0);
    }
    /// MB4, R5, R4: a game module's code may listen on a message bus with a managed listener
    /// (`listen_managed` is a safe call) whose thunk is an `extern "C" fn` of its own. The
    /// listener's callable is the runtime's closure (its vtable is no module's), so its unload
    /// must find it by the thunk and remove it (handing it to the host's hook once, as
    /// `Removed`) while the library is mapped. Without it, the next send called the thunk in
    /// the unmapped library.
    #[test]
    fn mb4_a_bus_managed_listener_whose_thunk_is_the_modules_goes_before_the_unmap() {
        use crate::script_delegate::{
            ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
        };
        use std::ffi::c_void;

        const FAKE: ModuleId = ModuleId(u64::MAX - 79);
        static HIT: TagKey<u32> = TagKey::new("MB4Managed.Hit", false);
        thread_local! {
            static MODULE_CALLS: Cell<usize> = const { Cell::new(0) };
            static ENGINE_CALLS: Cell<usize> = const { Cell::new(0) };
            static RELEASED: std::cell::RefCell<Vec<(u64, ReleaseReason)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        /// The module's thunk.
        extern "C" fn module_thunk(_: *mut c_void, _: *const c_void) {
            MODULE_CALLS.set(MODULE_CALLS.get() + 1);
        }
        /// The engine's (the host's) thunk.
        extern "C" fn engine_thunk(_: *mut c_void, _: *const c_void) {
            ENGINE_CALLS.set(ENGINE_CALLS.get() + 1);
        }
        /// The host's release hook (the engine's code).
        extern "C" fn engine_hook(
            _: *const ScriptDelegateBase,
            bindings: *const ManagedBinding,
            count: usize,
            reason: ReleaseReason,
        ) {
            // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
            let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
            RELEASED.with_borrow_mut(|released| {
                released.extend(bindings.iter().map(|binding| (binding.id, reason)));
            });
        }
        let _game = crate::main_thread::GameThreadScope::enter();
        let _lock = crate::ffi::tests::HOOK_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = set_destroyed_hook(Some(engine_hook));
        // Reified once: the address attributed to the module is the one the bus keeps.
        let module_thunk: crate::script_delegate::ManagedThunk = module_thunk;
        let code = (module_thunk as *const ()).addr();
        track::add_range(FAKE.0, code, code + 1);
        let bus: MessageBus<u64> = MessageBus::new();
        let listen = |thunk| {
            bus.listen_managed(HIT.tag(), true, None, Some(thunk), std::ptr::null_mut())
                .expect("a partial managed listener")
        };
        let module_id = listen(module_thunk);
        let engine_id = listen(engine_thunk);
        assert_eq!(
            track::count(FAKE.0),
            1,
            "the module's managed listener is the module's"
        );
        MODULES.with_borrow_mut(|modules| {
            modules.push(Loaded {
                id: FAKE,
                info: ModuleInfo::new("fake"),
                // No such mapping: the unload leaves the (not really loaded) library alone.
                mapped: PathBuf::from("/nonexistent/mb4-bus-managed-fake.so"),
                modified: None,
                entry: &ENTRY,
                library: libloading::os::unix::Library::this().into(),
                unloading: false,
                ranges: Vec::new(),
            });
        });
        let unloaded = super::unload(FAKE);
        set_destroyed_hook(previous);
        track::remove_range(FAKE.0);
        assert!(unloaded.is_ok(), "{unloaded:?}");
        assert_eq!(
            bus.managed_bindings()
                .iter()
                .map(|binding| binding.id)
                .collect::<Vec<_>>(),
            [engine_id],
            "the unload removed the module's managed listener, and only it"
        );
        assert_eq!(
            RELEASED.with_borrow_mut(std::mem::take),
            [(module_id, ReleaseReason::Removed)],
            "released once, with its reason"
        );
        bus.send(&HIT, 7);
        assert_eq!(MODULE_CALLS.get(), 0, "no code of the module runs after");
        assert_eq!(ENGINE_CALLS.get(), 1);
        assert!(!bus.remove_managed(module_id));
        assert!(bus.remove_managed(engine_id));
        assert_eq!(track::count(FAKE.0), 0);
    }
    /// MB4, R5: a [`NextBroadcast`](crate::NextBroadcast) polled by a game module's own
    /// executor keeps the module's `Waker` inside the subscriber the runtime made (whose vtable
    /// is the runtime's, so the delegate's list records no module code for it). The module's
    /// unload must drop that waker while the library is mapped; without it the next broadcast
    /// woke it in the unmapped library.
    #[test]
    fn mb4_a_next_broadcast_waker_of_the_module_is_dropped_before_the_unmap() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::{Context, Poll, Wake, Waker};

        const FAKE: ModuleId = ModuleId(u64::MAX - 80);
        /// The waker of the module's executor.
        struct ModuleWake(Arc<AtomicUsize>);
        impl Wake for ModuleWake {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let _game = crate::main_thread::GameThreadScope::enter();
        let delegate: crate::MulticastDelegate<dyn Fn(u32)> = crate::MulticastDelegate::new();
        let wakes = Arc::new(AtomicUsize::new(0));
        let wake = Arc::new(ModuleWake(Arc::clone(&wakes)));
        let alive = Arc::downgrade(&wake);
        let waker = Waker::from(wake);
        let vtable = std::ptr::from_ref(waker.vtable()).addr();
        track::add_range(FAKE.0, vtable, vtable + 1);
        let mut next = Box::pin(delegate.next());
        assert!(
            next.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker);
        assert_eq!(
            track::count(FAKE.0),
            1,
            "the waker of the module's code is recorded"
        );
        MODULES.with_borrow_mut(|modules| {
            modules.push(Loaded {
                id: FAKE,
                info: ModuleInfo::new("fake"),
                // No such mapping: the unload leaves the (not really loaded) library alone.
                mapped: PathBuf::from("/nonexistent/mb4-next-waker-fake.so"),
                modified: None,
                entry: &ENTRY,
                library: libloading::os::unix::Library::this().into(),
                unloading: false,
                ranges: Vec::new(),
            });
        });
        let unloaded = super::unload(FAKE);
        track::remove_range(FAKE.0);
        assert!(unloaded.is_ok(), "{unloaded:?}");
        assert!(
            alive.upgrade().is_none(),
            "the unload dropped the module's waker"
        );
        delegate.broadcast(7);
        assert_eq!(wakes.load(Ordering::SeqCst), 0, "never woken after");
        assert_eq!(
            next.as_mut().poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(Ok((7,))),
            "the future still resolves when polled again"
        );
        assert_eq!(track::count(FAKE.0), 0);
    }
}
