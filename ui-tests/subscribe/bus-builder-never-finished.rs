// A bus builder without a finish listens to nothing: denied `unused_must_use` says so (A1).
#![deny(unused_must_use)]
use lumina::bus::MessageBus;

fn main() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.subscribe().partial().entity(3);
}
