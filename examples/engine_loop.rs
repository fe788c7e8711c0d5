//! A small headless engine built on lumina's core delegates and main-thread queue.
//!
//! Run with `cargo run --example engine_loop`. It prints a trace of what happens, in order:
//!
//! 1. Modules start up and subscribe to the engine-wide signals (the place to subscribe to the
//!    one-shot lifecycle signals), then `on_module_loaded` announces each.
//! 2. The engine fires `on_pre_engine_init` and `on_post_engine_init` (each exactly once).
//! 3. Frames run. Worker threads (a content watcher, a settings writer) do their work off the
//!    game thread and `main_thread::enqueue` the broadcast of their result; the game thread runs
//!    it at `main_thread::process_queue()`. A service created lazily subscribes to
//!    `on_post_engine_init` too late: it is reported, and it checks `has_fired()` instead.
//! 4. The engine travels between two worlds: subscribers drop what they cached for the old one,
//!    which they only get as a `WorldId`.
//! 5. A settings class is saved: the open settings editor refreshes live.
//! 6. Gameplay asks to quit twice: with the editor bound to `on_game_quit_requested` the play
//!    session ends and the process goes on; once the editor is gone, nothing is bound and the
//!    engine shuts down and exits the process.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::thread;
use std::time::Instant;

use lumina::core_delegates::{CoreDelegates, ModuleInfo, QuitOutcome, SettingsClass, WorldId};
use lumina::main_thread;

/// The settings class the example saves.
static INPUT_SETTINGS: SettingsClass = SettingsClass::new("InputSettings", "Engine");
/// Another settings class, which subscribers interested in input ignore.
static AUDIO_SETTINGS: SettingsClass = SettingsClass::new("AudioSettings", "Engine");

/// The persisted settings ("the config file"): written by the settings writer thread, read by the
/// game thread when it learns that a class was saved.
static CONFIG_FILE: Mutex<Vec<(&str, f32)>> = Mutex::new(Vec::new());

fn saved_value(key: &str) -> Option<f32> {
    let config = CONFIG_FILE.lock().unwrap();
    config
        .iter()
        .rev()
        .find(|(k, _)| *k == key)
        .map(|&(_, v)| v)
}

/// The name of the calling thread, for the trace.
fn thread_name() -> String {
    thread::current().name().unwrap_or("unnamed").to_owned()
}

// -------------------------------------------------------------------------------------------------
// Modules: each subscribes from its start-up.
// -------------------------------------------------------------------------------------------------

/// Draws the world; caches entity handles per world, which must go when the world does.
struct Renderer {
    cached_entities: RefCell<HashMap<WorldId, Vec<u32>>>,
}

impl Renderer {
    fn start_up() -> Rc<Renderer> {
        let renderer = Rc::new(Renderer {
            cached_entities: RefCell::new(HashMap::new()),
        });
        let core = CoreDelegates::get();
        println!("[renderer] start-up: subscribing to the lifecycle signals and world travel");
        let _ = core
            .on_pre_engine_init()
            .add_member(&renderer, |_: &Renderer| {
                println!("[renderer] on_pre_engine_init: mounting Content/game.pak");
            });
        let _ = core
            .on_post_engine_init()
            .add_member(&renderer, |_: &Renderer| {
                println!("[renderer] on_post_engine_init: render thread up, first frame next");
            });
        let _ = core
            .post_world_unload()
            .add_member(&renderer, |_: &Renderer| {
                println!("[renderer] post_world_unload: streaming pool flushed");
            });
        let _ = core
            .on_world_travelled()
            .add_member(&renderer, Renderer::on_world_travelled);
        let _ = core
            .on_pre_engine_shutdown()
            .add_member(&renderer, |_: &Renderer| {
                println!("[renderer] on_pre_engine_shutdown: releasing GPU resources");
            });
        renderer
    }

    fn cache(&self, world: WorldId, entities: &[u32]) {
        self.cached_entities
            .borrow_mut()
            .insert(world, entities.to_vec());
    }

    fn on_world_travelled(&self, old: WorldId, new: WorldId) {
        // `old` is already torn down: it is only good for comparing with what we cached.
        let dropped = self.cached_entities.borrow_mut().remove(&old);
        let count = dropped.map_or(0, |handles| handles.len());
        println!(
            "[renderer] on_world_travelled({old} -> {new}): dropped {count} cached entity handles \
             of {old}; still cached for {} world(s)",
            self.cached_entities.borrow().len()
        );
    }
}

/// The editor: a settings panel and a text-asset editor that may be open, and the play-in-editor
/// session that `on_game_quit_requested` ends.
struct Editor {
    settings_panel_sensitivity: Cell<f32>,
    open_file: RefCell<PathBuf>,
    play_sessions_ended: Cell<u32>,
}

impl Editor {
    fn start_up() -> Rc<Editor> {
        let editor = Rc::new(Editor {
            settings_panel_sensitivity: Cell::new(saved_value("mouse_sensitivity").unwrap_or(1.0)),
            open_file: RefCell::new(PathBuf::from("Content/Scripts/door.lua")),
            play_sessions_ended: Cell::new(0),
        });
        let core = CoreDelegates::get();
        println!(
            "[editor] start-up: settings panel open on {INPUT_SETTINGS} (mouse_sensitivity {}), \
             {} open in the text editor",
            editor.settings_panel_sensitivity.get(),
            editor.open_file.borrow().display()
        );
        let _ = core
            .on_settings_saved()
            .add_member(&editor, Editor::on_settings_saved);
        let _ = core
            .on_content_file_renamed()
            .add_member(&editor, Editor::on_content_file_renamed);
        let _ = core
            .on_game_quit_requested()
            .add_member(&editor, Editor::end_play_session);
        editor
    }

    fn on_settings_saved(&self, class: &SettingsClass) {
        if class != &INPUT_SETTINGS {
            return;
        }
        let before = self.settings_panel_sensitivity.get();
        let after = saved_value("mouse_sensitivity").unwrap_or(before);
        self.settings_panel_sensitivity.set(after);
        println!(
            "[editor] on_settings_saved({class}): settings panel refreshed live, \
             mouse_sensitivity {before} -> {after}"
        );
    }

    fn on_content_file_renamed(&self, old: &Path, new: &Path) {
        if *self.open_file.borrow() == old {
            *self.open_file.borrow_mut() = new.to_path_buf();
            println!(
                "[editor] on_content_file_renamed: the open editor now saves to {}",
                new.display()
            );
        }
    }

    fn end_play_session(&self) {
        self.play_sessions_ended
            .set(self.play_sessions_ended.get() + 1);
        println!(
            "[editor] on_game_quit_requested: play-in-editor session {} ended; the editor keeps \
             running",
            self.play_sessions_ended.get()
        );
    }
}

/// Gameplay input: its action map rebuilds when the input settings are saved.
fn start_up_input() {
    println!("[input] start-up: subscribing to on_settings_saved");
    let _ = CoreDelegates::get()
        .on_settings_saved()
        .add_lambda(|class| {
            if class == &INPUT_SETTINGS {
                println!("[input] on_settings_saved({class}): action map rebuilt");
            }
        });
}

/// Hot reload: filters content changes by extension.
fn start_up_hot_reload() {
    println!("[hot-reload] start-up: subscribing to on_content_file_modified");
    let _ = CoreDelegates::get()
        .on_content_file_modified()
        .add_lambda(|path| {
            let action = match path.extension().and_then(|ext| ext.to_str()) {
                Some("lua") => "reloading script",
                Some("png") => "re-uploading texture",
                _ => "ignored",
            };
            println!(
                "[hot-reload] on_content_file_modified({}) on thread {}: {action}",
                path.display(),
                thread_name()
            );
        });
}

// -------------------------------------------------------------------------------------------------
// The engine.
// -------------------------------------------------------------------------------------------------

pub(crate) struct Engine {
    started: Instant,
    frame: Cell<u32>,
    world: Cell<WorldId>,
    world_names: RefCell<HashMap<WorldId, &'static str>>,
    renderer: Rc<Renderer>,
    editor: RefCell<Option<Rc<Editor>>>,
}

/// Starts a module (which subscribes to what it needs), then announces it.
fn load_module<T>(info: ModuleInfo, start_up: impl FnOnce() -> T) -> T {
    let module = start_up();
    CoreDelegates::get().on_module_loaded().broadcast(&info);
    module
}

impl Engine {
    pub(crate) fn boot() -> Engine {
        let started = Instant::now();
        main_thread::designate_game_thread();
        println!("[engine] game thread designated: {}", thread_name());

        let core = CoreDelegates::get();
        let _ = core.on_module_loaded().add_lambda(|module| {
            let from = module
                .path
                .as_deref()
                .map_or("linked in".to_owned(), |path| path.display().to_string());
            println!("[engine] on_module_loaded({module}, {from})");
        });
        let _ = core
            .on_module_unloaded()
            .add_lambda(|| println!("[engine] on_module_unloaded"));

        let renderer = load_module(ModuleInfo::new("Renderer"), Renderer::start_up);
        let editor = load_module(
            ModuleInfo {
                path: Some("bin/libeditor.so".into()),
                ..ModuleInfo::new("Editor")
            },
            Editor::start_up,
        );
        load_module(ModuleInfo::new("Input"), start_up_input);
        load_module(ModuleInfo::new("HotReload"), start_up_hot_reload);
        let engine = Engine {
            started,
            frame: Cell::new(0),
            world: Cell::new(WorldId::new_unique()),
            world_names: RefCell::new(HashMap::new()),
            renderer,
            editor: RefCell::new(Some(editor)),
        };

        println!("[engine] firing on_pre_engine_init");
        core.on_pre_engine_init().broadcast_and_clear();
        let arena = engine.world.get();
        engine.world_names.borrow_mut().insert(arena, "Arena");
        engine.renderer.cache(arena, &[11, 12, 13]);
        println!("[engine] loaded world Arena ({arena})");
        println!("[engine] firing on_post_engine_init");
        core.on_post_engine_init().broadcast_and_clear();
        engine
    }

    /// One frame: game work, then the tasks other threads enqueued for the game thread.
    pub(crate) fn frame(&self, work: impl FnOnce()) {
        self.frame.set(self.frame.get() + 1);
        println!("-- frame {} --", self.frame.get());
        work();
        let ran = main_thread::process_queue();
        println!(
            "[engine] frame {}: process_queue ran {ran} task(s) on thread {}",
            self.frame.get(),
            thread_name()
        );
    }

    pub(crate) fn travel(&self, to: &'static str) {
        let core = CoreDelegates::get();
        let old = self.world.get();
        let old_name = self.world_names.borrow_mut().remove(&old).unwrap_or("?");
        println!("[engine] travel {old_name} ({old}) -> {to}: tearing down {old_name}");
        core.post_world_unload().broadcast();
        let new = WorldId::new_unique();
        self.world.set(new);
        self.world_names.borrow_mut().insert(new, to);
        self.renderer.cache(new, &[21, 22]);
        println!("[engine] loaded world {to} ({new})");
        core.on_world_travelled().broadcast(old, new);
    }

    fn unload_editor(&self) {
        if let Some(editor) = self.editor.borrow_mut().take() {
            let core = CoreDelegates::get();
            let removed = core.on_settings_saved().remove_all(&editor)
                + core.on_content_file_renamed().remove_all(&editor)
                + core.on_game_quit_requested().remove_all(&editor);
            println!("[editor] shut down: removed its {removed} bindings");
            core.on_module_unloaded().broadcast();
        }
    }

    /// Gameplay asked to quit: the bound state of `on_game_quit_requested` is the branch.
    fn quit_requested(&self) {
        println!("[gameplay] the player chose Quit");
        match CoreDelegates::get().request_game_quit() {
            QuitOutcome::Handled => {
                println!("[engine] on_game_quit_requested was bound: the process goes on");
            }
            QuitOutcome::ExitProcess => {
                println!("[engine] on_game_quit_requested is unbound: shutting down");
                self.shut_down_and_exit();
            }
        }
    }

    fn shut_down_and_exit(&self) -> ! {
        println!("[engine] firing on_pre_engine_shutdown");
        CoreDelegates::get()
            .on_pre_engine_shutdown()
            .broadcast_and_clear();
        println!(
            "[engine] exiting the process after {} frames in {} ms",
            self.frame.get(),
            self.started.elapsed().as_millis()
        );
        std::process::exit(0);
    }
}

/// A service created lazily, the first time gameplay needs it: by then the one-shot
/// `on_post_engine_init` has fired, so subscribing to it cannot work.
fn achievements_service() {
    println!("[achievements] created lazily; subscribing to on_post_engine_init");
    let signal = CoreDelegates::get().on_post_engine_init();
    let handle = signal.add_lambda(|| println!("[achievements] never printed"));
    println!(
        "[achievements] handle valid: {}; has_fired(): {}, so it starts now instead",
        handle.is_valid(),
        signal.has_fired()
    );
}

fn main() {
    // Reports from lumina (the late subscription) go to the same trace.
    tracing_subscriber::fmt()
        .with_writer(std::io::stdout)
        .without_time()
        .with_target(false)
        .init();

    let engine = Engine::boot();

    engine.frame(|| {
        achievements_service();
        // The content watcher runs on its own thread; the game thread learns of its results
        // through the queue.
        thread::Builder::new()
            .name("content-watcher".into())
            .spawn(|| {
                for path in ["Content/Scripts/door.lua", "Content/Textures/door.png"] {
                    println!(
                        "[content-watcher] saw {path} change on thread {}",
                        thread_name()
                    );
                    main_thread::enqueue(move || {
                        CoreDelegates::get()
                            .on_content_file_modified()
                            .broadcast(Path::new(path));
                    });
                }
                let (old, new) = ("Content/Scripts/door.lua", "Content/Scripts/gate.lua");
                println!("[content-watcher] saw {old} renamed to {new}");
                main_thread::enqueue(move || {
                    CoreDelegates::get()
                        .on_content_file_renamed()
                        .broadcast(Path::new(old), Path::new(new));
                });
            })
            .unwrap()
            .join()
            .unwrap();
    });

    engine.frame(|| engine.travel("Lobby"));

    engine.frame(|| {
        // The settings writer persists off the game thread, then has the game thread announce it.
        thread::Builder::new()
            .name("settings-writer".into())
            .spawn(|| {
                CONFIG_FILE.lock().unwrap().push(("mouse_sensitivity", 2.5));
                CONFIG_FILE.lock().unwrap().push(("master_volume", 0.8));
                println!(
                    "[settings-writer] wrote {INPUT_SETTINGS} and {AUDIO_SETTINGS} to \
                     Config/Engine.ini on thread {}",
                    thread_name()
                );
                main_thread::enqueue(|| {
                    let saved = CoreDelegates::get().on_settings_saved();
                    saved.broadcast(&INPUT_SETTINGS);
                    saved.broadcast(&AUDIO_SETTINGS);
                });
            })
            .unwrap()
            .join()
            .unwrap();
    });

    engine.frame(|| engine.quit_requested());

    engine.frame(|| {
        engine.unload_editor();
        println!("[engine] running as a packaged game from here on");
    });

    engine.frame(|| engine.quit_requested());
    unreachable!("an unbound quit request exits the process");
}
