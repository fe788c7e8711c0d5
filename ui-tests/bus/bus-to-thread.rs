use lumina::bus::MessageBus;

fn main() {
    // Listeners are single-threaded (`Rc`): the bus belongs to the game thread; `poster()` is
    // the way to post to it from another thread.
    let bus: MessageBus<u32> = MessageBus::new();
    std::thread::spawn(move || bus.posted());
}
