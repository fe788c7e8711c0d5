//! Delegates: a small editor session told through named delegate types.
//!
//! Run with `cargo run --example delegates`. Its macro expansion is in
//! `examples/expanded/delegates.rs`.

use lumina::main_thread::{self, QueuedSender};
use lumina::{declare_delegate, declare_multicast_delegate};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A window of the editor.
pub struct Window {
    /// Shown in its title bar.
    pub title: String,
}

/// A size in pixels.
#[derive(Clone, Copy, Debug)]
pub struct UVec2 {
    /// Width.
    pub x: u32,
    /// Height.
    pub y: u32,
}

declare_multicast_delegate!(
    /// Fired once the project has finished loading.
    pub ProjectLoaded
);
declare_multicast_delegate!(
    /// Fired after a window changed size.
    pub WindowResize(window: &Window, size: UVec2)
);
declare_multicast_delegate!(
    /// Asks every subscriber whether the file at `path` may be saved.
    pub SaveQuery(path: &str) -> bool
);
declare_multicast_delegate!(
    /// Fired after an asset was imported; reported by the importer threads.
    pub AssetImported(path: String, bytes: usize)
);
declare_delegate!(
    /// Decides whether the editor may quit.
    pub CanQuit() -> bool
);
declare_delegate!(
    /// Shows a message in the status bar.
    pub StatusLine(message: &str)
);

/// A panel that follows the main window's size while it is open.
struct Viewport {
    name: &'static str,
    size: Cell<(u32, u32)>,
}

impl Viewport {
    fn on_resize(&self, window: &Window, size: UVec2) {
        self.size.set((size.x, size.y));
        println!(
            "  [{}] follows '{}' to {}x{}",
            self.name, window.title, size.x, size.y
        );
    }
}

/// The events of one editor session.
#[derive(Default)]
struct Editor {
    on_project_loaded: ProjectLoaded,
    on_window_resize: WindowResize,
    on_save_query: SaveQuery,
    /// Private: plugins subscribe through `on_asset_imported()`, only the editor broadcasts.
    on_asset_imported: AssetImported,
}

impl Editor {
    /// The bind-only view plugins get: they subscribe and unsubscribe, but cannot broadcast or
    /// clear.
    fn on_asset_imported(&self) -> AssetImportedRegistration<'_> {
        self.on_asset_imported.registration()
    }
}

fn main() {
    let editor = Rc::new(Editor::default());
    let window = Window {
        title: "Lumina Editor".to_owned(),
    };

    println!("1. Loading the project: subscribers run in the order they were added.");
    let _log = editor
        .on_project_loaded
        .add_lambda(|| println!("  [log] project loaded"));
    let _welcome = editor
        .on_project_loaded
        .add_static(|| println!("  [welcome] showing the start page"));
    editor.on_project_loaded.broadcast_and_clear();
    println!(
        "  a one-shot signal: {} subscribers left",
        editor.on_project_loaded.len()
    );

    println!("2. Resizing: reference arguments reach every subscriber, member bindings too.");
    let scene = Rc::new(Viewport {
        name: "scene view",
        size: Cell::new((0, 0)),
    });
    let _scene = editor
        .on_window_resize
        .add_member(&scene, Viewport::on_resize);
    let preview = Rc::new(Viewport {
        name: "preview",
        size: Cell::new((0, 0)),
    });
    let _preview = editor
        .on_window_resize
        .add_member(&preview, Viewport::on_resize);
    editor
        .on_window_resize
        .broadcast(&window, UVec2 { x: 1280, y: 720 });

    println!("3. Closing the preview drops its binding with it.");
    drop(preview);
    println!(
        "  subscribers now: {}, scene view still bound: {}",
        editor.on_window_resize.len(),
        editor.on_window_resize.is_bound_to(&scene)
    );
    editor
        .on_window_resize
        .broadcast(&window, UVec2 { x: 1920, y: 1080 });
    println!("  scene view size: {:?}", scene.size.get());

    println!("4. A subscriber removes one not yet reached, during the broadcast: it does not run.");
    let tooltip_handle = Rc::new(Cell::new(None));
    // Held weakly: a subscriber that owned its delegate would keep it alive forever.
    let (events, handle) = (Rc::downgrade(&editor), Rc::clone(&tooltip_handle));
    let _layout = editor.on_window_resize.add_lambda(move |_, size| {
        println!(
            "  [layout] relayout at {}x{}; the tooltip is obsolete",
            size.x, size.y
        );
        if let (Some(tooltip), Some(editor)) = (handle.take(), events.upgrade()) {
            println!(
                "  [layout] removed the tooltip: {}",
                editor.on_window_resize.remove(tooltip)
            );
        }
    });
    tooltip_handle.set(Some(editor.on_window_resize.add_lambda(|_, _| {
        println!("  [tooltip] this line never prints");
    })));
    editor
        .on_window_resize
        .broadcast(&window, UVec2 { x: 800, y: 600 });

    println!("5. Asking before saving: broadcast_collect gathers every answer.");
    let unsaved_scripts = Rc::new(RefCell::new(vec!["player.cs"]));
    let scripts = Rc::clone(&unsaved_scripts);
    let _scripts = editor
        .on_save_query
        .add_lambda(move |path| !scripts.borrow().iter().any(|script| path.ends_with(script)));
    let _read_only = editor
        .on_save_query
        .add_lambda(|path| !path.starts_with("/engine/"));
    for path in ["/game/level.map", "/game/player.cs", "/engine/core.map"] {
        let answers = editor.on_save_query.broadcast_collect(path);
        let verdict = if answers.iter().all(|&ok| ok) {
            "save"
        } else {
            "refuse"
        };
        println!("  {path}: answers {answers:?} -> {verdict}");
    }

    println!("6. Plugins bind through a view; priorities order them, higher first.");
    main_thread::designate_game_thread();
    let thumbnails = editor
        .on_asset_imported()
        .add_lambda(|path, bytes| println!("  [thumbnails] render {path} ({bytes} bytes)"));
    let _index = editor
        .on_asset_imported()
        .subscribe()
        .priority(10)
        .add_lambda(|path, _| println!("  [index] register {path} first"));
    let _stats = editor
        .on_asset_imported()
        .subscribe()
        .priority(-1)
        .add_static(|_, bytes| println!("  [stats] +{bytes} bytes, last"));
    // `editor.on_asset_imported().broadcast(..)` does not compile: only the editor fires it.

    println!("7. An importer thread reports through a queued sender; it runs on the game thread.");
    let sender = QueuedSender::new(&editor, |editor: &Editor| &editor.on_asset_imported);
    let importer = sender.clone();
    std::thread::spawn(move || {
        for name in ["rock.png", "tree.png"] {
            importer.send(format!("/game/{name}"), name.len() * 1024);
        }
    })
    .join()
    .expect("the importer finished");
    println!("  importer done; nothing ran on its thread");
    main_thread::process_queue();
    editor.on_asset_imported().remove(thumbnails);
    sender.send("/game/sky.png".to_owned(), 4096);
    println!("  the thumbnails plugin unsubscribed; one more import:");
    main_thread::process_queue();

    println!("8. Single-cast delegates: execute when bound, execute_if_bound when unsure.");
    let mut status = StatusLine::default();
    println!(
        "  status line bound? {} -> {:?}",
        status.is_bound(),
        status.execute_if_bound("nobody listens")
    );
    status = StatusLine::create_lambda(|message| println!("  [status] {message}"));
    status.execute("saved 1 file");
    let unsaved = Rc::clone(&unsaved_scripts);
    let mut can_quit = CanQuit::create_lambda(move || unsaved.borrow().is_empty());
    println!("  can quit with unsaved scripts? {}", can_quit.execute());
    unsaved_scripts.borrow_mut().clear();
    println!(
        "  can quit after saving them? {:?}",
        can_quit.execute_if_bound()
    );
    can_quit.unbind();
    println!(
        "  unbound: execute_if_bound gives {:?}; execute would panic naming `CanQuit`",
        can_quit.execute_if_bound()
    );
}
