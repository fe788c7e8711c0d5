//! Loading a game module: its library copied, mapped and checked, then its start-up run (MB1-MB3).

use super::unload::finish_unload;
use super::*;

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
    match modules(|modules| modules.iter().any(|m| m.info.name.as_str() == name)) {
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
    let info = ModuleInfo {
        name: name.clone(),
        path: Some(path.into()),
    };
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

/// The files mapped in the process now.
fn mapped_files() -> std::collections::HashSet<String> {
    mappings().into_iter().map(|(file, ..)| file).collect()
}
