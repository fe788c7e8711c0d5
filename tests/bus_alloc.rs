//! Rule GB9, measured with the counting allocator: a send allocates nothing, whatever the number
//! of listeners, partial matching, entity bubbling, consumption or a retained tag; a post
//! allocates nothing once the queues have grown (amortized zero).
//!
//! Run with `--nocapture` to see the measured figures.

use std::cell::Cell;
use std::rc::Rc;

use lumina::bus::{BusMessage, MessageBus};
use lumina::ffi::{
    LuminaPayloadInfo, LuminaStatus, lumina_bus_listen, lumina_bus_send,
    lumina_reflect_find_payload,
};
use lumina::{gameplay_tags, script_delegate};
use std::ffi::c_void;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{allocations, live_bytes_in};

/// A damage message's payload.
#[derive(Clone, Debug)]
pub struct Damage {
    /// Hit points lost.
    pub amount: u64,
}

gameplay_tags! {
    /// The tags of these tests.
    pub mod tags {
        Alloc {
            Damage: Damage {
                Critical: Damage {
                    Headshot: Damage,
                },
            },
            #[retained]
            Score: u64,
        },
    }
}

/// A payload scripts send (GB8).
#[script_delegate]
#[derive(Clone, Copy, Debug)]
pub struct ScriptHit {
    amount: u32,
    crit: f64,
}

gameplay_tags! {
    /// The script-visible tags of these tests.
    pub mod script_tags {
        AllocScript {
            #[script]
            Hit: ScriptHit,
            #[retained]
            #[script]
            State: ScriptHit,
        },
    }
}

fn bus_with(n: usize, hits: &Rc<Cell<u64>>) -> MessageBus<u32> {
    let bus: MessageBus<u32> = MessageBus::new();
    for i in 0..n {
        let hits = Rc::clone(hits);
        let _ = bus.listen(&tags::ALLOC_DAMAGE, move |damage, _| {
            hits.set(hits.get() + damage.amount + i as u64)
        });
    }
    bus
}

#[test]
fn gb9_a_send_to_exact_listeners_allocates_nothing() {
    let hits = Rc::new(Cell::new(0));
    for n in [0, 1, 16, 1024] {
        let bus = bus_with(n, &hits);
        // The first send resolves the tag key (registry insert): not part of the steady state.
        bus.send(&tags::ALLOC_DAMAGE, Damage { amount: 1 });
        let counted = allocations(|| {
            for round in 0..10 {
                bus.send(&tags::ALLOC_DAMAGE, Damage { amount: round });
            }
        });
        println!("GB9 send, N = {n}: {counted} allocations in 10 sends");
        assert_eq!(counted, 0, "N = {n}");
    }
    assert!(hits.get() > 0);
}

#[test]
fn gb9_partial_matching_bubbling_consuming_and_retained_sends_allocate_nothing() {
    let bus: MessageBus<u32> = MessageBus::new();
    bus.set_entity_parents(|entity| (entity > 0).then_some(entity / 2));
    let hits = Rc::new(Cell::new(0_u64));
    for tag in [tags::ALLOC.tag(), tags::ALLOC_DAMAGE.tag()] {
        let hits = Rc::clone(&hits);
        let _ = bus.subscribe().partial().listen(tag, move |message| {
            hits.set(hits.get() + message.payload::<Damage>().map_or(1, |d| d.amount));
        });
    }
    for entity in [1, 2, 4] {
        let hits = Rc::clone(&hits);
        let _ =
            bus.subscribe()
                .partial()
                .entity(entity)
                .listen(&tags::ALLOC_DAMAGE, move |message| {
                    hits.set(hits.get() + 1);
                    if message.payload::<Damage>().is_some_and(|d| d.amount == 99) {
                        message.consume();
                    }
                });
    }
    let _score = bus.listen(&tags::ALLOC_SCORE, |_, _| {});
    // Warm up: keys resolved, the retained slot made.
    let _ = tags::ALLOC_DAMAGE_CRITICAL.tag();
    bus.send(&tags::ALLOC_DAMAGE_CRITICAL_HEADSHOT, Damage { amount: 1 });
    bus.send_to(
        &tags::ALLOC_DAMAGE_CRITICAL_HEADSHOT,
        4,
        Damage { amount: 1 },
    );
    bus.send(&tags::ALLOC_SCORE, 1);
    let counted = allocations(|| {
        for round in 0..10 {
            bus.send(
                &tags::ALLOC_DAMAGE_CRITICAL_HEADSHOT,
                Damage { amount: round },
            );
            bus.send_to(&tags::ALLOC_DAMAGE_CRITICAL, 4, Damage { amount: round });
            bus.send_to(&tags::ALLOC_DAMAGE, 4, Damage { amount: 99 });
            bus.send(&tags::ALLOC_SCORE, round);
        }
    });
    println!(
        "GB9 partial depth 3 + bubbling + consume + retained: {counted} allocations in 40 sends"
    );
    assert_eq!(counted, 0);
    assert!(hits.get() > 0);
}

#[test]
fn gb9_posting_allocates_nothing_once_the_queues_have_grown() {
    let bus: MessageBus<u32> = MessageBus::new();
    let hits = Rc::new(Cell::new(0_u64));
    let sink = Rc::clone(&hits);
    let _h = bus.listen(&tags::ALLOC_DAMAGE, move |damage, _| {
        sink.set(sink.get() + damage.amount)
    });
    let sink = Rc::clone(&hits);
    let _s = bus.listen(&tags::ALLOC_SCORE, move |score, _| {
        sink.set(sink.get() + score)
    });
    let frame = |round: u64| {
        for i in 0..64 {
            bus.post(&tags::ALLOC_DAMAGE, Damage { amount: i });
            bus.post_to(&tags::ALLOC_SCORE, 3, round);
        }
        assert_eq!(bus.deliver_posted(), 128);
    };
    frame(0);
    let counted = allocations(|| {
        for round in 1..=20 {
            frame(round);
        }
    });
    println!("GB9 post + deliver, 128 messages a frame: {counted} allocations in 20 frames");
    assert_eq!(counted, 0);
    assert!(hits.get() > 0);
}

/// A managed listener's thunk: counts the amounts it hears (its context is a `Cell<u64>`).
extern "C" fn count_thunk(context: *mut c_void, message: *const c_void) {
    // SAFETY: the test passes a live `Cell<u64>` as the context; the bus passes a `BusMessage`
    // valid for the call, whose payload, when non-null, is a `ScriptHit` (the tag's type).
    unsafe {
        let message = &*message.cast::<BusMessage>();
        let sum = &*context.cast::<Cell<u64>>();
        if !message.payload.is_null() {
            sum.set(sum.get() + u64::from(message.payload.cast::<ScriptHit>().read().amount));
        }
    }
}

/// GB9 for a script's send through the C ABI: the payload is copied into an inline aligned
/// buffer, not the heap, so a send to Rust and managed listeners allocates nothing, and a
/// retained tag keeps the bytes in place once it has a message (amortized zero). Fails when
/// `send_script` copies into a `Vec`.
#[test]
fn gb9_a_script_send_allocates_nothing() {
    script_tags::register().unwrap();
    let bus: MessageBus = MessageBus::new();
    let rust = Rc::new(Cell::new(0_u64));
    let sink = Rc::clone(&rust);
    let _rust = bus.listen(&script_tags::ALLOC_SCRIPT_HIT, move |hit, _| {
        sink.set(sink.get() + u64::from(hit.amount))
    });
    let managed = Cell::new(0_u64);
    let mut info = std::mem::MaybeUninit::<LuminaPayloadInfo>::uninit();
    // SAFETY: a live name and a local out pointer, read after `Ok`.
    let layout = unsafe {
        let name = "ScriptHit";
        assert_eq!(
            lumina_reflect_find_payload(name.as_ptr(), name.len(), info.as_mut_ptr()),
            LuminaStatus::Ok
        );
        info.assume_init()
    };
    for tag in ["AllocScript.Hit", "AllocScript.State"] {
        let mut id = 0;
        // SAFETY: a live bus, name and context (outliving the bus's listeners: dropped after
        // the bus below); a local out pointer.
        let status = unsafe {
            lumina_bus_listen(
                &bus,
                tag.as_ptr(),
                tag.len(),
                0,
                0,
                0,
                Some(count_thunk),
                std::ptr::from_ref(&managed).cast_mut().cast(),
                &mut id,
            )
        };
        assert_eq!(status, LuminaStatus::Ok);
    }
    let send = |tag: &str, amount: u32| {
        let hit = ScriptHit { amount, crit: 1.0 };
        // SAFETY: a live bus, name, payload of `size_of::<ScriptHit>()` bytes and layout.
        let status = unsafe {
            lumina_bus_send(
                &bus,
                tag.as_ptr(),
                tag.len(),
                0,
                0,
                std::ptr::from_ref(&hit).cast(),
                size_of::<ScriptHit>(),
                &layout,
            )
        };
        assert_eq!(status, LuminaStatus::Ok);
    };
    // The retained tag's first message stores it once: not part of the steady state.
    send("AllocScript.State", 1);
    let counted = allocations(|| {
        for round in 0..10 {
            send("AllocScript.Hit", round);
            send("AllocScript.State", round);
        }
    });
    println!(
        "GB9 script send (C ABI), Rust + managed listeners: {counted} allocations in 20 sends"
    );
    assert_eq!(counted, 0);
    assert_eq!(rust.get(), 45);
    assert_eq!(managed.get(), 1 + 2 * 45);
    drop(bus);
}

/// Bytes left allocated by `n` fresh entities that each had a listener and lost it: removed by
/// its handle, or a one-shot that heard its message (rule N4: an entity's channel goes with its
/// last listener).
fn bytes_left_by_entities(n: u32, one_shot: bool) -> i64 {
    let bus: MessageBus<u32> = MessageBus::new();
    let (bytes, ()) = live_bytes_in(|| {
        for entity in 0..n {
            if one_shot {
                let _ = bus
                    .subscribe()
                    .once()
                    .entity(entity)
                    .listen(&tags::ALLOC_DAMAGE, |_, _| {});
                bus.send_to(&tags::ALLOC_DAMAGE, entity, Damage { amount: 1 });
            } else {
                let handle = bus
                    .subscribe()
                    .entity(entity)
                    .listen(&tags::ALLOC_DAMAGE, |_, _| {});
                assert!(bus.remove(handle));
            }
        }
    });
    assert!(bus.subscriptions().is_empty());
    bytes
}

#[test]
fn n4_an_entitys_channel_goes_with_its_last_listener() {
    for one_shot in [false, true] {
        let small = bytes_left_by_entities(2_000, one_shot);
        let large = bytes_left_by_entities(20_000, one_shot);
        println!(
            "entities' listeners gone (one-shot: {one_shot}): {small} bytes left after 2 000, {large} after 20 000"
        );
        // Flat: what is left is a table's few slots, not a channel per entity (476 bytes each
        // before; 20 000 more entities would leave 8.6 MB).
        assert!(
            large <= small + 64 * 1024,
            "{large} bytes left after 20 000 entities, {small} after 2 000 (one-shot: {one_shot})"
        );
    }
}
