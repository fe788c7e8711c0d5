//! The gameplay message bus, rule by rule (GB1-GB7; GB9's allocation counts are in
//! `tests/bus_alloc.rs`, its timings in the quick report).

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use lumina::bus::{BusGone, Message, MessageBus, Tag, TagConflict, TagKey, UnknownTag};
use lumina::gameplay_tags;

/// A damage message's payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// Hit points lost.
    pub amount: u32,
}

/// The retained match state.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum MatchState {
    Warmup,
    Playing,
    Over,
}

gameplay_tags! {
    /// The tags of these tests.
    pub mod tags {
        /// Everything that happens in a fight.
        Test.Combat {
            Damage: Damage {
                Critical: Damage {
                    Headshot: Damage,
                },
            },
            Heal: u32,
        },
        #[retained]
        Test.Match.State: MatchState,
        Test.Job.Done: u64,
        Test.Ping: u32,
        Test.Dropped: Counted,
    }
}

gameplay_tags! {
    /// Tags only `gb1_a_declared_tag_is_found_by_name_after_register_before_any_use` uses.
    pub mod fresh {
        Gb1Fresh {
            Loot.Picked: u32,
            #[retained]
            Round: MatchState,
        },
    }
}

gameplay_tags! {
    /// Tags only `gb1_registering_a_set_twice_is_harmless` uses.
    pub mod again {
        Gb1Again.Ready,
        Gb1Again.Score: u64,
    }
}

gameplay_tags! {
    /// The first of two sets declaring `Gb2Clash.Score`, as an engine would.
    pub mod clash_first {
        Gb2Clash.Score: u32,
    }
}

gameplay_tags! {
    /// The second, as a game module would: `Gb2Clash.Score` with another payload type.
    pub mod clash_second {
        Gb2Clash {
            #[retained]
            Score: String,
            Other: u8,
        },
    }
}

gameplay_tags! {
    /// Registered before any send: its tags' payload types are declared from the start.
    pub mod claim_registered {
        Gb2Claim.Hit: Damage {
            Crit: Damage,
        },
    }
}

gameplay_tags! {
    /// Never registered as a set: only its child is used.
    pub mod claim_late {
        Gb2Late.Hit: Damage {
            Crit: Damage,
        },
    }
}

/// A payload that counts its drops.
#[derive(Debug)]
pub struct Counted(pub Rc<Cell<u32>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

type Log = Rc<RefCell<Vec<String>>>;

fn log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

fn push(log: &Log, line: impl Into<String>) {
    log.borrow_mut().push(line.into());
}

mod support;

/// Runs `f` with a `tracing` subscriber recording debug-level events on this thread.
fn capture_debug<R>(f: impl FnOnce() -> R) -> (R, String) {
    support::capture_tracing_at(tracing::Level::DEBUG, f)
}

// ---- GB1 ---------------------------------------------------------------------------------------

#[test]
fn gb1_tags_nest_with_parent_depth_and_matches() {
    let headshot = tags::TEST_COMBAT_DAMAGE_CRITICAL_HEADSHOT.tag();
    let combat = tags::TEST_COMBAT.tag();
    assert_eq!(headshot.name(), "Test.Combat.Damage.Critical.Headshot");
    assert_eq!(headshot.leaf(), "Headshot");
    assert_eq!(headshot.depth(), 5);
    assert_eq!(
        headshot.parent(),
        Some(tags::TEST_COMBAT_DAMAGE_CRITICAL.tag())
    );
    assert!(headshot.matches(combat));
    assert!(headshot.matches(headshot));
    assert!(!combat.matches(headshot));
    assert!(
        !tags::TEST_COMBAT_HEAL
            .tag()
            .matches(tags::TEST_COMBAT_DAMAGE.tag())
    );
    let names: Vec<&str> = headshot.ancestors().map(Tag::name).collect();
    assert_eq!(
        names,
        [
            "Test.Combat.Damage.Critical.Headshot",
            "Test.Combat.Damage.Critical",
            "Test.Combat.Damage",
            "Test.Combat",
            "Test"
        ]
    );
    // The implicit parent `Test.Match` exists and carries nothing.
    assert_eq!(tags::TEST_MATCH.tag().name(), "Test.Match");
    assert_eq!(tags::TEST_MATCH.tag().payload_type_name(), Some("()"));
}

#[test]
fn gb1_a_tag_is_one_per_process_and_found_by_name() {
    let damage = tags::TEST_COMBAT_DAMAGE.tag();
    assert_eq!(Tag::find("Test.Combat.Damage"), Ok(damage));
    assert_eq!(Tag::register("Test.Combat.Damage"), Ok(damage));
    // A second key for the same name and type resolves to the same tag.
    static AGAIN: TagKey<Damage> = TagKey::new("Test.Combat.Damage", false);
    assert_eq!(AGAIN.tag(), damage);
    assert_eq!(Tag::from(&tags::TEST_COMBAT_DAMAGE), damage);
}

#[test]
fn gb1_a_declared_tag_is_found_by_name_after_register_before_any_use() {
    // Declared, never used by Rust: a data file or script asking for it finds nothing yet.
    assert_eq!(
        Tag::find("Gb1Fresh.Loot.Picked"),
        Err(UnknownTag::NotRegistered("Gb1Fresh.Loot.Picked".into()))
    );
    assert_eq!(
        fresh::all()
            .iter()
            .map(|key| key.name())
            .collect::<Vec<_>>(),
        [
            "Gb1Fresh",
            "Gb1Fresh.Loot",
            "Gb1Fresh.Loot.Picked",
            "Gb1Fresh.Round"
        ]
    );
    fresh::register().unwrap();
    let picked = Tag::find("Gb1Fresh.Loot.Picked").unwrap();
    assert_eq!(picked.payload_type_name(), Some("u32"));
    assert_eq!(picked.parent(), Tag::find("Gb1Fresh.Loot").ok());
    let round = Tag::find("Gb1Fresh.Round").unwrap();
    assert!(round.is_retained());
    assert_eq!(
        round.payload_type_name(),
        Some(std::any::type_name::<MatchState>())
    );
    // The keys resolve to the tags registered for them.
    assert_eq!(fresh::GB1_FRESH_LOOT_PICKED.tag(), picked);
    assert_eq!(fresh::GB1_FRESH_ROUND.tag(), round);
}

#[test]
fn gb1_registering_a_set_twice_is_harmless() {
    again::register().unwrap();
    let first: Vec<Tag> = again::all()
        .iter()
        .map(|key| key.register().unwrap())
        .collect();
    again::register().unwrap();
    let second: Vec<Tag> = again::all()
        .iter()
        .map(|key| Tag::find(key.name()).unwrap())
        .collect();
    assert_eq!(first, second);
    assert_eq!(
        again::GB1_AGAIN_SCORE.tag().payload_type_name(),
        Some("u64")
    );
    assert_eq!(again::GB1_AGAIN_READY.tag().payload_type_name(), Some("()"));
    let names = Tag::all()
        .into_iter()
        .filter(|tag| tag.name().starts_with("Gb1Again"))
        .count();
    assert_eq!(names, 3, "each tag once: Gb1Again, its Ready and its Score");
}

#[test]
fn gb2_a_name_declared_by_two_sets_with_two_payload_types_is_a_clear_error() {
    clash_first::register().unwrap();
    let score = clash_first::GB2_CLASH_SCORE.tag();
    let conflict = clash_second::register().unwrap_err();
    assert_eq!(
        conflict,
        TagConflict {
            tag: score,
            declared: "u32",
            conflicting: "alloc::string::String",
        }
    );
    let text = conflict.to_string();
    assert!(
        text.contains("`Gb2Clash.Score` is declared with payload `u32` and again with payload `alloc::string::String`"),
        "{text}"
    );
    // The first declaration stands, untouched by the second (not retained); the rest of the
    // second set is registered.
    assert_eq!(score.payload_type_name(), Some("u32"));
    assert!(!score.is_retained());
    assert_eq!(
        Tag::find("Gb2Clash.Other").unwrap().payload_type_name(),
        Some("u8")
    );
    // Asking again gives the same answer; the refused key panics with it when used.
    assert_eq!(clash_second::register(), Err(conflict.clone()));
    let panic = catch_unwind(|| clash_second::GB2_CLASH_SCORE.tag()).unwrap_err();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains(&conflict.to_string()), "{text}");
    assert_eq!(clash_first::GB2_CLASH_SCORE.tag(), score);
}

#[test]
fn gb2_a_registered_set_keeps_a_send_by_name_from_claiming_a_declared_tag() {
    let bus: MessageBus<u32> = MessageBus::new();
    // Registered at start-up: a send by name with another type is refused.
    claim_registered::register().unwrap();
    let hit = Tag::find("Gb2Claim.Hit").unwrap();
    let wrong = bus.send_tag(hit, None, 5_u32).unwrap_err();
    assert_eq!(wrong.declared, std::any::type_name::<Damage>());
    // Not registered, only the child used: the parent exists by name without a payload type, and
    // the first send by name declares it; the set's declaration then conflicts.
    let _ = claim_late::GB2_LATE_HIT_CRIT.tag();
    let late = Tag::find("Gb2Late.Hit").unwrap();
    assert_eq!(late.payload_type_name(), None);
    bus.send_tag(late, None, 5_u32).unwrap();
    let conflict = claim_late::register().unwrap_err();
    assert_eq!(conflict.tag, late);
    assert_eq!(
        (conflict.declared, conflict.conflicting),
        ("u32", std::any::type_name::<Damage>())
    );
}

#[test]
fn gb1_unknown_or_malformed_names_are_typed_errors() {
    assert_eq!(
        Tag::find("Test.Combat.Damag"),
        Err(UnknownTag::NotRegistered("Test.Combat.Damag".into()))
    );
    for bad in ["", "Test..Combat", ".Test", "Test.", "Test.Com bat"] {
        assert_eq!(Tag::find(bad), Err(UnknownTag::Malformed(bad.into())));
        assert_eq!(Tag::register(bad), Err(UnknownTag::Malformed(bad.into())));
    }
    // A near miss of a registered name suggests it, as rustc does for a misspelled tag constant
    // (a swap, a missing and an extra letter); a name far from every registered one does not.
    let reload = Tag::register("Gb1Hint.Weapon.Reload").unwrap();
    for near in [
        "Gb1Hint.Weapon.Relaod",
        "Gb1Hint.Weapon.Reloa",
        "Gb1Hint.Weapon.Reloadd",
    ] {
        let error = Tag::find(near).unwrap_err();
        assert_eq!(error.closest(), Some(reload), "{near}");
        let message = error.to_string();
        assert!(
            message.contains("did you mean `Gb1Hint.Weapon.Reload`?"),
            "{message}"
        );
    }
    let far = Tag::find("Gb1Hint.Armour.Mend").unwrap_err();
    assert_eq!(far.closest(), None);
    assert!(!far.to_string().contains("did you mean"), "{far}");
    assert_eq!(UnknownTag::Malformed("a..b".into()).closest(), None);
    let message = Tag::find("Nope.Nothing").unwrap_err().to_string();
    assert!(
        message.contains("no gameplay tag `Nope.Nothing`"),
        "{message}"
    );
}

// ---- GB2 ---------------------------------------------------------------------------------------

#[test]
fn gb2_a_send_by_name_checks_the_declared_payload_type() {
    let bus: MessageBus<u32> = MessageBus::new();
    let heard = Rc::new(Cell::new(0));
    let sink = Rc::clone(&heard);
    let _h = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        sink.set(sink.get() + amount)
    });
    let heal = Tag::find("Test.Combat.Heal").unwrap();
    let wrong = bus.send_tag(heal, None, Damage { amount: 1 }).unwrap_err();
    assert_eq!(wrong.declared, "u32");
    assert!(wrong.to_string().contains("carries `u32`"), "{wrong}");
    assert_eq!(heard.get(), 0);
    bus.send_tag(heal, None, 4_u32).unwrap();
    assert_eq!(heard.get(), 4);
}

#[test]
fn gb2_declaring_a_tag_again_with_another_payload_type_panics_clearly() {
    static OTHER: TagKey<String> = TagKey::new("Test.Combat.Heal", false);
    let _ = tags::TEST_COMBAT_HEAL.tag();
    let panic = catch_unwind(|| OTHER.tag()).unwrap_err();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("declared with payload `u32` and again with payload `alloc::string::String`"),
        "{text}"
    );
}

// ---- GB3 ---------------------------------------------------------------------------------------

#[test]
fn gb3_a_partial_listener_hears_descendants_and_is_told_the_tag() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    let sink = Rc::clone(&seen);
    let _ui = bus
        .subscribe()
        .partial()
        .listen(&tags::TEST_COMBAT, move |message| {
            let amount = message
                .get(&tags::TEST_COMBAT_DAMAGE)
                .map(|damage| damage.amount)
                .or(message.payload::<u32>().copied());
            push(&sink, format!("{} {amount:?}", message.tag()));
        });
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 3 });
    bus.send(
        &tags::TEST_COMBAT_DAMAGE_CRITICAL_HEADSHOT,
        Damage { amount: 9 },
    );
    bus.send(&tags::TEST_COMBAT_HEAL, 2);
    bus.send(&tags::TEST_COMBAT, ());
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Warmup); // not a descendant
    assert_eq!(
        *seen.borrow(),
        [
            "Test.Combat.Damage Some(3)",
            "Test.Combat.Damage.Critical.Headshot Some(9)",
            "Test.Combat.Heal Some(2)",
            "Test.Combat None",
        ]
    );
}

#[test]
fn gb3_an_exact_listener_hears_its_tag_only() {
    let bus: MessageBus<u32> = MessageBus::new();
    let count = Rc::new(Cell::new(0));
    let sink = Rc::clone(&count);
    let _h = bus.listen(&tags::TEST_COMBAT_DAMAGE, move |_, _| {
        sink.set(sink.get() + 1)
    });
    bus.send(&tags::TEST_COMBAT_DAMAGE_CRITICAL, Damage { amount: 1 });
    assert_eq!(count.get(), 0);
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 1 });
    assert_eq!(count.get(), 1);
}

#[test]
fn gb3_order_is_own_tag_then_parents_and_priority_then_order_added_within_a_tag() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    let add_partial = |tag: Tag, priority: i32, name: &'static str| {
        let sink = Rc::clone(&seen);
        bus.subscribe()
            .priority(priority)
            .partial()
            .listen(tag, move |message| {
                push(&sink, format!("{name}@{}", message.current_tag().leaf()))
            })
    };
    let _a = add_partial(tags::TEST_COMBAT.tag(), 0, "combat-a");
    let _b = add_partial(tags::TEST_COMBAT_DAMAGE.tag(), 0, "damage-partial");
    let _c = add_partial(tags::TEST_COMBAT.tag(), 5, "combat-high");
    let sink = Rc::clone(&seen);
    let _d = bus.listen(&tags::TEST_COMBAT_DAMAGE_CRITICAL, move |_, _| {
        push(&sink, "critical-exact")
    });
    let sink = Rc::clone(&seen);
    let _e = bus
        .subscribe()
        .priority(9)
        .listen(&tags::TEST_COMBAT_DAMAGE_CRITICAL, move |_, _| {
            push(&sink, "critical-high")
        });
    let _f = add_partial(tags::TEST.tag(), 0, "root");
    bus.send(&tags::TEST_COMBAT_DAMAGE_CRITICAL, Damage { amount: 1 });
    assert_eq!(
        *seen.borrow(),
        [
            "critical-high",
            "critical-exact",
            "damage-partial@Damage",
            "combat-high@Combat",
            "combat-a@Combat",
            "root@Test",
        ]
    );
}

#[test]
fn gb3_a_consumed_message_goes_no_further() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    let sink = Rc::clone(&seen);
    let _a = bus.listen(&tags::TEST_COMBAT_DAMAGE, move |damage, message| {
        push(&sink, "first");
        if damage.amount > 10 {
            message.consume();
        }
    });
    let sink = Rc::clone(&seen);
    let _b = bus.listen(&tags::TEST_COMBAT_DAMAGE, move |_, _| push(&sink, "second"));
    let sink = Rc::clone(&seen);
    let _c = bus
        .subscribe()
        .partial()
        .listen(&tags::TEST_COMBAT, move |message| {
            assert!(!message.is_consumed());
            push(&sink, "parent")
        });
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 50 });
    assert_eq!(*seen.borrow(), ["first"]);
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 5 });
    assert_eq!(*seen.borrow(), ["first", "first", "second", "parent"]);
}

#[test]
fn gb3_a_listener_that_consumes_then_sends_again_on_its_tag_stops_its_own_message_only() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let (b, sink) = (Rc::downgrade(&bus), Rc::clone(&seen));
    let _first = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, message| {
        push(&sink, format!("first {amount}"));
        if *amount == 1 {
            message.consume();
            // The nested send is not consumed: every listener hears it, this one too.
            b.upgrade().unwrap().send(&tags::TEST_COMBAT_HEAL, 2);
            assert!(message.is_consumed());
        }
    });
    for name in ["second", "third"] {
        let sink = Rc::clone(&seen);
        let _ = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
            push(&sink, format!("{name} {amount}"))
        });
    }
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(
        *seen.borrow(),
        ["first 1", "first 2", "second 2", "third 2"]
    );
    seen.borrow_mut().clear();
    bus.send(&tags::TEST_COMBAT_HEAL, 3);
    assert_eq!(*seen.borrow(), ["first 3", "second 3", "third 3"]);
}

#[test]
fn gb3_gb5_a_message_consumed_in_a_send_nested_while_listeners_wait_stops_there_only() {
    // The first listener adds one during the send, then sends again on the tag: that nested
    // send merges the waiting listener in (M2), and the second listener consumes it there.
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let (b, sink) = (Rc::downgrade(&bus), Rc::clone(&seen));
    let _first = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("first {amount}"));
        if *amount == 1 {
            let bus = b.upgrade().unwrap();
            let late = Rc::clone(&sink);
            let _ = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
                push(&late, format!("late {amount}"))
            });
            bus.send(&tags::TEST_COMBAT_HEAL, 2);
        }
    });
    let sink = Rc::clone(&seen);
    let _second = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, message| {
        push(&sink, format!("second {amount}"));
        if *amount == 2 {
            message.consume();
        }
    });
    let sink = Rc::clone(&seen);
    let _third = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("third {amount}"))
    });
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(
        *seen.borrow(),
        ["first 1", "first 2", "second 2", "second 1", "third 1"]
    );
}

// ---- GB4 ---------------------------------------------------------------------------------------

/// Entities 1 and 2 are in squad 10, which is in army 100.
fn squads(entity: u32) -> Option<u32> {
    match entity {
        1 | 2 => Some(10),
        10 => Some(100),
        _ => None,
    }
}

#[test]
fn gb4_an_entity_listener_hears_its_entity_only() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    let sink = Rc::clone(&seen);
    let _h = bus
        .subscribe()
        .entity(1)
        .listen(&tags::TEST_COMBAT_DAMAGE, move |damage, message| {
            push(
                &sink,
                format!("1 hit {} (to {:?})", damage.amount, message.entity()),
            )
        });
    bus.send_to(&tags::TEST_COMBAT_DAMAGE, 2, Damage { amount: 5 });
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 6 });
    bus.send_to(&tags::TEST_COMBAT_DAMAGE, 1, Damage { amount: 7 });
    assert_eq!(*seen.borrow(), ["1 hit 7 (to Some(1))"]);
}

#[test]
fn gb4_an_addressed_message_bubbles_up_the_entity_hierarchy_until_consumed() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.set_entity_parents(squads);
    let seen = log();
    let listen = |entity: u32, consume_above: u32| {
        let sink = Rc::clone(&seen);
        bus.subscribe()
            .partial()
            .entity(entity)
            .listen(&tags::TEST_COMBAT, move |message| {
                let amount = message.payload::<Damage>().map_or(0, |d| d.amount);
                push(
                    &sink,
                    format!(
                        "{entity} heard {amount} for {:?} at {:?}",
                        message.entity(),
                        message.current_entity()
                    ),
                );
                if amount > consume_above {
                    message.consume();
                }
            })
    };
    let _soldier = listen(1, u32::MAX);
    let _squad = listen(10, 100);
    let _army = listen(100, u32::MAX);
    let sink = Rc::clone(&seen);
    let _global = bus.listen(&tags::TEST_COMBAT_DAMAGE, move |damage, message| {
        assert_eq!(message.current_entity(), None);
        push(&sink, format!("global {}", damage.amount))
    });
    bus.send_to(&tags::TEST_COMBAT_DAMAGE, 1, Damage { amount: 5 });
    assert_eq!(
        *seen.borrow(),
        [
            "1 heard 5 for Some(1) at Some(1)",
            "10 heard 5 for Some(1) at Some(10)",
            "100 heard 5 for Some(1) at Some(100)",
            "global 5",
        ]
    );
    seen.borrow_mut().clear();
    bus.send_to(&tags::TEST_COMBAT_DAMAGE, 2, Damage { amount: 500 });
    assert_eq!(*seen.borrow(), ["10 heard 500 for Some(2) at Some(10)"]);
}

#[test]
fn gb4_forgetting_an_entity_removes_its_listeners() {
    let bus: MessageBus<u32> = MessageBus::new();
    let count = Rc::new(Cell::new(0));
    let sink = Rc::clone(&count);
    let handle = bus
        .subscribe()
        .entity(3)
        .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
            sink.set(sink.get() + 1)
        });
    assert_eq!(bus.forget_entity(3), 1);
    assert!(!bus.contains(handle));
    bus.send_to(&tags::TEST_COMBAT_HEAL, 3, 1);
    assert_eq!(count.get(), 0);
}

// ---- GB5 ---------------------------------------------------------------------------------------

#[test]
fn gb5_send_follows_the_delegates_reentrancy_rules() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let victim = Rc::new(Cell::new(None));
    let (b, sink, v) = (Rc::downgrade(&bus), Rc::clone(&seen), Rc::clone(&victim));
    let _first = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("first {amount}"));
        let bus = b.upgrade().unwrap();
        if *amount == 1 {
            // Added during the send: does not hear it (M2).
            let late = Rc::clone(&sink);
            let _ = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
                push(&late, format!("late {amount}"))
            });
            // Removed during the send: does not run (M3).
            assert!(bus.remove(v.get().unwrap()));
            // Nested send (M5).
            bus.send(&tags::TEST_COMBAT_HEAL, 2);
        }
    });
    let sink = Rc::clone(&seen);
    victim.set(Some(
        bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
            push(&sink, format!("victim {amount}"))
        }),
    ));
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    // The nested send started after `late` was added: it hears that one (M2).
    assert_eq!(*seen.borrow(), ["first 1", "first 2", "late 2"]);
    seen.borrow_mut().clear();
    bus.send(&tags::TEST_COMBAT_HEAL, 3);
    assert_eq!(*seen.borrow(), ["first 3", "late 3"]);
}

#[test]
fn gb5_an_exact_listener_added_where_the_message_goes_next_does_not_hear_it() {
    // M2 across channels: the channels an addressed message reaches later (its parent entity's,
    // then the global one) got a listener during it, beside listeners that were there before.
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    bus.set_entity_parents(squads);
    let seen = log();
    for (name, entity) in [("squad", Some(10)), ("global", None)] {
        let sink = Rc::clone(&seen);
        let listener =
            move |amount: &u32, _: &Message<'_, u32>| push(&sink, format!("{name} {amount}"));
        let _ = match entity {
            Some(entity) => bus
                .subscribe()
                .entity(entity)
                .listen(&tags::TEST_COMBAT_HEAL, listener),
            None => bus.listen(&tags::TEST_COMBAT_HEAL, listener),
        };
    }
    let (b, sink) = (Rc::downgrade(&bus), Rc::clone(&seen));
    let _soldier = bus
        .subscribe()
        .entity(1)
        .listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
            push(&sink, format!("soldier {amount}"));
            let bus = b.upgrade().unwrap();
            if *amount == 1 {
                for (name, entity) in [("late squad", Some(10)), ("late global", None)] {
                    let late = Rc::clone(&sink);
                    let listener = move |amount: &u32, _: &Message<'_, u32>| {
                        push(&late, format!("{name} {amount}"))
                    };
                    let _ = match entity {
                        Some(entity) => bus
                            .subscribe()
                            .entity(entity)
                            .listen(&tags::TEST_COMBAT_HEAL, listener),
                        None => bus.listen(&tags::TEST_COMBAT_HEAL, listener),
                    };
                }
            }
        });
    bus.send_to(&tags::TEST_COMBAT_HEAL, 1, 1);
    assert_eq!(*seen.borrow(), ["soldier 1", "squad 1", "global 1"]);
    seen.borrow_mut().clear();
    bus.send_to(&tags::TEST_COMBAT_HEAL, 1, 2);
    assert_eq!(
        *seen.borrow(),
        [
            "soldier 2",
            "squad 2",
            "late squad 2",
            "global 2",
            "late global 2"
        ]
    );
}

#[test]
fn gb5_a_panicking_listener_leaves_the_bus_consistent() {
    let bus: MessageBus<u32> = MessageBus::new();
    let count = Rc::new(Cell::new(0));
    let _boom = bus.listen(&tags::TEST_COMBAT_HEAL, |amount, _| {
        assert!(*amount != 13, "unlucky");
    });
    let sink = Rc::clone(&count);
    let _after = bus.listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
        sink.set(sink.get() + 1)
    });
    assert!(catch_unwind(AssertUnwindSafe(|| bus.send(&tags::TEST_COMBAT_HEAL, 13))).is_err());
    assert_eq!(count.get(), 0);
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(count.get(), 1);
    assert_eq!(bus.subscriptions().len(), 2);
}

#[test]
fn gb5_posted_messages_wait_for_the_delivery_point_in_post_order() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let sink = Rc::clone(&seen);
    let b = Rc::downgrade(&bus);
    let _heal = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("heal {amount}"));
        if *amount == 1 {
            // Posted during delivery: waits for the next frame.
            b.upgrade().unwrap().post(&tags::TEST_COMBAT_HEAL, 100);
        }
    });
    let sink = Rc::clone(&seen);
    let _damage = bus.listen(&tags::TEST_COMBAT_DAMAGE, move |damage, message| {
        push(
            &sink,
            format!("damage {} to {:?}", damage.amount, message.entity()),
        )
    });
    bus.post(&tags::TEST_COMBAT_HEAL, 1);
    bus.post_to(&tags::TEST_COMBAT_DAMAGE, 7, Damage { amount: 2 });
    bus.post(&tags::TEST_COMBAT_HEAL, 3);
    assert!(seen.borrow().is_empty());
    assert_eq!(bus.posted(), 3);
    assert_eq!(bus.deliver_posted(), 3);
    assert_eq!(*seen.borrow(), ["heal 1", "damage 2 to Some(7)", "heal 3"]);
    assert_eq!(bus.deliver_posted(), 1);
    assert_eq!(seen.borrow().last().unwrap(), "heal 100");
    assert_eq!(bus.deliver_posted(), 0);
}

#[test]
fn gb5_a_panic_during_delivery_delivers_that_message_once_and_keeps_the_rest() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    let sink = Rc::clone(&seen);
    let _h = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, amount.to_string());
        assert!(*amount != 2, "listener fails on 2");
    });
    for amount in 1..=3 {
        bus.post(&tags::TEST_COMBAT_HEAL, amount);
    }
    assert!(catch_unwind(AssertUnwindSafe(|| bus.deliver_posted())).is_err());
    assert_eq!(bus.deliver_posted(), 1);
    assert_eq!(*seen.borrow(), ["1", "2", "3"]);
}

#[test]
fn gb5_posters_on_other_threads_deliver_in_post_order_per_thread() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&seen);
    let _h = bus.listen(&tags::TEST_JOB_DONE, move |job, _| {
        sink.borrow_mut().push(*job)
    });
    let workers: Vec<_> = (0..3_u64)
        .map(|thread| {
            let poster = bus.poster();
            std::thread::spawn(move || {
                for job in 0..50 {
                    poster
                        .post(&tags::TEST_JOB_DONE, thread * 1000 + job)
                        .unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(bus.deliver_posted(), 150);
    let seen = seen.borrow();
    for thread in 0..3 {
        let mine: Vec<u64> = seen
            .iter()
            .copied()
            .filter(|job| job / 1000 == thread)
            .collect();
        assert_eq!(
            mine,
            (0..50).map(|job| thread * 1000 + job).collect::<Vec<_>>()
        );
    }
}

#[test]
fn gb5_nothing_can_hear_after_the_bus_is_dropped_so_messages_are_dropped_once_with_a_diagnostic() {
    let drops = Rc::new(Cell::new(0));
    let (poster, text) = capture_debug(|| {
        let bus: MessageBus<u32> = MessageBus::new();
        bus.post(&tags::TEST_DROPPED, Counted(Rc::clone(&drops)));
        bus.post(&tags::TEST_DROPPED, Counted(Rc::clone(&drops)));
        let poster = bus.poster();
        poster.post(&tags::TEST_JOB_DONE, 1).unwrap();
        drop(bus);
        poster
    });
    assert_eq!(drops.get(), 2);
    assert!(text.contains("3 posted messages not delivered"), "{text}");
    let (result, text) = capture_debug(|| poster.post(&tags::TEST_JOB_DONE, 2));
    assert_eq!(result, Err(BusGone));
    assert!(text.contains("after its bus was dropped"), "{text}");
}

#[test]
fn gb5_a_delivered_message_is_dropped_exactly_once() {
    let drops = Rc::new(Cell::new(0));
    let bus: MessageBus<u32> = MessageBus::new();
    let heard = Rc::new(Cell::new(0));
    let sink = Rc::clone(&heard);
    let _h = bus.listen(&tags::TEST_DROPPED, move |_, _| sink.set(sink.get() + 1));
    bus.post(&tags::TEST_DROPPED, Counted(Rc::clone(&drops)));
    bus.send(&tags::TEST_DROPPED, Counted(Rc::clone(&drops)));
    assert_eq!((heard.get(), drops.get()), (1, 1));
    bus.deliver_posted();
    assert_eq!((heard.get(), drops.get()), (2, 2));
    drop(bus);
    assert_eq!(drops.get(), 2);
}

// ---- GB6 ---------------------------------------------------------------------------------------

#[test]
fn gb6_a_late_listener_hears_the_retained_message_at_once() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Warmup);
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Playing);
    let sink = Rc::clone(&seen);
    let _board = bus.listen(&tags::TEST_MATCH_STATE, move |state, message| {
        push(&sink, format!("{state:?} replay={}", message.is_replay()))
    });
    assert_eq!(*seen.borrow(), ["Playing replay=true"]);
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Over);
    assert_eq!(*seen.borrow(), ["Playing replay=true", "Over replay=false"]);
    // A partial listener on an ancestor hears the retained descendants too.
    let sink = Rc::clone(&seen);
    let _all = bus
        .subscribe()
        .partial()
        .listen(&tags::TEST, move |message| {
            push(&sink, format!("partial {}", message.tag()))
        });
    assert_eq!(seen.borrow().last().unwrap(), "partial Test.Match.State");
    assert!(bus.clear_retained(&tags::TEST_MATCH_STATE));
    let sink = Rc::clone(&seen);
    let before = seen.borrow().len();
    let _later = bus.listen(&tags::TEST_MATCH_STATE, move |_, _| push(&sink, "late"));
    assert_eq!(seen.borrow().len(), before);
}

#[test]
fn gb6_a_tag_not_retained_keeps_nothing() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::TEST_COMBAT_HEAL, 5);
    let count = Rc::new(Cell::new(0));
    let sink = Rc::clone(&count);
    let _h = bus.listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
        sink.set(sink.get() + 1)
    });
    assert_eq!(count.get(), 0);
    assert!(bus.retained(&tags::TEST_COMBAT_HEAL).is_none());
}

#[test]
fn gb6_a_replayed_listener_may_send_on_its_tag() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Warmup);
    let b = Rc::downgrade(&bus);
    let seen = log();
    let sink = Rc::clone(&seen);
    let _h = bus.listen(&tags::TEST_MATCH_STATE, move |state, _| {
        push(&sink, format!("{state:?}"));
        if *state == MatchState::Warmup {
            b.upgrade()
                .unwrap()
                .send(&tags::TEST_MATCH_STATE, MatchState::Playing);
        }
    });
    assert_eq!(*seen.borrow(), ["Warmup", "Playing"]);
    let retained = bus.retained(&tags::TEST_MATCH_STATE).unwrap();
    assert_eq!(
        retained.downcast_ref::<MatchState>(),
        Some(&MatchState::Playing)
    );
}

// ---- GB7 ---------------------------------------------------------------------------------------

#[test]
fn gb7_handles_and_scoped_guards_remove_listeners() {
    let bus: MessageBus<u32> = MessageBus::new();
    let count = Rc::new(Cell::new(0));
    let sink = Rc::clone(&count);
    let handle = bus.listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
        sink.set(sink.get() + 1)
    });
    let sink = Rc::clone(&count);
    let guard = bus.scoped(bus.listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
        sink.set(sink.get() + 10)
    }));
    bus.send(&tags::TEST_COMBAT_HEAL, 0);
    assert_eq!(count.get(), 11);
    drop(guard);
    bus.send(&tags::TEST_COMBAT_HEAL, 0);
    assert_eq!(count.get(), 12);
    assert!(bus.remove(handle));
    assert!(!bus.remove(handle));
    bus.send(&tags::TEST_COMBAT_HEAL, 0);
    assert_eq!(count.get(), 12);
}

#[test]
fn gb7_the_listing_names_each_listener_with_its_bind_site() {
    let bus: MessageBus<u32> = MessageBus::new();
    let exact = bus.listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
    let line = line!() - 1;
    let partial = bus
        .subscribe()
        .partial()
        .listen(&tags::TEST_COMBAT, |_: &Message<'_, u32>| {});
    let entity = bus
        .subscribe()
        .entity(4)
        .listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
    let listed = bus.subscriptions();
    let summary: Vec<(String, Option<u32>, bool)> = listed
        .iter()
        .map(|info| (info.tag.to_string(), info.entity, info.partial))
        .collect();
    assert_eq!(
        summary,
        [
            ("Test.Combat".to_owned(), None, true),
            ("Test.Combat.Heal".to_owned(), None, false),
            ("Test.Combat.Heal".to_owned(), Some(4), false),
        ]
    );
    assert_eq!(listed[1].subscription.handle, exact);
    assert_eq!(listed[0].subscription.handle, partial);
    assert_eq!(listed[2].subscription.handle, entity);
    let site = listed[1].subscription.bind_site.unwrap();
    assert!(site.file.ends_with("bus.rs"), "{site}");
    assert_eq!(site.line, line);
    assert!(format!("{bus:?}").contains("Test.Combat.Heal"));
}

#[test]
fn gb7_a_message_nobody_heard_is_visible_at_debug_level() {
    let bus: MessageBus<u32> = MessageBus::new();
    let ((), text) = capture_debug(|| bus.send(&tags::TEST_COMBAT_HEAL, 1));
    assert!(
        text.contains("a message on `Test.Combat.Heal` was sent and nobody heard it"),
        "{text}"
    );
    let _h = bus.subscribe().partial().listen(&tags::TEST_COMBAT, |_| {});
    let ((), text) = capture_debug(|| bus.send(&tags::TEST_COMBAT_HEAL, 1));
    assert!(!text.contains("nobody heard"), "{text}");
}

#[test]
fn gb7_a_panicking_payload_drop_while_unwinding_does_not_abort() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("payload drop panics");
        }
    }
    static BOMB: TagKey<Bomb> = TagKey::new("Test.Bomb", false);
    let bus: MessageBus<u32> = MessageBus::new();
    let _h = bus.listen(&BOMB, |_, _| panic!("listener panics"));
    // The listener's panic unwinds through the bus, which drops the payload: its panic is
    // logged, the listener's propagates.
    let panic = catch_unwind(AssertUnwindSafe(|| bus.send(&BOMB, Bomb))).unwrap_err();
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"listener panics"));
}

// ---- X3: one-shot listeners --------------------------------------------------------------------

#[test]
fn x3_gb7_a_one_shot_listener_hears_one_message_even_when_its_call_sends_again() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let me = Rc::new(Cell::new(lumina::DelegateHandle::default()));
    let (b, sink, mine) = (Rc::downgrade(&bus), Rc::clone(&seen), Rc::clone(&me));
    let once = bus
        .subscribe()
        .once()
        .listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
            push(&sink, format!("once {amount}"));
            let bus = b.upgrade().unwrap();
            // Removed before this call started: the handle is spent, a nested send misses it.
            assert!(!bus.contains(mine.get()));
            bus.send(&tags::TEST_COMBAT_HEAL, amount + 1);
        });
    me.set(once);
    let sink = Rc::clone(&seen);
    let _always = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("always {amount}"))
    });
    assert!(bus.contains(once));
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(*seen.borrow(), ["once 1", "always 2", "always 1"]);
    assert!(!bus.contains(once));
    assert!(!bus.remove(once), "a spent handle removes nothing");
    // A guard on the spent handle is harmless.
    drop(bus.scoped(once));
    bus.send(&tags::TEST_COMBAT_HEAL, 5);
    assert_eq!(seen.borrow().last().unwrap(), "always 5");
    assert_eq!(bus.subscriptions().len(), 1);
}

#[test]
fn x3_a_one_shot_exact_listener_waits_for_its_own_tag_and_a_partial_one_for_any_descendant() {
    let bus: MessageBus<u32> = MessageBus::new();
    let seen = log();
    // A partial listener on the parent makes descendants' messages walk the parent's channel,
    // past the exact one-shot listener there: it must not be used up by them.
    let _partial = bus.subscribe().partial().listen(&tags::TEST_COMBAT, |_| {});
    let sink = Rc::clone(&seen);
    let exact = bus
        .subscribe()
        .once()
        .listen(&tags::TEST_COMBAT_DAMAGE, move |damage, message| {
            push(&sink, format!("exact {} {}", damage.amount, message.tag()))
        });
    let sink = Rc::clone(&seen);
    let any = bus
        .subscribe()
        .once()
        .partial()
        .listen(&tags::TEST_COMBAT_DAMAGE, move |message| {
            push(&sink, format!("partial {}", message.tag()))
        });
    bus.send(&tags::TEST_COMBAT_DAMAGE_CRITICAL, Damage { amount: 9 });
    assert_eq!(*seen.borrow(), ["partial Test.Combat.Damage.Critical"]);
    assert!(bus.contains(exact));
    assert!(!bus.contains(any));
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 2 });
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 3 });
    assert_eq!(
        *seen.borrow(),
        [
            "partial Test.Combat.Damage.Critical",
            "exact 2 Test.Combat.Damage"
        ]
    );
}

#[test]
fn x3_gb4_one_shot_entity_listeners_hear_their_entity_once() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.set_entity_parents(squads);
    let seen = log();
    let sink = Rc::clone(&seen);
    let _soldier = bus
        .subscribe()
        .once()
        .entity(1)
        .listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
            push(&sink, format!("soldier {amount}"))
        });
    let sink = Rc::clone(&seen);
    let _squad = bus
        .subscribe()
        .once()
        .partial()
        .entity(10)
        .listen(&tags::TEST_COMBAT, move |message| {
            push(&sink, format!("squad {:?}", message.entity()))
        });
    // Entity 2 is in squad 10, as 1 is.
    bus.send_to(&tags::TEST_COMBAT_HEAL, 2, 1);
    bus.send_to(&tags::TEST_COMBAT_HEAL, 1, 2);
    bus.send_to(&tags::TEST_COMBAT_HEAL, 1, 3);
    assert_eq!(*seen.borrow(), ["squad Some(2)", "soldier 2"]);
    assert!(bus.subscriptions().is_empty());
}

#[test]
fn x3_gb6_a_one_shot_listener_on_a_retained_tag_hears_the_kept_message_and_is_gone() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Warmup);
    let seen = log();
    let sink = Rc::clone(&seen);
    let late = bus
        .subscribe()
        .once()
        .listen(&tags::TEST_MATCH_STATE, move |state, message| {
            push(&sink, format!("{state:?} replay {}", message.is_replay()))
        });
    assert!(!bus.contains(late));
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Over);
    assert_eq!(*seen.borrow(), ["Warmup replay true"]);
    // On a partial one-shot listener, only the first kept message is replayed.
    let sink = Rc::clone(&seen);
    let _p = bus
        .subscribe()
        .once()
        .partial()
        .listen(Tag::find("Test").unwrap(), move |message| {
            push(&sink, format!("partial {}", message.tag()))
        });
    assert_eq!(seen.borrow().len(), 2);
}

#[test]
fn x3_a_one_shot_listener_removed_before_its_message_never_runs_and_a_panic_spends_it() {
    let bus: MessageBus<u32> = MessageBus::new();
    let runs = Rc::new(Cell::new(0));
    let sink = Rc::clone(&runs);
    let removed = bus
        .subscribe()
        .once()
        .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
            sink.set(sink.get() + 1)
        });
    assert!(bus.remove(removed));
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(runs.get(), 0);
    let sink = Rc::clone(&runs);
    let _boom = bus
        .subscribe()
        .once()
        .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
            sink.set(sink.get() + 1);
            panic!("once and boom");
        });
    assert!(catch_unwind(AssertUnwindSafe(|| bus.send(&tags::TEST_COMBAT_HEAL, 1))).is_err());
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(runs.get(), 1);
    assert!(bus.subscriptions().is_empty());
}

// ---- X5: futures of the next message -----------------------------------------------------------

/// Polls `future` once with a waker that counts its wakes.
fn poll_once<F: std::future::Future + Unpin>(
    future: &mut F,
    wakes: &Arc<AtomicUsize>,
) -> std::task::Poll<F::Output> {
    struct Count(Arc<AtomicUsize>);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let waker = std::task::Waker::from(Arc::new(Count(Arc::clone(wakes))));
    let mut cx = std::task::Context::from_waker(&waker);
    std::pin::Pin::new(future).poll(&mut cx)
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

#[test]
fn x5_a_future_resolves_with_a_clone_of_the_next_payload_and_stops_listening() {
    let bus: MessageBus<u32> = MessageBus::new();
    let wakes = Arc::new(AtomicUsize::new(0));
    let mut next = bus.next(&tags::TEST_COMBAT_DAMAGE);
    assert!(poll_once(&mut next, &wakes).is_pending());
    assert_eq!(bus.subscriptions().len(), 1, "listening from `next()` on");
    bus.send(&tags::TEST_COMBAT_DAMAGE_CRITICAL, Damage { amount: 1 });
    assert!(
        poll_once(&mut next, &wakes).is_pending(),
        "exact: not a child tag"
    );
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 7 });
    assert_eq!(wakes.load(Ordering::SeqCst), 1);
    assert!(bus.subscriptions().is_empty(), "one message only");
    assert_eq!(
        poll_once(&mut next, &wakes),
        Poll::Ready(Ok(Damage { amount: 7 }))
    );
}

#[test]
fn x5_gb3_a_partial_future_is_told_the_actual_tag_and_skips_other_payload_types() {
    let bus: MessageBus<u32> = MessageBus::new();
    let wakes = Arc::new(AtomicUsize::new(0));
    let mut next = bus.subscribe().partial().next::<Damage>(&tags::TEST_COMBAT);
    bus.send(&tags::TEST_COMBAT_HEAL, 5);
    assert!(
        poll_once(&mut next, &wakes).is_pending(),
        "a `u32` is not a `Damage`"
    );
    bus.send(&tags::TEST_COMBAT_DAMAGE_CRITICAL, Damage { amount: 40 });
    let Poll::Ready(Ok((tag, damage))) = poll_once(&mut next, &wakes) else {
        panic!("resolved by the critical hit");
    };
    assert_eq!(tag, tags::TEST_COMBAT_DAMAGE_CRITICAL.tag());
    assert_eq!(damage, Damage { amount: 40 });
}

#[test]
fn x5_gb4_entity_futures_hear_their_entity_only() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.set_entity_parents(squads);
    let wakes = Arc::new(AtomicUsize::new(0));
    let mut soldier = bus.subscribe().entity(1).next(&tags::TEST_COMBAT_HEAL);
    let mut squad = bus
        .subscribe()
        .partial()
        .entity(10)
        .next::<u32>(&tags::TEST_COMBAT);
    bus.send_to(&tags::TEST_COMBAT_HEAL, 2, 4);
    assert!(poll_once(&mut soldier, &wakes).is_pending());
    assert_eq!(
        poll_once(&mut squad, &wakes),
        Poll::Ready(Ok((tags::TEST_COMBAT_HEAL.tag(), 4)))
    );
    bus.send_to(&tags::TEST_COMBAT_HEAL, 1, 6);
    assert_eq!(poll_once(&mut soldier, &wakes), Poll::Ready(Ok(6)));
}

#[test]
fn x5_a_future_is_gone_when_the_bus_is_dropped_and_dropping_it_unsubscribes() {
    let bus: MessageBus<u32> = MessageBus::new();
    let wakes = Arc::new(AtomicUsize::new(0));
    let dropped_early = bus.next(&tags::TEST_COMBAT_HEAL);
    assert_eq!(bus.subscriptions().len(), 1);
    drop(dropped_early);
    assert!(
        bus.subscriptions().is_empty(),
        "dropping the future stops listening"
    );
    let mut next = bus.next(&tags::TEST_COMBAT_HEAL);
    assert!(poll_once(&mut next, &wakes).is_pending());
    drop(bus);
    assert_eq!(
        wakes.load(Ordering::SeqCst),
        1,
        "woken by the end of the bus"
    );
    assert_eq!(poll_once(&mut next, &wakes), Poll::Ready(Err(lumina::Gone)));
}

#[test]
fn x5_gb5_a_future_made_during_a_send_resolves_at_the_next_one_on_any_channel() {
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let futures = Rc::new(RefCell::new(Vec::new()));
    let (b, made) = (Rc::downgrade(&bus), Rc::clone(&futures));
    // Made while the message walks its own tag's channel: a future on the same tag, and one on
    // the parent (whose channel the message walks next), and a listener there too.
    let seen = log();
    let sink = Rc::clone(&seen);
    let _maker = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        let bus = b.upgrade().unwrap();
        if *amount == 1 {
            made.borrow_mut().push((
                bus.next(&tags::TEST_COMBAT_HEAL),
                bus.subscribe().partial().next::<u32>(&tags::TEST_COMBAT),
            ));
            let sink = Rc::clone(&sink);
            let _ = bus
                .subscribe()
                .partial()
                .listen(&tags::TEST_COMBAT, move |message| {
                    push(&sink, format!("late {}", message.payload::<u32>().unwrap()))
                });
        }
    });
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    let wakes = Arc::new(AtomicUsize::new(0));
    let (mut exact, mut parent) = futures.borrow_mut().pop().unwrap();
    assert!(poll_once(&mut exact, &wakes).is_pending());
    assert!(poll_once(&mut parent, &wakes).is_pending());
    assert!(
        seen.borrow().is_empty(),
        "a listener added during a send does not hear it"
    );
    bus.send(&tags::TEST_COMBAT_HEAL, 2);
    assert_eq!(poll_once(&mut exact, &wakes), Poll::Ready(Ok(2)));
    assert_eq!(
        poll_once(&mut parent, &wakes),
        Poll::Ready(Ok((tags::TEST_COMBAT_HEAL.tag(), 2)))
    );
    assert_eq!(*seen.borrow(), ["late 2"]);
}

#[test]
fn x5_a_payload_clone_that_sends_again_resolves_the_future_at_the_nested_send() {
    /// A payload whose clone sends the next number on its tag (once).
    #[derive(Debug)]
    struct Chain(u32, std::rc::Weak<MessageBus<u32>>);
    impl Clone for Chain {
        fn clone(&self) -> Self {
            if self.0 == 1
                && let Some(bus) = self.1.upgrade()
            {
                bus.send(&CHAIN, Chain(2, self.1.clone()));
            }
            Chain(self.0, self.1.clone())
        }
    }
    static CHAIN: TagKey<Chain> = TagKey::new("Test.Chain", false);
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let wakes = Arc::new(AtomicUsize::new(0));
    let mut next = bus.next(&CHAIN);
    bus.send(&CHAIN, Chain(1, Rc::downgrade(&bus)));
    let Poll::Ready(Ok(chain)) = poll_once(&mut next, &wakes) else {
        panic!("resolved");
    };
    assert_eq!(chain.0, 2, "the nested send reached the future first");
    assert_eq!(
        wakes.load(Ordering::SeqCst),
        0,
        "never polled before it was ready"
    );
    assert!(bus.subscriptions().is_empty());
}

#[test]
fn x5_a_coroutine_on_the_game_thread_awaits_bus_messages() {
    let _game = lumina::main_thread::GameThreadScope::enter();
    let bus = Rc::new(MessageBus::<u32>::new());
    let seen = log();
    let (waiting, sink) = (Rc::clone(&bus), Rc::clone(&seen));
    let task = lumina::coroutine::spawn_local(async move {
        let damage = waiting.next(&tags::TEST_COMBAT_DAMAGE).await.unwrap();
        push(&sink, format!("damage {}", damage.amount));
        let (tag, amount) = waiting
            .subscribe()
            .partial()
            .next::<u32>(&tags::TEST_COMBAT)
            .await
            .unwrap();
        push(&sink, format!("{tag} {amount}"));
        let gone = waiting.next(&tags::TEST_COMBAT_HEAL);
        drop(waiting);
        push(&sink, format!("{:?}", gone.await));
    });
    lumina::main_thread::process_queue();
    bus.send(&tags::TEST_COMBAT_DAMAGE, Damage { amount: 3 });
    lumina::main_thread::process_queue();
    bus.send(&tags::TEST_COMBAT_HEAL, 8);
    lumina::main_thread::process_queue();
    assert_eq!(
        task.status(),
        lumina::coroutine::TaskStatus::Running,
        "waits for the bus to go"
    );
    drop(bus);
    lumina::main_thread::process_queue();
    assert_eq!(task.status(), lumina::coroutine::TaskStatus::Finished);
    assert_eq!(
        *seen.borrow(),
        ["damage 3", "Test.Combat.Heal 8", "Err(Gone)"]
    );
}

#[test]
fn x5_a_waker_that_sends_on_the_bus_when_woken_finds_the_future_settled_and_unsubscribed() {
    thread_local! {
        static BUS: RefCell<Option<Rc<MessageBus<u32>>>> = const { RefCell::new(None) };
    }
    /// Wakes by sending on the bus of this thread (user code inside the send that resolved it).
    struct SendOnWake;
    impl std::task::Wake for SendOnWake {
        fn wake(self: Arc<Self>) {
            let bus = BUS.with_borrow(Clone::clone).unwrap();
            bus.send(&tags::TEST_COMBAT_HEAL, 100);
        }
    }
    let bus = Rc::new(MessageBus::<u32>::new());
    BUS.set(Some(Rc::clone(&bus)));
    let seen = log();
    let sink = Rc::clone(&seen);
    let _log = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("heard {amount}"))
    });
    let mut next = bus.next(&tags::TEST_COMBAT_HEAL);
    let waker = std::task::Waker::from(Arc::new(SendOnWake));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut next).poll(&mut cx).is_pending());
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    // The future resolved with 1 and was unsubscribed before the waker's send: it did not see
    // 100, which the lasting listener heard inside the first send.
    assert_eq!(*seen.borrow(), ["heard 1", "heard 100"]);
    assert_eq!(
        std::pin::Pin::new(&mut next).poll(&mut cx),
        Poll::Ready(Ok(1))
    );
    BUS.set(None);
}

/// Runs its action when dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// R1 attack on the bus's shared callables (N2's `Shared`): a listener removes itself during its
/// call, then sends on its own tag again and clears the bus; the `Drop` of its capture (run once
/// its call is over) sends again, adds a listener and clears once more. Nothing is read after it
/// is freed (Miri runs this file) and each listener runs as M2/M4 say.
#[test]
fn r1_a_listener_freed_by_its_own_call_and_drop_reentering_the_bus() {
    let bus = Rc::new(MessageBus::<u32>::new());
    let calls = Rc::new(Cell::new(0u32));
    let dropped = Rc::new(Cell::new(false));
    let me = Rc::new(Cell::new(None));
    let weak = Rc::downgrade(&bus);
    let on_drop = {
        let (weak, dropped) = (weak.clone(), Rc::clone(&dropped));
        OnDrop(move || {
            dropped.set(true);
            if let Some(bus) = weak.upgrade() {
                bus.send(&tags::TEST_COMBAT_HEAL, 99);
                let _late = bus.listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
                bus.clear();
            }
        })
    };
    let handle = bus.listen(&tags::TEST_COMBAT_HEAL, {
        let (weak, calls, me) = (weak.clone(), Rc::clone(&calls), Rc::clone(&me));
        move |amount, _| {
            let _keep = &on_drop;
            calls.set(calls.get() + 1);
            let bus = weak.upgrade().expect("the bus lives");
            if let Some(handle) = me.take() {
                assert!(bus.remove(handle));
                // Removed: the nested send does not reach it (its slot stays until the call
                // returns).
                bus.send(&tags::TEST_COMBAT_HEAL, amount + 1);
                bus.clear();
            }
        }
    });
    me.set(Some(handle));
    let other = Rc::new(Cell::new(0u32));
    let seen = Rc::clone(&other);
    let _other = bus.listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
        seen.set(seen.get() + 1)
    });
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    assert_eq!(calls.get(), 1, "removed during its call: runs once");
    assert!(dropped.get(), "dropped once its call was over");
    assert_eq!(
        other.get(),
        1,
        "it heard the nested send; the clear came before its turn in the outer one"
    );
    assert_eq!(bus.subscriptions().len(), 0);
    drop(bus);
}

#[test]
fn gb3_m7_a_stop_asked_by_a_nested_send_whose_listener_panics_stops_nothing_else() {
    // The first listener sends again on its tag and catches the panic of that nested send's
    // second listener, which consumed it first: the consumption (the loop's stop request) goes
    // with the unwinding call. The outer send goes on (unless the first consumed it too), and a
    // later send is heard by everyone.
    let bus: Rc<MessageBus<u32>> = Rc::new(MessageBus::new());
    let seen = log();
    let (b, sink) = (Rc::downgrade(&bus), Rc::clone(&seen));
    let _first = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, message| {
        push(&sink, format!("first {amount}"));
        if *amount == 1 || *amount == 3 {
            if *amount == 3 {
                message.consume();
            }
            let bus = b.upgrade().unwrap();
            let caught = catch_unwind(AssertUnwindSafe(|| {
                bus.send(&tags::TEST_COMBAT_HEAL, 2);
            }));
            assert!(caught.is_err(), "the nested listener panicked");
        }
    });
    let sink = Rc::clone(&seen);
    let _second = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, message| {
        push(&sink, format!("second {amount}"));
        if *amount == 2 {
            message.consume();
            panic!("the nested send's listener panics after consuming");
        }
    });
    let sink = Rc::clone(&seen);
    let _third = bus.listen(&tags::TEST_COMBAT_HEAL, move |amount, _| {
        push(&sink, format!("third {amount}"))
    });
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    bus.send(&tags::TEST_COMBAT_HEAL, 1);
    let heard_1 = seen.take();
    bus.send(&tags::TEST_COMBAT_HEAL, 3);
    let heard_3 = seen.take();
    std::panic::set_hook(hook);
    assert_eq!(
        heard_1,
        ["first 1", "first 2", "second 2", "second 1", "third 1"],
        "the outer send goes on"
    );
    assert_eq!(
        heard_3,
        ["first 3", "first 2", "second 2"],
        "consumed by the first"
    );
    bus.send(&tags::TEST_COMBAT_HEAL, 4);
    assert_eq!(*seen.borrow(), ["first 4", "second 4", "third 4"]);
}

// ---- the bus's edges (M13, GB6, GB4) ------------------------------------------------------------

/// A listener whose capture, when dropped, sends on `other` and adds a listener there.
fn dropping_into(
    bus: &Rc<MessageBus<u32>>,
    on: &'static TagKey<u32>,
    other: &'static TagKey<u32>,
    seen: &Log,
) -> lumina::DelegateHandle {
    let weak = Rc::downgrade(bus);
    let on_drop = OnDrop({
        let seen = Rc::clone(seen);
        move || {
            if let Some(bus) = weak.upgrade() {
                bus.send(other, 1);
                let sink = Rc::clone(&seen);
                let _late = bus.listen(other, move |_, message| {
                    push(&sink, format!("late listener heard {}", message.tag()))
                });
            }
        }
    });
    let sink = Rc::clone(seen);
    bus.listen(on, move |_, message| {
        let _keep = &on_drop;
        push(&sink, format!("cleared listener heard {}", message.tag()))
    })
}

#[test]
fn m13_m6_a_clear_marks_every_channel_before_any_drop_runs() {
    // Two listeners on two tags, each capture's `Drop` sending on the other tag and adding a
    // listener there. Whichever channel the clear reaches first, the other listener is removed
    // by the same clear: it hears nothing, and both listeners added by the drops stay (M6).
    let bus = Rc::new(MessageBus::<u32>::new());
    let seen = log();
    let _heal = dropping_into(&bus, &tags::TEST_COMBAT_HEAL, &tags::TEST_PING, &seen);
    let _done = dropping_into(&bus, &tags::TEST_PING, &tags::TEST_COMBAT_HEAL, &seen);
    bus.clear();
    assert_eq!(
        *seen.borrow(),
        [] as [&str; 0],
        "nothing the clear removed heard a drop's send"
    );
    assert_eq!(
        bus.subscriptions().len(),
        2,
        "both listeners added by the drops stay"
    );
}

#[test]
fn gb6_m2_a_listener_added_during_a_retained_send_is_replayed_the_new_message() {
    // `Warmup` is kept; during the send of `Playing` a listener reads the kept message and adds
    // a listener: the kept message is already `Playing`, and the late listener, which does not
    // run in that send (M2), is replayed `Playing` at its add, once.
    let bus = Rc::new(MessageBus::<u32>::new());
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Warmup);
    let seen = log();
    let (weak, sink) = (Rc::downgrade(&bus), Rc::clone(&seen));
    let _adder = bus.listen(&tags::TEST_MATCH_STATE, move |state, message| {
        if message.is_replay() {
            return;
        }
        let bus = weak.upgrade().unwrap();
        let kept = bus.retained(&tags::TEST_MATCH_STATE).unwrap();
        let kept = format!("{:?}", kept.downcast_ref::<MatchState>().unwrap());
        push(&sink, format!("{state:?} sent, {kept} kept"));
        let late = Rc::clone(&sink);
        let _late = bus.listen(&tags::TEST_MATCH_STATE, move |state, message| {
            push(
                &late,
                format!("late heard {state:?} replay={}", message.is_replay()),
            )
        });
    });
    bus.send(&tags::TEST_MATCH_STATE, MatchState::Playing);
    assert_eq!(
        *seen.borrow(),
        [
            "Playing sent, Playing kept",
            "late heard Playing replay=true"
        ],
    );
    assert_eq!(
        bus.retained(&tags::TEST_MATCH_STATE)
            .unwrap()
            .downcast_ref::<MatchState>(),
        Some(&MatchState::Playing)
    );
}

/// An entity id whose `Hash` and `Eq` run the hook set in [`REENTER`] once, as user code may.
#[derive(Clone, Copy, Debug)]
struct Reentrant(u32);

thread_local! {
    static REENTER: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
}

fn reenter_once(hook: impl FnOnce() + 'static) {
    REENTER.with(|slot| *slot.borrow_mut() = Some(Box::new(hook)));
}

fn run_reentry() {
    if let Some(hook) = REENTER.with(|slot| slot.borrow_mut().take()) {
        hook();
    }
}

fn reentry_pending() -> bool {
    REENTER.with(|slot| slot.borrow().is_some())
}

impl PartialEq for Reentrant {
    fn eq(&self, other: &Self) -> bool {
        run_reentry();
        self.0 == other.0
    }
}

impl Eq for Reentrant {}

impl std::hash::Hash for Reentrant {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        run_reentry();
        self.0.hash(state);
    }
}

#[test]
fn m13_an_entity_ids_hash_and_eq_may_reenter_the_bus() {
    let bus = Rc::new(MessageBus::<Reentrant>::new());
    let count = Rc::new(Cell::new(0));
    let listen = |entity: u32| {
        let sink = Rc::clone(&count);
        bus.subscribe()
            .entity(Reentrant(entity))
            .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
                sink.set(sink.get() + 1)
            })
    };
    let _first = listen(1);
    // `send_to` from inside the hashing of an entity's listener's add.
    let b = Rc::clone(&bus);
    reenter_once(move || b.send_to(&tags::TEST_COMBAT_HEAL, Reentrant(1), 1));
    let _second = listen(2);
    assert!(!reentry_pending());
    assert_eq!(
        count.get(),
        1,
        "the send from the hash reached entity 1's listener"
    );
    // An entity's listener added from inside `send_to`'s hashing.
    let (b, sink) = (Rc::clone(&bus), Rc::clone(&count));
    reenter_once(move || {
        let _third = b
            .subscribe()
            .entity(Reentrant(2))
            .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
                sink.set(sink.get() + 100)
            });
    });
    bus.send_to(&tags::TEST_COMBAT_HEAL, Reentrant(2), 1);
    assert!(!reentry_pending());
    assert_eq!(
        count.get(),
        2,
        "the listener added during the send does not hear it (M2)"
    );
    bus.send_to(&tags::TEST_COMBAT_HEAL, Reentrant(2), 1);
    assert_eq!(count.get(), 103);
    // `forget_entity` from inside `forget_entity`'s hashing or comparing.
    let b = Rc::clone(&bus);
    reenter_once(move || assert_eq!(b.forget_entity(Reentrant(1)), 1));
    assert_eq!(bus.forget_entity(Reentrant(2)), 2);
    assert!(!reentry_pending());
    assert_eq!(bus.subscriptions().len(), 0);
}

#[test]
fn m13_the_sweep_of_listener_records_runs_no_entity_code_under_a_borrow() {
    // The records are swept as their table reaches 64: listeners removed by guards go then.
    let bus = Rc::new(MessageBus::<Reentrant>::new());
    for entity in 0..62 {
        let handle = bus
            .subscribe()
            .entity(Reentrant(entity))
            .listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
        drop(bus.scoped(handle));
    }
    let _kept = bus
        .subscribe()
        .entity(Reentrant(100))
        .listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
    let b = Rc::clone(&bus);
    let added = Rc::new(Cell::new(None));
    let out = Rc::clone(&added);
    // The 64th listener's record makes the sweep, which asks each record's channel: the first
    // id it hashes adds a listener.
    reenter_once(move || {
        out.set(Some(
            b.subscribe()
                .entity(Reentrant(7))
                .listen(&tags::TEST_COMBAT_HEAL, |_, _| {}),
        ))
    });
    let last = bus.listen(&tags::TEST_COMBAT_HEAL, |_, _| {});
    assert!(!reentry_pending());
    assert!(bus.contains(last));
    assert!(bus.contains(added.get().unwrap()));
    assert_eq!(bus.subscriptions().len(), 3);
}

#[test]
fn gb4_a_parent_relation_with_a_cycle_delivers_once_per_listener_with_one_warning() {
    let bus: MessageBus<u32> = MessageBus::new();
    // 0 -> 1 -> 2 -> 1: the climb stops where it would reach 1 again.
    bus.set_entity_parents(|entity| Some(if entity == 2 { 1 } else { entity + 1 }));
    let count = Rc::new(Cell::new(0));
    let mut handles = Vec::new();
    for entity in 0..3 {
        let sink = Rc::clone(&count);
        handles.push(
            bus.subscribe()
                .entity(entity)
                .listen(&tags::TEST_COMBAT_HEAL, move |_, _| {
                    sink.set(sink.get() + 1)
                }),
        );
    }
    let ((), warnings) = support::capture_tracing_at(tracing::Level::WARN, || {
        bus.send_to(&tags::TEST_COMBAT_HEAL, 0, 1)
    });
    assert_eq!(count.get(), 3, "each listener hears the message once");
    assert_eq!(warnings.matches("cycle").count(), 1, "{warnings}");
    // A self-parent: heard once.
    bus.set_entity_parents(Some);
    count.set(0);
    bus.send_to(&tags::TEST_COMBAT_HEAL, 2, 1);
    assert_eq!(count.get(), 1);
    // A cycle of 32 entities, closing 40 entities up: still found where it closes.
    bus.set_entity_parents(|entity| Some(if entity == 71 { 40 } else { entity + 1 }));
    count.set(0);
    bus.send_to(&tags::TEST_COMBAT_HEAL, 0, 1);
    assert_eq!(count.get(), 3);
    // A cycle longer than the climb remembers (100 entities): found within three laps.
    bus.set_entity_parents(|entity| Some((entity + 1) % 100));
    count.set(0);
    let ((), warnings) = support::capture_tracing_at(tracing::Level::WARN, || {
        bus.send_to(&tags::TEST_COMBAT_HEAL, 0, 1)
    });
    assert!(count.get() <= 9, "{}", count.get());
    assert_eq!(warnings.matches("cycle").count(), 1, "{warnings}");
}
