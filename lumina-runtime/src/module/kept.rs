//! Unloaded versions whose libraries stay mapped (MB6), and the explicit, `unsafe` unmapping.

use super::*;

/// An unloaded version of a game module whose library stays mapped (MB6): what [`unloaded`]
/// lists. A snapshot, with public fields; what still refers to its code is
/// [`subscription_count`]`(version.id)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnloadedModule {
    /// The id it had while loaded.
    pub id: ModuleId,
    /// What it was (name, path).
    pub info: ModuleInfo,
    /// The copy of its library that stays mapped.
    pub mapped_path: PathBuf,
    /// How many bytes of address space its library and the libraries mapped with it take.
    pub bytes: usize,
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
pub(super) fn keep(loaded: Loaded) {
    let unloaded = UnloadedModule {
        id: loaded.id,
        bytes: loaded.bytes(),
        info: loaded.info,
        mapped_path: loaded.mapped,
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
/// let bytes: usize = versions.iter().map(|version| version.bytes).sum();
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
/// ([`subscription_count`] of its id is not 0).
///
/// # Safety
///
/// Nothing of the module's code or data may be reachable any more: no callable, waker, task,
/// message or value of its types anywhere (the loader's records cover only what it could
/// attribute, see the [module docs](crate::module)), no `&'static` reference into its data (a
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
        (
            unloaded.info.name.as_str().to_owned(),
            unloaded.mapped_path.clone(),
        )
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
    let _ = std::fs::remove_file(&unloaded.mapped_path);
    Ok(())
}
