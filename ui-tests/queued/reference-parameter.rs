// A declared delegate taking references has no queued sender: what a reference points at cannot
// travel to the game thread (B4).
use lumina::main_thread::QueuedSender;
use std::rc::Rc;

pub struct Window;

lumina::declare_multicast_delegate!(Resized(window: &Window, size: (u32, u32)));

struct Editor {
    on_resized: Resized,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let editor = Rc::new(Editor { on_resized: Resized::new() });
    let _sender = QueuedSender::new(&editor, |editor: &Editor| &editor.on_resized);
}
