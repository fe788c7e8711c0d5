//! The fixture engine of tests/modules.rs. `module_host <scenario> <dir>`, where `dir` holds the
//! built libraries (`v1.so`, `v2.so`, `own.so`, `mismatch.so`, `plain.so`, `failing.so`,
//! `reflecting.so`, `reentrant.so`). Prints a trace. `module_host reentry <dir> <plan>...` runs
//! the `reentrant_module` fixture through each plan (R5). `exit-loaded` and `exit-unloads` end a
//! game thread of their own with a module loaded.

use engine_api::{Hit, engine};
use lumina::core_delegates::{SettingsClass, WorldId};
use lumina::event::AppTickEvent;
use lumina::module::{self, EntryReport, ModuleEntry, ModuleError, ModuleId};
use lumina::{CoreDelegates, DelegateHandle, main_thread};
use std::ffi::c_void;
use std::path::{Path, PathBuf};

static AUDIO: SettingsClass = SettingsClass::new("AudioSettings", "Engine");

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().expect("usage: module_host <scenario> <dir>");
    let dir = PathBuf::from(args.next().expect("usage: module_host <scenario> <dir>"));
    let plans: Vec<&'static str> = args.map(|plan| &*plan.leak()).collect();
    if scenario == "exit-loaded" {
        // On a game thread of its own, whose thread-locals are destroyed when it exits.
        std::thread::spawn(move || exit_loaded(&dir))
            .join()
            .expect("the game thread ends normally");
        println!("engine: the game thread exited");
        return;
    }
    if scenario == "exit-unloads" {
        std::thread::spawn(move || exit_unloads(&dir))
            .join()
            .expect("the game thread ends normally");
        println!("engine: the game thread exited");
        return;
    }
    main_thread::designate_game_thread();
    match scenario.as_str() {
        "cycle" => cycle(&dir),
        "errors" => errors(&dir),
        "own-copy-touch" => own_copy_touch(&dir),
        "reentry" => reentry(&dir, &plans),
        "bus" => bus(&dir),
        "findings" => findings(&dir),
        other => panic!("unknown scenario {other}"),
    }
}

/// The game thread exits with the `reentrant_module` fixture still loaded and a coroutine task
/// of it waiting (R5): the thread-local of coroutine tasks was made first (by the engine's own
/// task), so it is destroyed after the module list, and drops the module's task then.
fn exit_loaded(dir: &Path) {
    main_thread::designate_game_thread();
    let _engine_task = lumina::coroutine::spawn_local(std::future::pending::<()>());
    engine_api::set_plan("coroutine-drop-stay");
    println!(
        "engine: load: {}",
        result(module::load(dir.join("reentrant.so")))
    );
    println!("engine: the game thread exits with the module loaded");
}

/// An engine that unloads its modules when it is dropped.
struct Engine {
    modules: Vec<ModuleId>,
    dir: PathBuf,
}

impl Drop for Engine {
    fn drop(&mut self) {
        println!(
            "engine: dropped at thread exit; modules listed: {}",
            module::loaded().len()
        );
        // The task the module's start-up queued runs now (its library stays mapped).
        println!(
            "engine: queue at exit ran {} task(s)",
            main_thread::process_queue()
        );
        for id in self.modules.drain(..) {
            println!("engine: unload at exit: {}", result(module::unload(id)));
            println!("engine: reload at exit: {}", result(module::reload(id)));
            println!(
                "engine: mapped path at exit: {:?}, source changed: {}",
                module::mapped_path(id),
                module::source_changed(id)
            );
        }
        println!(
            "engine: load at exit: {}",
            result(module::load(self.dir.join("v2.so")))
        );
    }
}

thread_local! {
    /// The engine, kept in a thread local of its game thread.
    static ENGINE: std::cell::RefCell<Option<Engine>> = const { std::cell::RefCell::new(None) };
}

/// The game thread exits while an engine kept in a thread local still holds a loaded module
/// (R2): the engine was made first, so its thread local is destroyed after the module list, and
/// its `Drop` asks the module functions after the list is gone.
fn exit_unloads(dir: &Path) {
    main_thread::designate_game_thread();
    ENGINE.with_borrow_mut(|engine| {
        *engine = Some(Engine {
            modules: Vec::new(),
            dir: dir.to_owned(),
        });
    });
    let id = module::load(dir.join("v1.so")).expect("the game module loads");
    ENGINE.with_borrow_mut(|engine| engine.as_mut().expect("made above").modules.push(id));
    println!("engine: the game thread exits with the module loaded");
}

/// One frame: every delegate the module subscribes to fires.
fn frame(number: u32) {
    println!("engine: frame {number}");
    let core = CoreDelegates::get();
    engine().on_tick.broadcast(number);
    engine().on_hit.broadcast(&Hit {
        damage: number as f32 + 0.5,
    });
    let _ = engine().input.dispatch(AppTickEvent::new(number as f32));
    core.on_settings_saved().broadcast(&AUDIO);
    core.on_world_travelled()
        .broadcast(WorldId::new_unique(), WorldId::new_unique());
    println!("engine: queue ran {} task(s)", main_thread::process_queue());
}

/// Whether `path` is mapped in this process.
fn mapped(path: &Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.contains(&*path.to_string_lossy())
}

fn counts() {
    let core = CoreDelegates::get();
    println!(
        "engine: subscribers: on_tick {}, on_hit {}, input {}, on_settings_saved {}, \
         on_world_travelled {}, on_pre_engine_shutdown {}",
        engine().on_tick.len(),
        engine().on_hit.len(),
        engine().input.len(),
        core.on_settings_saved().len(),
        core.on_world_travelled().len(),
        core.on_pre_engine_shutdown().len(),
    );
}

/// A rebuild: the new file replaces the old one at the module's path.
fn rebuild(from: &Path, to: &Path) {
    std::fs::remove_file(to).unwrap();
    std::fs::copy(from, to).unwrap();
}

/// Whether the engine finds the game module's tag by name (GB1): registered by the module's
/// start-up in the one registry of the process (MB1), kept after the unload (the registry's own
/// copy of the name, R5).
fn module_tag(when: &str) {
    match lumina::bus::Tag::find("Module.Loot.Found") {
        Ok(tag) => println!(
            "engine: {tag} {when}: carries {}",
            tag.payload_type_name().unwrap_or("nothing")
        ),
        Err(_) => println!("engine: Module.Loot.Found {when}: not registered"),
    }
}

fn cycle(dir: &Path) {
    let core = CoreDelegates::get();
    let _ = core
        .on_module_loaded()
        .add_lambda(|info| println!("engine: on_module_loaded {}", info.name));
    let _ = core
        .on_module_unloaded()
        .add_lambda(|| println!("engine: on_module_unloaded"));
    let _ = engine()
        .on_tick
        .add_lambda(|number| println!("engine: tick {number}"));
    let path = dir.join("libgame_module.so");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(dir.join("v1.so"), &path).unwrap();

    module_tag("before the load");
    let before = DelegateHandle::new_unique();
    let v1 = module::load(&path).unwrap();
    let after = DelegateHandle::new_unique();
    println!(
        "engine: loaded {v1}; engine handles around the load: {} and {}",
        before.id(),
        after.id()
    );
    println!(
        "engine: {} subscriptions attributed to the module",
        module::subscription_count(v1)
    );
    module_tag("after the load");
    counts();
    frame(1);

    rebuild(&dir.join("v2.so"), &path);
    println!("engine: source changed: {}", module::source_changed(v1));
    let v1_mapped = module::mapped_path(v1).unwrap();
    let v2 = module::reload(v1).unwrap();
    println!(
        "engine: reloaded as {v2}; v1 still mapped: {}",
        mapped(&v1_mapped)
    );
    counts();
    frame(2);

    let v2_mapped = module::mapped_path(v2).unwrap();
    let info = module::unload(v2).unwrap();
    println!(
        "engine: unloaded {}; v2 still mapped: {}",
        info.name,
        mapped(&v2_mapped)
    );
    counts();
    frame(3);
    module_tag("after the unload");
    println!("engine: unload again: {}", module::unload(v2).unwrap_err());
    // MB6: both versions stay mapped until the engine gives their memory back explicitly.
    let unloaded = module::unloaded();
    println!(
        "engine: kept mapped: {} version(s), each of them bytes: {}, still referenced: {}",
        unloaded.len(),
        unloaded.iter().all(|version| version.bytes > 0),
        still_referenced()
    );
    for version in unloaded {
        // SAFETY: nothing of either version is reachable any more: every subscription, task
        // and value of theirs went with their unloads (the counts above), and the engine kept
        // no `&'static` of theirs.
        let result = unsafe { module::unmap(version.id) };
        println!(
            "engine: unmap {}: {result:?}; still mapped: {}",
            version.id,
            mapped(&version.mapped_path)
        );
    }
    core.on_pre_engine_shutdown().broadcast_and_clear();
    println!("engine: done");
}

fn show(what: &str, result: Result<ModuleId, ModuleError>) -> Option<ModuleId> {
    match result {
        Ok(id) => {
            println!("{what}: loaded {id}");
            Some(id)
        }
        Err(error) => {
            let variant = format!("{error:?}");
            let variant = variant.split([' ', '{']).next().unwrap().to_owned();
            println!("{what}: {variant}: {error}");
            None
        }
    }
}

fn errors(dir: &Path) {
    let text = dir.join("not_a_library.txt");
    std::fs::write(&text, "just text").unwrap();
    show("missing", module::load(dir.join("missing.so")));
    show("text", module::load(&text));
    show("plain", module::load(dir.join("plain.so")));
    show("mismatch", module::load(dir.join("mismatch.so")));
    show("own", module::load(dir.join("own.so")));
    show("failing", module::load(dir.join("failing.so")));
    println!(
        "failing: on_tick subscribers left: {}, loaded modules: {}",
        engine().on_tick.len(),
        module::loaded().len()
    );
    let id = show("v1", module::load(dir.join("v1.so"))).unwrap();
    show("v1 again", module::load(dir.join("v1.so")));
    // Unloading while a delegate the module subscribed to broadcasts, from the engine's
    // subscriber that runs first: allowed (MB6), and the module's subscribers that were not
    // reached yet do not run (M3).
    let during =
        engine()
            .on_tick
            .subscribe()
            .priority(1)
            .add_lambda(move |_| match module::unload(id) {
                Ok(info) => println!("unload during a broadcast: {}", info.name),
                Err(error) => println!("unload during a broadcast: {error}"),
            });
    engine().on_tick.broadcast(7);
    assert!(engine().on_tick.remove(during));
    match module::unload(id) {
        Ok(info) => println!("unload again: {}", info.name),
        Err(error) => println!("unload again: {error}"),
    }
    // A module whose reflected types the registry cannot forget stays mapped.
    let reflecting = show("reflecting", module::load(dir.join("reflecting.so"))).unwrap();
    let reflecting_mapped = module::mapped_path(reflecting).unwrap();
    let _ = module::unload(reflecting).unwrap();
    println!(
        "reflecting: unloaded; still mapped: {}; registry still has ModuleScore: {}",
        mapped(&reflecting_mapped),
        lumina::reflect::PayloadInfo::find("ModuleScore").is_some()
    );
    // SAFETY: refused before anything is unmapped (the registry holds its types).
    let refused = unsafe { module::unmap(reflecting) };
    println!(
        "reflecting: unmap: {}; still mapped: {}",
        result(refused),
        mapped(&reflecting_mapped)
    );
    // The task the module queued at start-up was never run: unloading dropped it.
    println!("engine: queue ran {} task(s)", main_thread::process_queue());
    counts();
    println!("engine: done");
}

/// A module on the engine's message bus, loaded and unloaded twice (R5, MB4, GB7): its listeners
/// go, and the messages of its own payload types it left behind (retained, queued, in the inbox)
/// are dropped before the unmapping.
fn bus(dir: &Path) {
    let bus = &engine().bus;
    let path = dir.join("libbus_module.so");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(dir.join("bus.so"), &path).unwrap();
    // Squad 10 hears what bubbles up to it, through the parent relation the module gives.
    let _squad =
        bus.subscribe()
            .entity(10)
            .listen(&engine_api::bus_tags::ENGINE_FRAME, |frame, message| {
                println!(
                    "engine: squad 10 heard frame {frame} for {:?}",
                    message.entity()
                );
            });
    for round in 1..=2 {
        let id = module::load(&path).unwrap();
        println!(
            "engine: loaded; listeners {}, posted {}",
            bus.subscriptions().len(),
            bus.posted()
        );
        bus.send_to(&engine_api::bus_tags::ENGINE_FRAME, 5, round);
        let mapped_copy = module::mapped_path(id).unwrap();
        let before = engine_api::payloads_dropped();
        let info = module::unload(id).unwrap();
        println!(
            "engine: unloaded {}; still mapped: {}; module payloads dropped by the unload: {}",
            info.name,
            mapped(&mapped_copy),
            engine_api::payloads_dropped() - before
        );
        println!(
            "engine: listeners {}, posted {}",
            bus.subscriptions().len(),
            bus.posted()
        );
        // The module's parent relation went with it: this reaches nobody.
        bus.send_to(&engine_api::bus_tags::ENGINE_FRAME, 5, 10 + round);
        println!("engine: delivered {}", bus.deliver_posted());
    }
    println!("engine: done");
}

/// Calls the start-up of the module with its own runtime directly, bypassing the loader's
/// check: its first touch of engine state must name the cause (MB2).
fn own_copy_touch(dir: &Path) {
    unsafe extern "C" fn write(sink: *mut c_void, message: *const u8, len: usize) {
        // SAFETY: the String below; `len` readable bytes.
        unsafe {
            let sink = &mut *sink.cast::<String>();
            sink.push_str(&String::from_utf8_lossy(std::slice::from_raw_parts(
                message, len,
            )));
        }
    }
    // SAFETY: a game-module fixture built by the test.
    let library = unsafe { libloading::Library::new(dir.join("own.so")) }.unwrap();
    // SAFETY: exported by `game_module!` with this signature.
    let entry =
        unsafe { library.get::<extern "C" fn() -> *const ModuleEntry>(b"lumina_game_module_v1") }
            .unwrap()();
    let mut message = String::new();
    let report = EntryReport {
        sink: (&raw mut message).cast(),
        write,
    };
    // SAFETY: the record of the loaded library; `report` lives for the call.
    let ran = unsafe { ((*entry).start_up)(&report) };
    println!("own copy: start-up ran to the end: {ran}");
    println!("own copy: {message}");
}

/// What the loader still knows of that refers to an unloaded module (MB6).
/// The engine's input handler: keeps the class name of every event it sees (a `&'static str`).
struct NameKeeper;

impl lumina::event::EventHandler for NameKeeper {
    fn on_event(&self, event: &mut dyn lumina::event::Event) -> bool {
        engine_api::keep_name(event.class_name());
        false
    }
}

/// Issue 30's five findings: a module (`findings.so`, with its helper library) stores its code
/// where records by code address cannot see it. Its unload removes what it subscribed, queued,
/// posted and retained, leaves the engine's values alone, and what it handed out as `&'static`
/// stays readable, as its libraries stay mapped (MB6).
fn findings(dir: &Path) {
    use engine_api::bus_tags::{ENGINE_CALL, ENGINE_MIRROR, ENGINE_STATE};
    let core = CoreDelegates::get();
    let bus = &engine().bus;
    // The engine's own values first: its boxed tick (the instantiation a module shares), a
    // delivered post (which makes the tag's queue), a retained state.
    let _ = engine_api::add_boxed_tick(Box::new(|frame| println!("engine: boxed tick {frame}")));
    engine_api::enqueue_boxed(Box::new(|| println!("engine: boxed task ran")));
    let coroutine = engine_api::spawn_boxed(Box::pin(async {
        println!("engine: boxed coroutine polled");
    }));
    println!("engine: queue ran {} task(s)", main_thread::process_queue());
    println!("engine: boxed coroutine {:?}", coroutine.status());
    let _ = bus.listen(&ENGINE_CALL, |call, _| call());
    bus.post(
        &ENGINE_CALL,
        Box::new(|| println!("engine: posted call ran")) as Box<dyn Fn()>,
    );
    println!("engine: delivered {}", bus.deliver_posted());
    bus.send(
        &ENGINE_STATE,
        Box::new(|| println!("engine: retained state")) as Box<dyn Fn()>,
    );
    let _ = core
        .on_settings_saved()
        .add_lambda(|class| engine_api::keep_name(class.name));
    // Held weakly by the processor: kept alive here.
    let name_keeper = std::rc::Rc::new(NameKeeper);
    let _ = engine().input.register_event_handler(&name_keeper, 0);
    // The module's helper library, found through the library path: mapped by the module's load.
    let helper_mapped = || {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .contains("/libmodule_helper.so")
    };
    println!("engine: helper mapped before the load: {}", helper_mapped());

    let id = module::load(dir.join("findings.so")).unwrap();
    // The engine overwrites the module's mirror state: that value is the engine's.
    bus.send(
        &ENGINE_MIRROR,
        Box::new(|| println!("engine: mirror state")) as Box<dyn Fn()>,
    );
    let report = |when: &str| {
        println!(
            "engine: {when}: on_tick {}, on_settings_saved {}, queued {}, coroutines {}, \
             posted {}, helper mapped {}",
            engine().on_tick.len(),
            core.on_settings_saved().len(),
            main_thread::pending(),
            lumina::coroutine::task_count(),
            bus.posted(),
            helper_mapped()
        );
    };
    report("loaded");
    println!(
        "engine: {} subscriptions attributed to the module",
        module::subscription_count(id)
    );
    let info = module::unload(id).unwrap();
    println!("engine: unloaded {}", info.name);
    report("unloaded");

    // Nothing of the module's runs any more.
    engine().on_tick.broadcast(1);
    core.on_settings_saved().broadcast(&AUDIO);
    println!("engine: queue ran {} task(s)", main_thread::process_queue());
    println!("engine: delivered {}", bus.deliver_posted());
    for (name, key) in [("state", &ENGINE_STATE), ("mirror", &ENGINE_MIRROR)] {
        println!("engine: {name} retained: {}", bus.retained(key).is_some());
        let late = bus.listen(key, |call, _| call());
        assert!(bus.remove(late));
    }
    // Names the module handed out stay readable: its library is still mapped.
    println!("engine: names kept: {:?}", engine_api::kept_names());
    let unloaded = module::unloaded();
    println!(
        "engine: kept mapped: {} version(s), bytes > 0: {}, still referenced: {}",
        unloaded.len(),
        unloaded.iter().all(|version| version.bytes > 0),
        still_referenced()
    );
    println!("engine: done");
}

fn still_referenced() -> usize {
    module::unloaded()
        .iter()
        .map(|version| module::subscription_count(version.id))
        .sum()
}

/// How many copies of the reentrant module are mapped in this process.
fn reentrant_copies_mapped() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut copies: Vec<&str> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| path.contains("lumina-modules-") && path.contains("reentrant."))
        .collect();
    copies.dedup();
    copies.len()
}

fn result<T: std::fmt::Debug>(result: Result<T, ModuleError>) -> String {
    match result {
        Ok(ok) => format!("Ok({ok:?})"),
        Err(error) => format!("Err({error})"),
    }
}

/// `process_queue`, whose panic (a module's task's) is caught and printed.
fn drain() {
    match std::panic::catch_unwind(main_thread::process_queue) {
        Ok(ran) => println!("engine: queue ran {ran} task(s)"),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map_or("?".to_owned(), |text| (*text).to_owned());
            println!("engine: the drain panicked: {message}");
        }
    }
}

/// The reentrant module through each plan (R5): load, a frame, a drain, then unload whatever
/// is still loaded, then check that nothing of it is left.
fn reentry(dir: &Path, plans: &[&'static str]) {
    let path = dir.join("reentrant.so");
    for (frame, &plan) in (1..).zip(plans) {
        println!("engine: plan {plan}");
        engine_api::set_plan(plan);
        if plan == "engine-callback" {
            bind_site_after_unload(&path);
            continue;
        }
        if plan == "queued-behind" {
            // Ahead of the module's own task in the queue: its unload must drop that task,
            // which waits in the same drain.
            main_thread::enqueue(|| {
                for (id, info) in module::loaded() {
                    println!(
                        "engine: task unloads {} ({id}): {}",
                        info.name,
                        result(module::unload(id))
                    );
                }
            });
        }
        println!("engine: load: {}", result(module::load(&path)));
        if !plan.starts_with("queued-drop") {
            engine().on_tick.broadcast(frame);
            drain();
        }
        if plan == "single-cast" {
            // The engine holds the module's callable for a call: its unload must wait.
            let held = engine().score_query.borrow().callable();
            for (id, info) in module::loaded() {
                println!(
                    "engine: unload {} ({id}) while the score query is held: {}",
                    info.name,
                    result(module::unload(id))
                );
            }
            drop(held);
        }
        if plan.starts_with("removed-drop") {
            engine().on_tick.clear();
            println!("engine: cleared on_tick");
        }
        // A deferred reload may load a new version at a drain: unload until none is left.
        for _ in 0..3 {
            if module::loaded().is_empty() {
                break;
            }
            for (id, info) in module::loaded() {
                println!(
                    "engine: unload {} ({id}): {}",
                    info.name,
                    result(module::unload(id))
                );
            }
            drain();
        }
        if plan == "queued-sender" {
            // Prunes the entries whose object is gone: the module's, if its unload left it.
            println!("engine: queued targets {}", main_thread::queued_targets());
        }
        if plan == "single-cast" {
            // The engine's own single-cast delegate, bound by the module: unbound by its unload.
            let query = engine().score_query.borrow();
            println!(
                "engine: score query bound {}, 41 -> {:?}",
                query.is_bound(),
                query.execute_if_bound(41)
            );
            let executed =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| query.execute(41)));
            let message = executed.map_or_else(
                |payload| {
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_default()
                },
                |answer| format!("answered {answer}"),
            );
            println!("engine: score query execute: {message}");
            drop(query);
            // The engine drops its delegate: nothing of the module is left in it.
            *engine().score_query.borrow_mut() = lumina::Delegate::new();
            println!("engine: score query dropped");
        }
        if plan == "viewport" {
            // The engine adds a viewport of its own: the registry prunes the module's dead one.
            let mine = std::rc::Rc::new(|_: &mut dyn lumina::event::Event| false);
            let rect = lumina::event::Rect::new(0.0, 0.0, 10.0, 10.0);
            let _ = engine().viewports.add_viewport(&mine, rect);
            println!("engine: viewports {}", engine().viewports.len());
        }
        if plan.starts_with("coroutine") || plan.ends_with("-subscribe") {
            // A tick after the unload: a task of the module must not wake, a subscription it
            // made must not run (MB4).
            engine().on_tick.broadcast(100);
            drain();
        }
        println!(
            "engine: after {plan}: loaded {}, still referenced {}, on_tick {}, copies mapped {}",
            module::loaded().len(),
            still_referenced(),
            engine().on_tick.len(),
            reentrant_copies_mapped(),
        );
    }
    println!("engine: done");
}

/// A subscription whose code is the engine's, made by the module, outlives it; its bind site
/// (in the module's code) must still be readable after the unmap (R5).
fn bind_site_after_unload(path: &Path) {
    let id = module::load(path).unwrap();
    let kept = engine().on_tick.subscriptions();
    println!(
        "engine: unload: {}; copies mapped {}",
        result(module::unload(id)),
        reentrant_copies_mapped()
    );
    engine().on_tick.broadcast(9);
    for subscription in engine().on_tick.subscriptions() {
        let site = subscription.bind_site.expect("recorded");
        println!(
            "engine: listed after the unload: {}:{}",
            site.file, site.line
        );
    }
    for subscription in kept {
        let site = subscription.bind_site.expect("recorded");
        println!(
            "engine: kept from before the unload: {}:{}",
            site.file, site.line
        );
    }
    println!("engine: debug after the unload: {:?}", engine().on_tick);
    engine().on_tick.clear();
}
