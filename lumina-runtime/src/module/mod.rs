//! Game modules: code in dynamic libraries that the engine loads, unloads and hot-reloads (rules
//! MB1-MB5).
//!
//! A game module is a library (`crate-type = ["cdylib"]`) that depends on `lumina` and declares
//! its start-up and shut-down with [`game_module!`](crate::game_module). The engine loads it from
//! a path on the game thread:
//!
//! - [`load`] copies the file to a fresh path (so a rebuild can overwrite the original while the
//!   copy is mapped), maps it, finds the module's record, checks that the module was built
//!   against the engine's lumina version and compiler and links the engine's own runtime (MB1,
//!   MB2), runs its start-up, then fires
//!   [`CoreDelegates::on_module_loaded`](crate::CoreDelegates::on_module_loaded) (MB3).
//! - [`unload`] runs its shut-down, removes every subscription whose code lies in the module's
//!   library, from any delegate, script delegate (native listeners, and managed bindings whose
//!   thunk is the module's), message bus (Rust listeners, and managed listeners whose thunk is
//!   the module's) or event processor, uninstalls the script delegates' destroyed hook
//!   if the module installed its own, and drops the tasks it
//!   queued with [`main_thread::enqueue`] unrun, and the messages of its payload types a
//!   [message bus](crate::bus) still holds (retained, posted, or posted from another thread and
//!   not moved in yet), so every callable and value of the module is dropped while its code is
//!   still mapped, fires
//!   [`CoreDelegates::on_module_unloaded`](crate::CoreDelegates::on_module_unloaded), and only
//!   then unmaps the library: no code of the module runs afterwards, not even a closure's `Drop`
//!   (MB4). While a delegate the module subscribed to is broadcasting, unloading is refused
//!   ([`ModuleError::Busy`]): retry after the broadcast returns, e.g. at the next frame.
//! - Code stays mapped while it can run (R5): an unload marks the module as leaving before any
//!   of its code runs, so one re-entered from its shut-down or a `Drop` it runs is refused; one
//!   asked for by the module's own queued task is deferred until that task returned; any other
//!   of the module's code found on the call stack (walked once per unload) refuses it. See
//!   [`unload`]. A module learns its own id with [`this_module!`](crate::this_module).
//! - [`reload`] is hot reload (MB5): unload, then load the file at the module's path again, so
//!   from then on only the new version's subscribers run.
//!
//! Bad input is an error, never a crash: [`ModuleError`] names what was wrong and what to do.
//!
//! What an unload cannot take back, it does not unmap: a module that registered reflected types
//! (`#[script_delegate]` payloads, components: the registry cannot forget them), or whose
//! subscriptions live on delegates of another thread, stays mapped, with a `tracing` warning.
//! Besides the subscriptions, the unload drops what the runtime holds of the module's code
//! outside any delegate: its queued tasks and coroutine tasks, messages and retained values of
//! its types on a message bus, an entity relation it set, its viewports in an
//! [`InputViewportRegistry`](crate::event::InputViewportRegistry), the entries of the
//! [`QueuedSender`](crate::main_thread::QueuedSender)s it made, and wakers of its types waiting
//! for the next frame or kept by a [`NextBroadcast`](crate::NextBroadcast) (its executor polled
//! the future: the waker is dropped unwoken, the future resolves when polled again). A single-cast
//! [`Delegate`](crate::Delegate) bound to the module's code (one the engine stores included) is
//! recorded like a subscription, pointing at the binding's shared block: the unload drops the
//! callable, and every delegate sharing the binding is unbound from then on (`is_bound()` false,
//! `execute_if_bound` returns `None`, `execute` panics as unbound); while a borrow of that
//! callable for a call is alive, the unload is refused ([`ModuleError::Busy`]) as during a
//! broadcast. Callables a module hands the engine outside of all these (a `Box<dyn Fn>` in an
//! engine structure of its own, say) are the engine's to drop before the unload, and a module's
//! own threads must be joined by its shut-down.
//!
//! Engine and modules must share one runtime: build both with the `dynamic_linking` feature of
//! `lumina` (see the README's "Game modules" section for the commands). A module that carries its
//! own copy of the runtime is refused at load ([`ModuleError::SeparateRuntime`]), and if such a
//! module is loaded by other means, its first touch of engine state panics with a message that
//! names the cause and the fix instead of "no game thread is designated" (MB2).
//!
//! Which subscriptions are the module's is found from addresses (see the `track` hooks): a
//! subscription made while the module is loaded belongs to it when its closure, handler or `fn`
//! lies in the module's library. The records point at each list's heap block (allocated by its
//! first add), which stays put when the delegate that owns it moves. The same ranges tell which
//! module a queued task is (its closure's vtable) and whether a return address of the stack lies
//! in the module.
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
//! ```

mod entry;
pub(crate) mod runtime_copy;
mod stack;
pub(crate) mod track;

pub use entry::{BuildInfo, ENTRY_SYMBOL, EntryPoint, EntryReport, ModuleEntry, RawStr, run_entry};
pub use runtime_copy::{LUMINA_RUNTIME_MARKER_V1, MARKER_SYMBOL};

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::core_delegates::{CoreDelegates, ModuleInfo};
use crate::invocation::Drops;
use crate::main_thread;
use crate::reflect::{RegisteredComponent, RegisteredPayload};

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
    /// Not now, and nothing changed: a delegate the module subscribed to is broadcasting (or a
    /// single-cast delegate bound to its code lends its callable for a call), a module's
    /// start-up or shut-down is running, the call came from the module's own start-up, or the
    /// module is leaving already (the call came from code its unload runs, or its unload is
    /// deferred until its queued task returns, R5). `reason` says which, and what to do.
    Busy {
        /// The module's name.
        module: String,
        /// What is running.
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
                 and RUSTFLAGS=\"-C prefer-dynamic\" (README, \"Game modules\")",
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
    /// The source file's modification time when it was loaded.
    modified: Option<SystemTime>,
    entry: *const ModuleEntry,
    library: libloading::Library,
    /// Set before any of its code runs for an unload (R5): a re-entrant unload is refused.
    leaving: Option<Leaving>,
}

/// Why a module counts as leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leaving {
    /// Its unload is running (its shut-down, the drops of its callables).
    Unloading,
    /// Its unload was asked for by its own queued task and runs when that task returns.
    Deferred,
}

/// The modules loaded on a thread. When the thread exits with modules still loaded (this
/// thread-local's destructor), their libraries stay mapped: the thread's other thread-locals,
/// destroyed in no order this one can choose, may still hold values of theirs (a coroutine task,
/// a frame waiter, a queued sender's accessor, a delegate of the engine's) and drop them
/// afterwards, running the library's code (R5).
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
    load_as(path.as_ref(), None)
}

/// [`load`], under a given id (a deferred reload's) or a fresh one.
fn load_as(path: &Path, id: Option<ModuleId>) -> Result<ModuleId, ModuleError> {
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
    let result = map_and_start(path, &mapped, modified, id);
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
    id: Option<ModuleId>,
) -> Result<ModuleId, ModuleError> {
    // SAFETY: loading a library runs its initializers. A game module's are Rust's (none, or
    // those of `inventory`); a library that is not a game module is the user's choice of path,
    // which is what this function exists to load.
    let library =
        unsafe { libloading::Library::new(mapped) }.map_err(|error| ModuleError::NotALibrary {
            path: path.to_owned(),
            reason: loader_reason(&error, mapped, path),
        })?;
    match check_record(&library, path) {
        Ok((entry, name)) => start(library, entry, name, path, mapped, modified, id),
        Err(error) => {
            unmap(library, mapped, &path.display().to_string());
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
fn start(
    library: libloading::Library,
    entry: *const ModuleEntry,
    name: String,
    path: &Path,
    mapped: &Path,
    modified: Option<SystemTime>,
    id: Option<ModuleId>,
) -> Result<ModuleId, ModuleError> {
    // SAFETY: a checked record in the mapped library.
    let record = unsafe { &*entry };
    let id = id.unwrap_or_else(ModuleId::fresh);
    for (start, end) in mapped_ranges(mapped) {
        track::add_range(id.0, start, end);
    }
    let info = ModuleInfo::new(name.clone()).with_path(path);
    let mut loaded = Some(Loaded {
        id,
        info: info.clone(),
        mapped: mapped.to_owned(),
        modified,
        entry,
        library,
        leaving: None,
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

/// The address ranges at which `mapped` is mapped, from `/proc/self/maps` (empty elsewhere).
fn mapped_ranges(mapped: &Path) -> Vec<(usize, usize)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let wanted = mapped.to_string_lossy();
    maps.lines()
        .filter(|line| line.split_whitespace().nth(5) == Some(&*wanted))
        .filter_map(|line| {
            let (start, end) = line.split_whitespace().next()?.split_once('-')?;
            Some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect()
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

/// Unloads a module (MB4): runs its shut-down, removes every subscription it made, fires
/// `on_module_unloaded`, then unmaps its library. Returns what it was.
///
/// Called from the module's own code (R5), the unload never unmaps code that is still running:
///
/// - from one of the module's tasks queued with [`main_thread::enqueue`], it is *deferred*: it
///   returns `Ok` at once, the module counts as leaving, and the unload runs as soon as that
///   task has returned, before [`main_thread::process_queue`] runs the next task (a shut-down
///   panic is then logged with `tracing`, not returned);
/// - from its start-up, its shut-down, a `Drop` its unload runs, or while a delegate it
///   subscribed to broadcasts (one of its subscribers may be the caller), it is *refused*
///   ([`ModuleError::Busy`], saying which).
///
/// # Errors
///
/// [`ModuleError::NotLoaded`] for an id that is not loaded (unloading twice);
/// [`ModuleError::Busy`] while a delegate the module subscribed to broadcasts, a module's
/// entry point runs, or the module is leaving already (nothing happened: retry later);
/// [`ModuleError::ShutDownFailed`] when its shut-down panicked (the module is unloaded all the
/// same).
///
/// # Panics
///
/// Off the game thread (T1).
#[track_caller]
pub fn unload(id: ModuleId) -> Result<ModuleInfo, ModuleError> {
    main_thread::assert_game_thread("`module::unload`");
    match prepare_unload(id)? {
        When::Now => finish_unload(id, true),
        When::Deferred(info) => {
            track::defer(id.0, Box::new(move || deferred(id, None)));
            Ok(info)
        }
    }
}

/// When an unload that may go ahead runs.
enum When {
    /// Now.
    Now,
    /// When the module's running task returned (the module is marked leaving).
    Deferred(ModuleInfo),
}

/// The checks of [`unload`] and [`reload`] (R5, MB4): refused, now, or deferred.
fn prepare_unload(id: ModuleId) -> Result<When, ModuleError> {
    let Some((name, leaving)) = modules(|modules| {
        modules
            .iter()
            .find(|m| m.id == id)
            .map(|m| (m.info.name().to_owned(), m.leaving))
    })
    .flatten() else {
        return Err(ModuleError::NotLoaded { id });
    };
    let busy = |reason: String| {
        Err(ModuleError::Busy {
            module: name.clone(),
            reason,
        })
    };
    match leaving {
        Some(Leaving::Unloading) => {
            return busy(
                "it is being unloaded already (this call came from code its unload runs: its \
                 shut-down, or the `Drop` of one of its callables or captures)"
                    .to_owned(),
            );
        }
        Some(Leaving::Deferred) => {
            return busy(
                "its unload is under way already: its own queued task asked for it, and it \
                 runs once that task has returned (at the next `main_thread::process_queue` if \
                 the task panicked)"
                    .to_owned(),
            );
        }
        None => {}
    }
    let running = track::running(id.0);
    if running == Some(track::Running::StartUp) {
        return busy(
            "this call came from its own start-up, which must return first; queue the unload \
             with `main_thread::enqueue` to run it at the next frame"
                .to_owned(),
        );
    }
    if IN_ENTRY.get() {
        return busy(
            "a module's start-up or shut-down is running; retry after it returns (at the next \
             frame, say)"
                .to_owned(),
        );
    }
    if let Some(reason) = lent_or_running(id) {
        return busy(reason);
    }
    if running == Some(track::Running::Task) {
        let info = modules_mut(|modules| {
            let module = modules.iter_mut().find(|m| m.id == id)?;
            module.leaving = Some(Leaving::Deferred);
            Some(module.info.clone())
        })
        .flatten();
        return Ok(info.map_or(When::Now, When::Deferred));
    }
    if stack::returns_into(&track::ranges_of(id.0)) {
        return busy(ON_THE_STACK.to_owned());
    }
    Ok(When::Now)
}

/// Why `id` cannot be unloaded now although none of its code is on the stack (R5): a delegate it
/// subscribed to is broadcasting, the message bus lends out a value of its types (a replay or a
/// delivery holds it), or a coroutine task it spawned is being polled. Checked when the unload
/// is asked for and again when a deferred unload runs: the code that runs in between (the rest
/// of its task, the drain that retries it) may be inside such a broadcast or delivery.
fn lent_or_running(id: ModuleId) -> Option<String> {
    let broadcasting = track::busy_lists(id.0);
    if broadcasting > 0 {
        let delegates = if broadcasting == 1 {
            "a delegate it subscribed to is broadcasting".to_owned()
        } else {
            format!("{broadcasting} delegates it subscribed to are broadcasting")
        };
        return Some(format!(
            "{delegates} (the caller may be one of its subscribers); retry after the broadcast \
             returns, e.g. from a task queued with `main_thread::enqueue`"
        ));
    }
    let task_running = track::TASK_HOOKS
        .get()
        .is_some_and(|hooks| (hooks.running)(&|code| track::belongs_to(id.0, code)));
    task_running.then(|| {
        "a coroutine task it spawned is running; unload it after the task's poll returns, \
         e.g. from a task queued with `main_thread::enqueue`"
            .to_owned()
    })
}

/// Why an unload is refused while the module's code waits on the stack for the caller.
const ON_THE_STACK: &str = "its code is running: this call came, directly or through the \
                            engine's, from a function of its library (the `Drop` of one of its \
                            captures that the engine dropped, say); retry after that code \
                            returned, e.g. from a task queued with `main_thread::enqueue`";

/// A deferred unload (and load, for a reload), run when the module's task returned; the errors
/// nobody can receive any more are logged.
fn deferred(id: ModuleId, reload: Option<(PathBuf, ModuleId)>) {
    if std::thread::panicking() {
        // The task panicked: not inside the unwinding, but at the next drain, before the
        // module's other tasks (the unwinding leaves this drain).
        main_thread::enqueue_next(move || deferred(id, reload));
        return;
    }
    if stack::returns_into(&track::ranges_of(id.0)) || lent_or_running(id).is_some() {
        // More of the module's code waits on the stack (its task ran inside a call of its
        // code), or this runs inside a broadcast or a bus delivery that holds its values (the
        // drain that retries it may run there): at a later drain, once that has returned. Not
        // in this drain's batch, which would retry it at once, forever (R3).
        main_thread::enqueue_next_drain(move || deferred(id, reload));
        return;
    }
    if let Err(error) = finish_unload(id, true) {
        tracing::error!(
            module = %id,
            "lumina: the deferred unload of {id}, asked for by its own queued task: {error}"
        );
        if !matches!(error, ModuleError::ShutDownFailed { .. }) {
            return;
        }
    }
    if let Some((path, new)) = reload
        && let Err(error) = load_as(&path, Some(new))
    {
        tracing::error!(
            module = %new,
            "lumina: the deferred reload of {id} as {new}, asked for by its own queued task, \
             could not load {}: {error}",
            path.display()
        );
    }
}

/// Shut-down and `on_module_unloaded` (for a module that started), removal of every
/// subscription, unmapping.
fn finish_unload(id: ModuleId, started: bool) -> Result<ModuleInfo, ModuleError> {
    // Leaving before any of its code runs (R5): an unload re-entered from its shut-down or from
    // a `Drop` below is refused.
    let entry = modules_mut(|modules| {
        let module = modules.iter_mut().find(|m| m.id == id)?;
        module.leaving = Some(Leaving::Unloading);
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
    // Each step completes on its own, so nothing of the module is left for after the unmapping.
    let mut drops = Drops::default();
    let mut released = Released::default();
    let mut settled = released.release_all(id, &mut drops);
    let loaded = modules_mut(|modules| {
        let index = modules.iter().position(|m| m.id == id)?;
        Some(modules.remove(index))
    })
    .flatten();
    let Some(loaded) = loaded else {
        // Unreachable: only this function removes a module, and it is refused while leaving.
        return Err(ModuleError::NotLoaded { id });
    };
    if started {
        drops.run(|| CoreDelegates::get().on_module_unloaded().broadcast());
        // The engine's subscribers may have dropped values of the module that left more of it.
        settled &= released.release_all(id, &mut drops);
    }
    // A release hook of the module's code (it set it with `set_destroyed_hook`) would be
    // called by the next release after the unmapping (R5): uninstalled while it is mapped.
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
    // Only now: a subscription the drops above made is attributed to the module while its range
    // is registered, so the rounds above find it.
    track::remove_range(id.0);
    released.warn(loaded.info.name());
    // A panic's payload may be a value of the module (its type's `Drop` and vtable lie in the
    // library): dropped now, while it is mapped; its text resumes after the unmapping (R5).
    let panicked = drops.into_text();
    let left = released.left;
    if !settled {
        tracing::warn!(
            module = loaded.info.name(),
            "lumina: unloading game module `{}` ran `Drop`s that went on subscribing, queuing \
             or spawning its code round after round; its library stays mapped",
            loaded.info.name()
        );
        std::mem::forget(loaded.library);
    } else if left > 0 {
        tracing::warn!(
            module = loaded.info.name(),
            "lumina: game module `{}` has {left} subscription(s) or value(s) the unload could \
             not drop: on delegates of other threads, which the game thread cannot remove, or \
             held by a broadcast (or bus delivery) running around the unload until it ends; its \
             library stays mapped",
            loaded.info.name()
        );
        std::mem::forget(loaded.library);
    } else {
        unmap(loaded.library, &loaded.mapped, loaded.info.name());
    }
    if let Some(text) = panicked {
        Drops::resume_text(text);
    }
    match failed {
        Some(message) => Err(ModuleError::ShutDownFailed {
            module: loaded.info.name().to_owned(),
            message,
        }),
        None => Ok(loaded.info),
    }
}

/// What an unload released of a module on this thread, over its rounds.
#[derive(Default)]
struct Released {
    /// Subscriptions and values it could not drop now (the library stays mapped): those on
    /// other threads' delegates (not reachable), and those a broadcasting list (or a bus lending
    /// them) still holds until that broadcast ends.
    left: usize,
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
    /// until a round finds nothing, at most [`ROUNDS`](Self::ROUNDS) times. Whether it settled;
    /// if not, the library must stay mapped (R5). A panicking `Drop` goes to `drops` (R3).
    fn release_all(&mut self, id: ModuleId, drops: &mut Drops) -> bool {
        for _ in 0..Self::ROUNDS {
            let before = (
                self.swept,
                self.queued,
                self.tasks,
                self.wakers,
                self.senders,
            );
            drops.run(|| {
                let (left, swept) = release_values(id);
                self.left += left;
                self.swept += swept;
            });
            drops.run(|| {
                self.queued +=
                    main_thread::drop_queued(|task| track::belongs_to(id.0, track::code_of(task)));
            });
            drops.run(|| {
                self.tasks += track::TASK_HOOKS.get().map_or(0, |hooks| {
                    (hooks.drop_tasks)(&|code| track::belongs_to(id.0, code))
                });
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
            ..
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

/// Unmaps a library, unless it registered reflected types: the registry (`inventory`) cannot
/// forget them, so such a library stays mapped (and says so). Where its address range is unknown
/// (no `/proc/self/maps`), nothing could be attributed to it: it stays mapped too.
fn unmap(library: libloading::Library, mapped: &Path, name: &str) {
    let ranges = mapped_ranges(mapped);
    if ranges.is_empty() {
        tracing::warn!(
            module = name,
            "lumina: the address range of game module `{name}` is unknown on this platform, so \
             its subscriptions could not be found; its library stays mapped"
        );
        std::mem::forget(library);
        return;
    }
    let inside = |address: usize| {
        ranges
            .iter()
            .any(|&(start, end)| address >= start && address < end)
    };
    let payloads = inventory::iter::<RegisteredPayload>
        .into_iter()
        .any(|registered| inside(std::ptr::from_ref(registered).addr()));
    let components = inventory::iter::<RegisteredComponent>
        .into_iter()
        .any(|registered| inside(std::ptr::from_ref(registered).addr()));
    if payloads || components {
        tracing::warn!(
            module = name,
            "lumina: game module `{name}` registered reflected types (`#[script_delegate]`, \
             `ScriptComponent`), which the reflection registry cannot forget; its library stays \
             mapped"
        );
        std::mem::forget(library);
    } else {
        // Location addresses cached for bind sites may be reused by the next library (R5).
        crate::bind_site::library_unmapped();
        drop(library);
        let _ = std::fs::remove_file(mapped);
    }
}

/// Removes every subscription of `id` on this thread and drops the values of its types that other
/// threads handed over and nothing consumed yet (messages posted to a bus from another thread),
/// while its code is mapped (R5). Returns how many subscriptions and values are left (then the
/// library must stay mapped: see [`remove_subscriptions`]) and how many values were swept.
///
/// Every step runs to its end, and the steps after it run, when a `Drop` it runs panics; the
/// first panic resumes once all of them ran (R3): none of the module's values may be left
/// behind for after the unmapping.
pub(crate) fn release_values(id: ModuleId) -> (usize, usize) {
    let mut drops = Drops::default();
    let mut left = 0;
    drops.run(|| left += remove_subscriptions(id));
    // A holder's sweep waits for a thread that was moving the holder's values out (a bus's
    // thread queuing what its inbox held, see `track::Sweep`): those it queued are recorded by
    // the time the sweep returns, on that thread, so they are counted again below and keep the
    // library mapped, instead of being missed by both the count before and the sweep.
    let mut swept = 0;
    drops.run(|| swept = track::sweep(id.0));
    drops.run(|| left += remove_subscriptions(id));
    drops.finish();
    (left, swept)
}

/// Removes every recorded subscription of `id` on this thread, dropping the callables; again
/// while those drops (user code, M13) subscribe more. Returns how many are left: those on other
/// threads, and those whose list was broadcasting (or whose bus channel lent the value) when
/// they were removed. Such a list only marks the subscription removed and keeps the callable
/// in its slot until its outermost broadcast ends (M4), so it outlives this call: the unload may
/// run inside a broadcast of a list that held none of the module's code when it was asked for,
/// and a `Drop` it runs may subscribe the module's code to that list. A panicking `Drop` does
/// not stop it: its panic resumes once every subscription is removed (R3).
fn remove_subscriptions(id: ModuleId) -> usize {
    let mut drops = Drops::default();
    let mut waiting = 0;
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
                // past it).
                if unsafe { record.busy() } {
                    waiting += 1;
                }
                // SAFETY: as above; nothing ran since.
                unsafe { record.remove() };
            });
        }
    }
    drops.finish();
    // What is left was made on other threads: not reachable from here; forgotten.
    waiting + track::take_records(id.0).len()
}

/// Hot reload (MB5): unloads `id` and loads the file at its path again (a fresh copy of it, so
/// the new version is mapped even where the loader would keep the old one). Returns the new id.
///
/// From the module's own queued task the reload is deferred like [`unload`] (R5): it returns the
/// id the new version will have, and unloads and loads once the task returned; if the load then
/// fails, the error is logged with `tracing` and the id never becomes loaded. From its start-up,
/// its shut-down or a `Drop` its unload runs, it is refused like [`unload`].
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
    match prepare_unload(id)? {
        When::Now => {
            finish_unload(id, true)?;
            load(path)
        }
        When::Deferred(_) => {
            let new = ModuleId::fresh();
            track::defer(id.0, Box::new(move || deferred(id, Some((path, new)))));
            Ok(new)
        }
    }
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
    use super::{Leaving, Loaded, MODULES, ModuleEntry, ModuleId, RawStr, deferred, track};
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

    /// A deferred unload that runs later (at a drain after its task panicked, or once module code
    /// left the stack) while an engine listener hears the module's retained message (the bus
    /// lends the payload: a replay holds it) must not finish then: the unmapping would leave the
    /// listener reading, and the replay dropping, a payload whose code is the library's. Fails
    /// (the module is gone inside the listener) when `deferred` skips the busy checks.
    #[test]
    fn mb4_a_deferred_unload_waits_while_the_bus_lends_a_value_of_the_module() {
        const FAKE: ModuleId = ModuleId(u64::MAX - 43);
        let _game = crate::main_thread::GameThreadScope::enter();
        static LOOT: TagKey<Loot> = TagKey::new("R5Deferred.Loot", true);
        let bus: MessageBus<u32> = MessageBus::new();
        let dropped = Rc::new(Cell::new(false));
        // Attribute exactly the retained message's code (its `Any` vtable) to a fake module,
        // after a placeholder range no code word falls in (see `track`'s
        // `r1_mb4_an_unload_whose_drop_frees_...`: a range at 0 would claim the values of tests
        // running in parallel; under Miri, one test at a time, the zero word as before).
        #[cfg(not(miri))]
        track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE.0, 0, 1);
        bus.send(&LOOT, Loot(Rc::new(Cell::new(false)), 0));
        let vtable = track::code_of(&*bus.retained(&LOOT).unwrap())
            .unwrap()
            .vtable();
        track::add_range(FAKE.0, vtable, vtable + 1);
        assert!(bus.clear_retained(&LOOT));
        bus.send(&LOOT, Loot(Rc::clone(&dropped), 1));
        assert_eq!(
            track::count(FAKE.0),
            1,
            "the retained message is the module's"
        );
        MODULES.with_borrow_mut(|modules| {
            modules.push(Loaded {
                id: FAKE,
                info: ModuleInfo::new("fake"),
                // No such mapping: the unload leaves the (not really loaded) library alone.
                mapped: PathBuf::from("/nonexistent/r5-deferred-fake.so"),
                modified: None,
                entry: &ENTRY,
                library: libloading::os::unix::Library::this().into(),
                leaving: Some(Leaving::Deferred),
            });
        });
        let inside = Rc::new(Cell::new(None));
        let seen = Rc::clone(&inside);
        // An engine listener hears the module's retained message at once and runs a drain
        // meanwhile, whose task is the deferred unload (as its retry after a panic would be). A
        // retry put back into that drain's batch would run again at once, forever.
        let _listener = bus.listen(&LOOT, move |loot: &Loot, _| {
            crate::main_thread::enqueue(|| deferred(FAKE, None));
            crate::main_thread::process_queue();
            seen.set(Some((loaded(FAKE), loot.1)));
        });
        assert_eq!(
            inside.get(),
            Some((true, 1)),
            "the module stayed loaded while the bus lent its payload"
        );
        assert!(!dropped.get());
        // The next drain retries it: nothing is lent any more, so the unload finishes and drops
        // the payload before it would unmap.
        crate::main_thread::process_queue();
        assert!(!loaded(FAKE));
        assert!(
            dropped.get(),
            "the unload dropped the module's retained message"
        );
        assert_eq!(track::count(FAKE.0), 0);
        track::remove_range(FAKE.0);
    }

    /// R3 (and MB4, R5): an unload runs to its end when a `Drop` it runs panics, then resumes
    /// that panic. Without it, the first panicking `Drop` stopped the unload halfway: the
    /// module's other subscriptions stayed (its code went on running after its shut-down), and
    /// the module stayed "being unloaded" for good.
    #[test]
    fn r3_an_unload_completes_when_a_drop_it_runs_panics_then_resumes_the_panic() {
        use crate::invocation::{InvocationList, panic_text};
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
        // Attribute exactly these two types' code to the fake module (see
        // `mb4_a_deferred_unload_waits_while_the_bus_lends_a_value_of_the_module`).
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
                leaving: None,
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

    /// R5, M4: a subscription of the module that its unload finds in a list that is
    /// broadcasting can only be marked removed: its callable stays in its slot until that
    /// broadcast ends (the list's settle drops it then). The unload ran inside a broadcast of a
    /// list that held none of the module's code when it was asked for (so it was not refused);
    /// a `Drop` the unload ran subscribed the module's code to that list. Such a callable must
    /// keep the library mapped: without the count, the release reported nothing left, the
    /// library was unmapped, and the settle then ran the `Drop` of a callable whose code was
    /// gone.
    #[test]
    fn r5_a_module_callable_whose_removal_waits_for_a_broadcast_keeps_the_library_mapped() {
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
        // `mb4_a_deferred_unload_waits_while_the_bus_lends_a_value_of_the_module`).
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
            let (left, swept) = super::release_values(FAKE);
            seen.set(Some((left, swept, dropped.get())));
        });
        assert_eq!(
            inside.get(),
            Some((1, 0, 0)),
            "the callable left in the broadcasting list is counted as left (the library stays \
             mapped), and is not dropped while the list broadcasts"
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
                leaving: None,
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
                leaving: None,
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
                leaving: None,
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
