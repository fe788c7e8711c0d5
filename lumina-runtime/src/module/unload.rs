//! Unloading a game module: its shut-down, then every value of its that the records attribute to it, removed as behaviour (MB4, MB6); and reloading.

use super::kept::keep;
use super::*;

/// Unloads a module (MB4, MB6): runs its shut-down, removes everything the loader attributes to
/// it, fires `on_module_unloaded`, and keeps its library mapped (see [`unloaded`] and
/// [`unmap`]). Returns what it was.
///
/// Called from the module's own code (a subscriber, a queued task, a coroutine, a `Drop` the
/// engine runs) the unload runs at once: that code returns into its library, which stays
/// mapped. What still refers to the module afterwards (a subscription the loader could not
/// remove: on another thread's delegate, or one a running broadcast holds until it ends) is
/// counted in [`subscription_count`] of its id and named in a `tracing` warning.
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
            .map(|m| (m.info.name.as_str().to_owned(), m.unloading))
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
pub(super) fn finish_unload(id: ModuleId, started: bool) -> Result<ModuleInfo, ModuleError> {
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
            module = loaded.info.name.as_str(),
            "lumina: game module `{}` had installed the script delegates' destroyed hook; it \
             was uninstalled with the module (releases are logged as leaks until a host \
             installs one)",
            loaded.info.name.as_str()
        );
    }
    // Only now: a value the drops above made is attributed to the module while its range is
    // registered, so the rounds above find it.
    track::remove_range(id.0);
    released.warn(loaded.info.name.as_str());
    let panicked = drops.into_text();
    if !settled {
        tracing::warn!(
            module = loaded.info.name.as_str(),
            "lumina: unloading game module `{}` ran `Drop`s that went on subscribing, queuing \
             or spawning its code round after round; what they made last is still there",
            loaded.info.name.as_str()
        );
    }
    let referenced = track::count(id.0);
    if referenced > 0 {
        tracing::warn!(
            module = loaded.info.name.as_str(),
            "lumina: game module `{}` was unloaded with {referenced} subscription(s) or \
             value(s) still referring to it: on delegates of other threads, which the game \
             thread cannot remove, or held by a broadcast (or bus delivery) running around the \
             unload until it ends; its library stays mapped, so they run its old code",
            loaded.info.name.as_str()
        );
    }
    let info = loaded.info.clone();
    keep(loaded);
    if let Some(text) = panicked {
        Drops::resume_text(text);
    }
    match failed {
        Some(message) => Err(ModuleError::ShutDownFailed {
            module: info.name.as_str().to_owned(),
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
            .and_then(|m| m.info.path.as_deref().map(Path::to_owned))
    })
    .flatten()
    .ok_or(ModuleError::NotLoaded { id })?;
    check_unload(id)?;
    finish_unload(id, true)?;
    load(path)
}
