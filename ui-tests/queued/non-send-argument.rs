// A queued sender carries its arguments to the game thread: a delegate with a non-`Send`
// parameter has none (B4).
use lumina::main_thread::QueuedSender;
use std::rc::Rc;

lumina::declare_multicast_delegate!(Picked(item: Rc<String>));

struct Player {
    on_picked: Picked,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let player = Rc::new(Player { on_picked: Picked::new() });
    let _sender = QueuedSender::new(&player, |player: &Player| &player.on_picked);
}
