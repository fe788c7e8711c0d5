// The generic delegate too: a non-`Send` parameter has no queued sender (B4).
use lumina::MulticastDelegate;
use lumina::main_thread::QueuedSender;
use std::cell::Cell;
use std::rc::Rc;

struct Player {
    on_hit: MulticastDelegate<dyn Fn(Rc<Cell<u32>>)>,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let player = Rc::new(Player { on_hit: MulticastDelegate::new() });
    let _sender = QueuedSender::new(&player, |player: &Player| &player.on_hit);
}
