// `send` takes the delegate's parameters, checked at compile time (B4).
use lumina::main_thread::QueuedSender;
use std::rc::Rc;

lumina::declare_multicast_delegate!(HealthChanged(health: u32, source: String));

struct Player {
    on_health_changed: HealthChanged,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let player = Rc::new(Player { on_health_changed: HealthChanged::new() });
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_health_changed);
    std::thread::spawn(move || sender.send(5, "poison")).join().unwrap();
}
