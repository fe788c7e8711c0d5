//! Rule A1 on the message bus: one builder shape for a listener with options. Every combination
//! of the options (priority, one-shot, partial, entity) is made through `bus.subscribe()`, and
//! what it hears is checked against what the options say: where it runs among the listeners of
//! its channel, how often, which tags and which entities' messages reach it; removal by handle
//! and by guard; the builder's `next` (X5) with the same options. The combinations that mean
//! nothing (`partial()` twice, a second `entity(..)`) are compile errors:
//! `ui-tests/subscribe/bus-*`.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use lumina::bus::{Message, MessageBus, Tag};
use lumina::gameplay_tags;

gameplay_tags! {
    /// The tags of these tests.
    pub mod tags {
        BusBuilder {
            Damage: u32 {
                Critical: u32,
            },
            Heal: u32,
            #[retained]
            Score: u32,
        },
    }
}

/// Who heard what, in order: (who, tag name, entity addressed, payload).
type Log = Rc<RefCell<Vec<(&'static str, &'static str, Option<u32>, u32)>>>;

fn record(log: &Log, who: &'static str, message: &Message<'_, u32>) {
    let payload = *message
        .payload::<u32>()
        .expect("every tag here carries a u32");
    log.borrow_mut()
        .push((who, message.tag().name(), message.entity(), payload));
}

/// The options of one combination.
#[derive(Clone, Copy, Debug)]
struct Options {
    priority: i32,
    once: bool,
    partial: bool,
    entity: Option<u32>,
}

impl Options {
    fn all() -> Vec<Options> {
        let mut all = Vec::new();
        for priority in [-3, 0, 4] {
            for once in [false, true] {
                for partial in [false, true] {
                    for entity in [None, Some(1)] {
                        all.push(Options {
                            priority,
                            once,
                            partial,
                            entity,
                        });
                    }
                }
            }
        }
        all
    }

    /// Adds `who` with these options through the builder, one chain per shape.
    fn listen(self, bus: &MessageBus<u32>, who: &'static str, log: &Log) -> lumina::DelegateHandle {
        let mut builder = bus.subscribe().priority(self.priority);
        if self.once {
            builder = builder.once();
        }
        let sink = Rc::clone(log);
        match (self.partial, self.entity) {
            (false, None) => builder.listen(&tags::BUS_BUILDER_DAMAGE, move |amount, message| {
                assert_eq!(message.get(&tags::BUS_BUILDER_DAMAGE), Some(amount));
                record(&sink, who, message);
            }),
            (false, Some(entity)) => {
                builder
                    .entity(entity)
                    .listen(&tags::BUS_BUILDER_DAMAGE, move |amount, message| {
                        assert_eq!(message.get(&tags::BUS_BUILDER_DAMAGE), Some(amount));
                        record(&sink, who, message);
                    })
            }
            (true, None) => builder
                .partial()
                .listen(&tags::BUS_BUILDER_DAMAGE, move |message| {
                    record(&sink, who, message)
                }),
            (true, Some(entity)) => builder
                .partial()
                .entity(entity)
                .listen(&tags::BUS_BUILDER_DAMAGE, move |message| {
                    record(&sink, who, message)
                }),
        }
    }

    /// Whether a listener with these options hears a message on `tag` addressed to `to`
    /// (ignoring `once`).
    fn hears(self, tag: &str, to: Option<u32>) -> bool {
        let tag_ok =
            tag == "BusBuilder.Damage" || (self.partial && tag == "BusBuilder.Damage.Critical");
        let entity_ok = self.entity.is_none() || self.entity == to;
        tag_ok && entity_ok
    }
}

/// The messages every combination is sent: (tag, addressed to, payload).
fn sends(bus: &MessageBus<u32>) -> Vec<(&'static str, Option<u32>, u32)> {
    let sent = vec![
        ("BusBuilder.Damage", Some(1), 10),
        ("BusBuilder.Damage", Some(1), 11),
        ("BusBuilder.Damage", Some(2), 20),
        ("BusBuilder.Damage", None, 30),
        ("BusBuilder.Damage.Critical", Some(1), 40),
        ("BusBuilder.Heal", Some(1), 50),
    ];
    for &(tag, to, payload) in &sent {
        let tag = Tag::find(tag).expect("registered");
        bus.send_tag(tag, to, payload).expect("a u32");
    }
    sent
}

/// Each combination beside a reference listener of the same channel (same tag, partial and
/// entity; priority 0; lasting), added first: the subject runs before it exactly when its
/// priority is higher, hears exactly the messages its options let through, and a one-shot one
/// only the first of them.
#[test]
fn a1_every_combination_hears_what_its_options_say_in_priority_order() {
    tags::register().expect("registered");
    for options in Options::all() {
        let bus: MessageBus<u32> = MessageBus::new();
        let log: Log = Rc::default();
        let reference = Options {
            priority: 0,
            once: false,
            ..options
        };
        let _reference = reference.listen(&bus, "reference", &log);
        let subject = options.listen(&bus, "subject", &log);
        let sent = sends(&bus);

        let mut expected = Vec::new();
        let mut used_up = false;
        for (tag, to, payload) in sent {
            if !options.hears(tag, to) {
                continue;
            }
            let subject_hears = !used_up;
            used_up |= options.once;
            let entry = |who| (who, tag, to, payload);
            if subject_hears && options.priority > 0 {
                expected.push(entry("subject"));
            }
            expected.push(entry("reference"));
            if subject_hears && options.priority <= 0 {
                expected.push(entry("subject"));
            }
        }
        assert_eq!(*log.borrow(), expected, "{options:?}");
        assert_eq!(bus.contains(subject), !options.once, "{options:?}");
        assert_eq!(
            bus.remove(subject),
            !options.once,
            "{options:?}: a used-up handle is spent"
        );
        assert!(!bus.remove(subject), "{options:?}: removed once");
        let listed = bus.subscriptions();
        assert_eq!(listed.len(), 1, "{options:?}: the reference is left");
        assert_eq!(listed[0].partial, options.partial, "{options:?}");
        assert_eq!(listed[0].entity, options.entity, "{options:?}");
    }
}

/// Every combination removed by its handle, or by a guard made from it, before any message:
/// it hears nothing, and its handle names nothing afterwards.
#[test]
fn a1_every_combination_is_removed_by_its_handle_and_by_its_guard() {
    tags::register().expect("registered");
    for options in Options::all() {
        let bus: MessageBus<u32> = MessageBus::new();
        let log: Log = Rc::default();
        let by_handle = options.listen(&bus, "by handle", &log);
        let by_guard = options.listen(&bus, "by guard", &log);
        assert!(bus.contains(by_handle) && bus.contains(by_guard));
        assert!(bus.remove(by_handle), "{options:?}");
        drop(bus.scoped(by_guard));
        assert!(!bus.contains(by_guard), "{options:?}");
        let _ = sends(&bus);
        assert!(log.borrow().is_empty(), "{options:?}: {:?}", log.borrow());
        assert!(!bus.remove(by_handle) && !bus.remove(by_guard));
        assert!(bus.subscriptions().is_empty());
    }
}

/// Priorities order the listeners of one tag, whatever the order they were added in; equal
/// priorities keep that order; the plain form is priority 0.
#[test]
fn a1_priority_orders_the_listeners_of_a_tag() {
    let bus: MessageBus<u32> = MessageBus::new();
    let order = Rc::new(RefCell::new(Vec::new()));
    for (who, priority) in [("low", -1), ("high", 5), ("mid", 0), ("high too", 5)] {
        let sink = Rc::clone(&order);
        let _ = bus
            .subscribe()
            .priority(priority)
            .listen(&tags::BUS_BUILDER_HEAL, move |_, _| {
                sink.borrow_mut().push(who)
            });
    }
    let sink = Rc::clone(&order);
    let _ = bus.listen(&tags::BUS_BUILDER_HEAL, move |_, _| {
        sink.borrow_mut().push("plain")
    });
    bus.send(&tags::BUS_BUILDER_HEAL, 1);
    assert_eq!(*order.borrow(), ["high", "high too", "mid", "plain", "low"]);
}

/// A one-shot exact listener is left waiting by a descendant's message (it does not hear it),
/// and used up by its own tag's; a one-shot partial one by the first message under its tag. A
/// send from inside the call does not reach it again.
#[test]
fn a1_once_is_used_up_by_the_first_message_it_hears() {
    let bus = Rc::new(MessageBus::<u32>::new());
    let log: Log = Rc::default();
    let (sink, again) = (Rc::clone(&log), Rc::downgrade(&bus));
    let exact = bus
        .subscribe()
        .once()
        .listen(&tags::BUS_BUILDER_DAMAGE, move |_, message| {
            record(&sink, "exact once", message);
            // Nested: the listener is gone already.
            again.upgrade().unwrap().send(&tags::BUS_BUILDER_DAMAGE, 99);
        });
    let sink = Rc::clone(&log);
    let partial = bus
        .subscribe()
        .once()
        .partial()
        .listen(&tags::BUS_BUILDER_DAMAGE, move |message| {
            record(&sink, "partial once", message)
        });
    bus.send(&tags::BUS_BUILDER_DAMAGE_CRITICAL, 1);
    assert_eq!(
        *log.borrow(),
        [("partial once", "BusBuilder.Damage.Critical", None, 1)]
    );
    assert!(bus.contains(exact) && !bus.contains(partial));
    bus.send(&tags::BUS_BUILDER_DAMAGE, 2);
    bus.send(&tags::BUS_BUILDER_DAMAGE, 3);
    assert_eq!(
        log.borrow()[1..],
        [("exact once", "BusBuilder.Damage", None, 2)]
    );
    assert!(!bus.contains(exact));
}

/// A one-shot listener on a retained tag with a kept message hears it at once, and is gone
/// when `listen` returns; for one entity, only a kept message addressed to it counts.
#[test]
fn a1_once_on_a_retained_tag_hears_the_kept_message_at_its_add() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send_to(&tags::BUS_BUILDER_SCORE, 4, 40);
    let log: Log = Rc::default();
    let sink = Rc::clone(&log);
    let other = bus
        .subscribe()
        .once()
        .entity(5)
        .listen(&tags::BUS_BUILDER_SCORE, move |_, message| {
            record(&sink, "entity 5", message)
        });
    let sink = Rc::clone(&log);
    let mine = bus
        .subscribe()
        .once()
        .partial()
        .entity(4)
        .listen(&tags::BUS_BUILDER, move |message| {
            record(&sink, "entity 4", message)
        });
    assert_eq!(
        *log.borrow(),
        [("entity 4", "BusBuilder.Score", Some(4), 40)]
    );
    assert!(!bus.contains(mine), "used up while added");
    assert!(
        bus.contains(other),
        "the kept message was not addressed to 5"
    );
}

/// A partial listener hears its tag and every descendant, told the actual tag; an exact one
/// only its tag.
#[test]
fn a1_partial_hears_the_tag_and_its_descendants() {
    let bus: MessageBus<u32> = MessageBus::new();
    let log: Log = Rc::default();
    let sink = Rc::clone(&log);
    let _ = bus
        .subscribe()
        .partial()
        .listen(&tags::BUS_BUILDER, move |message| {
            record(&sink, "partial", message)
        });
    // A tag found by name works too.
    let sink = Rc::clone(&log);
    let found = Tag::find("BusBuilder.Damage").expect("registered by its key's use");
    let _ = bus
        .subscribe()
        .partial()
        .listen(found, move |message| record(&sink, "found", message));
    bus.send(&tags::BUS_BUILDER_DAMAGE_CRITICAL, 1);
    bus.send(&tags::BUS_BUILDER_HEAL, 2);
    assert_eq!(
        *log.borrow(),
        [
            ("found", "BusBuilder.Damage.Critical", None, 1),
            ("partial", "BusBuilder.Damage.Critical", None, 1),
            ("partial", "BusBuilder.Heal", None, 2),
        ]
    );
}

/// `entity(e)` hears messages addressed to `e` and those bubbling up through it from a child
/// entity, never messages to other entities or to no entity.
#[test]
fn a1_entity_hears_its_own_and_its_childrens_messages_only() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.set_entity_parents(|entity| (entity == 7).then_some(1)); // 7 is in squad 1
    let log: Log = Rc::default();
    let sink = Rc::clone(&log);
    let _ = bus
        .subscribe()
        .entity(1)
        .listen(&tags::BUS_BUILDER_HEAL, move |_, message| {
            record(&sink, "squad", message)
        });
    bus.send_to(&tags::BUS_BUILDER_HEAL, 7, 1);
    bus.send_to(&tags::BUS_BUILDER_HEAL, 1, 2);
    bus.send_to(&tags::BUS_BUILDER_HEAL, 2, 3);
    bus.send(&tags::BUS_BUILDER_HEAL, 4);
    assert_eq!(
        *log.borrow(),
        [
            ("squad", "BusBuilder.Heal", Some(7), 1),
            ("squad", "BusBuilder.Heal", Some(1), 2),
        ]
    );
}

/// Every option at once: a high-priority one-shot partial listener of one entity runs before
/// that entity's other listeners, only for that entity's messages under its tag, once; and the
/// listeners of no entity after both.
#[test]
fn a1_entity_partial_once_and_priority_together() {
    let bus: MessageBus<u32> = MessageBus::new();
    let log: Log = Rc::default();
    let sink = Rc::clone(&log);
    let _ = bus.listen(&tags::BUS_BUILDER_DAMAGE, move |_, message| {
        record(&sink, "anyone", message)
    });
    let sink = Rc::clone(&log);
    let _ = bus
        .subscribe()
        .partial()
        .entity(3)
        .listen(&tags::BUS_BUILDER, move |message| {
            record(&sink, "plain 3", message)
        });
    let sink = Rc::clone(&log);
    let all = bus
        .subscribe()
        .entity(3)
        .once()
        .priority(9)
        .partial()
        .listen(&tags::BUS_BUILDER, move |message| {
            record(&sink, "first 3", message)
        });
    bus.send_to(&tags::BUS_BUILDER_HEAL, 4, 0);
    assert!(log.borrow().is_empty(), "another entity's message");
    assert!(bus.contains(all));
    bus.send_to(&tags::BUS_BUILDER_DAMAGE, 3, 1);
    bus.send_to(&tags::BUS_BUILDER_DAMAGE, 3, 2);
    assert_eq!(
        *log.borrow(),
        [
            ("first 3", "BusBuilder.Damage", Some(3), 1),
            ("plain 3", "BusBuilder.Damage", Some(3), 1),
            ("anyone", "BusBuilder.Damage", Some(3), 1),
            ("plain 3", "BusBuilder.Damage", Some(3), 2),
            ("anyone", "BusBuilder.Damage", Some(3), 2),
        ]
    );
    assert!(!bus.contains(all));
}

/// A builder is `Copy`: one set of options makes several listeners.
#[test]
fn a1_a_builder_copied_makes_listeners_alike() {
    let bus: MessageBus<u32> = MessageBus::new();
    let log: Log = Rc::default();
    let squad = bus.subscribe().partial().entity(2).priority(1);
    let (a, b) = (Rc::clone(&log), Rc::clone(&log));
    let _ = squad.listen(&tags::BUS_BUILDER, move |message| record(&a, "a", message));
    let _ = squad.listen(&tags::BUS_BUILDER, move |message| record(&b, "b", message));
    bus.send_to(&tags::BUS_BUILDER_HEAL, 2, 5);
    assert_eq!(
        *log.borrow(),
        [
            ("a", "BusBuilder.Heal", Some(2), 5),
            ("b", "BusBuilder.Heal", Some(2), 5)
        ]
    );
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// The builder's `next` (X5) with the same options: for one entity, partial (with the actual
/// tag), and with a priority that lets it hear a message a lower listener consumes.
#[test]
fn a1_next_through_the_builder_takes_the_same_options() {
    let bus: MessageBus<u32> = MessageBus::new();
    let mut for_3 = pin!(bus.subscribe().entity(3).next(&tags::BUS_BUILDER_DAMAGE));
    let mut partial = pin!(
        bus.subscribe()
            .partial()
            .entity(3)
            .next::<u32>(&tags::BUS_BUILDER)
    );
    let mut plain = pin!(bus.next(&tags::BUS_BUILDER_HEAL));
    let mut early = pin!(bus.subscribe().priority(1).next(&tags::BUS_BUILDER_HEAL));
    // Consumes every heal: `plain` (priority 0, added before it) hears it first; `early` too.
    let _consumer = bus.listen(&tags::BUS_BUILDER_HEAL, |_, message| message.consume());
    let mut late = pin!(bus.next(&tags::BUS_BUILDER_HEAL));

    bus.send_to(&tags::BUS_BUILDER_DAMAGE, 4, 1);
    assert!(poll_once(for_3.as_mut()).is_pending(), "another entity's");
    assert!(poll_once(partial.as_mut()).is_pending());
    bus.send_to(&tags::BUS_BUILDER_DAMAGE_CRITICAL, 3, 2);
    assert!(
        poll_once(for_3.as_mut()).is_pending(),
        "a descendant: not exact"
    );
    match poll_once(partial.as_mut()) {
        Poll::Ready(Ok((tag, 2))) => assert_eq!(tag.name(), "BusBuilder.Damage.Critical"),
        other => panic!("{other:?}"),
    }
    bus.send_to(&tags::BUS_BUILDER_DAMAGE, 3, 3);
    assert!(matches!(poll_once(for_3.as_mut()), Poll::Ready(Ok(3))));

    bus.send(&tags::BUS_BUILDER_HEAL, 7);
    assert!(matches!(poll_once(early.as_mut()), Poll::Ready(Ok(7))));
    assert!(matches!(poll_once(plain.as_mut()), Poll::Ready(Ok(7))));
    assert!(poll_once(late.as_mut()).is_pending(), "consumed before it");
}
