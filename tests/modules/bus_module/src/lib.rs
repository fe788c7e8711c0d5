//! A game module on the engine's message bus (R5, MB4, GB7): it listens on an engine tag (for
//! every frame, and once), gives the bus its entity hierarchy (GB4), and leaves messages of payload types defined here behind: one kept
//! by a retained tag, one posted and queued, one posted from its own thread and still in the
//! bus's inbox. Their `Drop` is this library's code: the unload must drop them before it unmaps
//! the library; each drop tells the engine (a counter in `engine_api`).

use engine_api::{bus_tags, engine, payload_dropped};
use lumina::gameplay_tags;

/// Kept by a retained tag.
pub struct Loot(pub u32);

impl Drop for Loot {
    fn drop(&mut self) {
        payload_dropped("Loot", self.0);
    }
}

/// Posted.
pub struct Note(pub u32);

impl Drop for Note {
    fn drop(&mut self) {
        payload_dropped("Note", self.0);
    }
}

gameplay_tags! {
    /// The module's own tags.
    pub mod tags {
        BusModule {
            #[retained]
            Loot: Loot,
            Note: Note,
        },
    }
}

fn start_up() {
    let bus = &engine().bus;
    let _ = bus.listen(&bus_tags::ENGINE_FRAME, |frame, _| {
        println!("bus_module: heard frame {frame}");
    });
    let _ = bus
        .subscribe()
        .once()
        .listen(&bus_tags::ENGINE_FRAME, |frame, _| {
            println!("bus_module: heard frame {frame} once");
        });
    let _ = bus
        .subscribe()
        .partial()
        .listen(&tags::BUS_MODULE, |message| {
            println!("bus_module: heard {}", message.tag());
        });
    // Soldiers 1-9 are in squad 10: this module's code, called as addressed messages bubble.
    bus.set_entity_parents(|entity: u32| (entity < 10).then_some(10));
    bus.send(&tags::BUS_MODULE_LOOT, Loot(1));
    bus.post(&tags::BUS_MODULE_NOTE, Note(2));
    let poster = bus.poster();
    std::thread::spawn(move || {
        poster
            .post(&tags::BUS_MODULE_NOTE, Note(3))
            .expect("the bus lives");
    })
    .join()
    .expect("the posting thread finished");
    println!("bus_module: started");
}

fn shut_down() {
    println!("bus_module: shut-down");
}

lumina::game_module!(start_up, shut_down);
