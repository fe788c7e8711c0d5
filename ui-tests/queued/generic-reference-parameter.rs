// The generic delegate with a reference parameter has no queued sender either (B4).
use lumina::MulticastDelegate;
use lumina::main_thread::QueuedSender;
use std::rc::Rc;

struct Console {
    on_line: MulticastDelegate<dyn Fn(&str)>,
}

fn main() {
    lumina::main_thread::designate_game_thread();
    let console = Rc::new(Console { on_line: MulticastDelegate::new() });
    let _sender = QueuedSender::new(&console, |console: &Console| &console.on_line);
}
