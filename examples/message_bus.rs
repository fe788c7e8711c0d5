//! The gameplay message bus (rules GB1-GB7) in a small fight.
//!
//! Two soldiers are in one squad. Damage messages are addressed to a soldier and bubble up to the
//! squad (GB4), which shields its soldiers from critical hits by consuming them (GB3). A UI
//! listener on `Combat` hears every child tag and is told which one (GB3). The match state is a
//! retained tag: a scoreboard that joins late hears the current state at once (GB6). A worker
//! thread computes the loot and posts the results, delivered at the frame's delivery point in the
//! order posted (GB5). An announcer calls the first blood with a one-shot listener (X3).
//!
//! Run it with `cargo run --example message_bus`; `tests/message_bus_example.rs` checks its
//! output, and `examples/expanded/message_bus.rs` shows what `gameplay_tags!` writes.

use std::cell::RefCell;
use std::rc::Rc;

use lumina::bus::{MessageBus, Tag};
use lumina::gameplay_tags;

/// An entity of the game: a soldier or a squad.
type Entity = u32;

const SQUAD: Entity = 100;
const ALICE: Entity = 1;
const BOB: Entity = 2;

/// Damage dealt to an entity.
#[derive(Debug)]
pub struct Damage {
    /// Hit points lost.
    pub amount: u32,
}

/// Where the match is.
#[derive(Debug)]
pub enum MatchState {
    /// Players are joining.
    Warmup,
    /// The fight is on.
    Fighting {
        /// The round number.
        round: u32,
    },
}

/// What the worker thread found.
#[derive(Debug)]
pub struct Loot {
    /// What it is.
    pub item: &'static str,
    /// How much it is worth.
    pub value: u32,
}

gameplay_tags! {
    /// The game's tags.
    pub mod tags {
        /// Everything that happens in a fight.
        Combat {
            /// Hit points lost.
            Damage: Damage {
                /// A critical hit.
                Critical: Damage,
            },
            /// Hit points won.
            Heal: u32,
        },
        /// The match state, kept for whoever joins late.
        #[retained]
        Match.State: MatchState,
        /// A result of the loot worker.
        Loot.Found: Loot,
    }
}

/// The squad's parent relation: soldiers are in the squad; the squad is a root.
fn parent_of(entity: Entity) -> Option<Entity> {
    (entity != SQUAD).then_some(SQUAD)
}

fn main() {
    // Start-up: register the game's tags, so a data file or a script finds them by name before
    // any Rust code has used them (a game module does the same with its own tags when it loads).
    tags::register().expect("no other set declares these tags with another payload type");
    let from_data = Tag::find("Loot.Found").expect("a declared tag");
    println!("data: {from_data} is a tag (depth {})", from_data.depth());

    let bus: MessageBus<Entity> = MessageBus::new();
    bus.set_entity_parents(parent_of);
    let health = Rc::new(RefCell::new([(ALICE, 100_u32), (BOB, 100)]));

    // Each soldier hears damage addressed to it; the squad hears what bubbles up.
    for soldier in [ALICE, BOB] {
        let health = Rc::clone(&health);
        let _ = bus
            .subscribe()
            .entity(soldier)
            .listen(&tags::COMBAT_DAMAGE, move |damage, _| {
                let mut health = health.borrow_mut();
                let slot = health.iter_mut().find(|(id, _)| *id == soldier).unwrap();
                slot.1 = slot.1.saturating_sub(damage.amount);
                println!(
                    "  soldier {soldier}: -{} hp, {} left",
                    damage.amount, slot.1
                );
            });
    }
    let _squad = bus
        .subscribe()
        .partial()
        .entity(SQUAD)
        .listen(&tags::COMBAT, |message| {
            if let Some(damage) = message.get(&tags::COMBAT_DAMAGE_CRITICAL) {
                println!(
                    "  squad: shields soldier {:?} from a critical {} (consumed)",
                    message.entity().unwrap(),
                    damage.amount
                );
                message.consume();
            } else {
                println!(
                    "  squad: {} reached the squad from soldier {:?}",
                    message.tag(),
                    message.entity().unwrap()
                );
            }
        });
    // The UI hears every child of `Combat` that nobody consumed, told which tag it was.
    let _ui = bus.subscribe().partial().listen(&tags::COMBAT, |message| {
        println!("  ui: {} for {:?}", message.tag(), message.entity());
    });
    // The announcer calls the first blood only: a one-shot listener, gone once it heard one.
    let _announcer = bus
        .subscribe()
        .once()
        .partial()
        .listen(&tags::COMBAT_DAMAGE, |message| {
            println!(
                "  announcer: first blood on {:?}",
                message.entity().unwrap()
            );
        });

    println!("warmup:");
    bus.send(&tags::MATCH_STATE, MatchState::Warmup);
    bus.send(&tags::MATCH_STATE, MatchState::Fighting { round: 1 });

    println!("alice takes a hit:");
    bus.send_to(&tags::COMBAT_DAMAGE, ALICE, Damage { amount: 30 });
    println!("bob takes a critical hit:");
    bus.send_to(&tags::COMBAT_DAMAGE_CRITICAL, BOB, Damage { amount: 80 });
    println!("a medic heals everyone:");
    bus.send(&tags::COMBAT_HEAL, 10);

    println!("a scoreboard joins late:");
    let _scoreboard = bus.listen(&tags::MATCH_STATE, |state, message| {
        println!(
            "  scoreboard: {state:?} (retained: {})",
            message.is_replay()
        );
    });

    println!("the loot worker posts from its thread:");
    let poster = bus.poster();
    let worker = std::thread::spawn(move || {
        for (item, value) in [("sword", 40), ("shield", 25)] {
            poster
                .post(&tags::LOOT_FOUND, Loot { item, value })
                .expect("the bus outlives the worker");
        }
    });
    worker.join().expect("the worker finishes");
    let _loot = bus.listen(&tags::LOOT_FOUND, |loot, _| {
        println!("  loot: {} worth {}", loot.item, loot.value);
    });
    println!("end of frame:");
    let delivered = bus.deliver_posted();
    println!("  delivered {delivered} posted messages");

    println!("round 2:");
    bus.send(&tags::MATCH_STATE, MatchState::Fighting { round: 2 });
    println!("listeners: {}", bus.subscriptions().len());
}
