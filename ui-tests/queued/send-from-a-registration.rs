// A bind-only view cannot broadcast, so it cannot make a queued sender either (B2, B4).
use lumina::main_thread::QueuedSender;
use std::rc::Rc;

lumina::declare_multicast_delegate!(Scored(points: u32));

struct Match {
    on_scored: Scored,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let game = Rc::new(Match { on_scored: Scored::new() });
    let _sender = QueuedSender::new(&game, |game: &Match| &game.on_scored.registration());
}
