//! Rule A2: blocking as the peers have it. A whole delegate can be muted (sigslot's signal
//! blocking, Qt's `blockSignals`/`QSignalBlocker`) on every mechanism that takes subscribers
//! (the thread-safe delegate's guards on any thread), and a subscription's blocks are counted, so block guards nest and drop in any
//! order (boost's `shared_connection_block`). Each test fails when mutes or blocks are a flag
//! instead of a count, or when a muted broadcast still calls someone.

use lumina::core_delegates::LifecycleSignal;
use lumina::event::{EventProcessor, Key, KeyPressedEvent, Modifiers};
use lumina::{MulticastDelegate, ScriptDelegate, script_delegate};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

fn counter() -> (Rc<Cell<u32>>, Rc<Cell<u32>>) {
    let count = Rc::new(Cell::new(0));
    (Rc::clone(&count), count)
}

#[test]
fn a2_a_muted_delegate_calls_nobody_and_mutes_nest_in_any_order() {
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (sink, hits) = counter();
    let once = Rc::new(Cell::new(0));
    let once_sink = Rc::clone(&once);
    let _ = on_hit.add_lambda(move |_| sink.set(sink.get() + 1));
    let _ = on_hit
        .subscribe()
        .once()
        .add_lambda(move |_| once_sink.set(once_sink.get() + 1));
    let loading = on_hit.mute();
    let cutscene = on_hit.mute();
    assert!(on_hit.is_muted());
    on_hit.broadcast(1);
    assert_eq!(
        on_hit.broadcast_collect(2).len(),
        0,
        "a muted collect calls nobody"
    );
    drop(loading); // the first one first: the second still mutes
    on_hit.broadcast(3);
    assert_eq!((hits.get(), once.get()), (0, 0));
    assert_eq!(
        on_hit.len(),
        2,
        "muting removes nothing, and uses no one-shot up"
    );
    drop(cutscene);
    assert!(!on_hit.is_muted());
    on_hit.broadcast(4);
    assert_eq!((hits.get(), once.get()), (1, 1));
}

#[test]
fn a2_a_delegate_muted_before_its_first_subscriber_stays_muted() {
    let on_saved: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let muted = on_saved.mute();
    let (sink, saves) = counter();
    let _ = on_saved.add_lambda(move || sink.set(sink.get() + 1));
    on_saved.broadcast();
    assert_eq!(saves.get(), 0);
    drop(muted);
    on_saved.broadcast();
    assert_eq!(saves.get(), 1);
}

#[test]
fn a2_a_mute_made_inside_a_broadcast_applies_from_the_next_one() {
    let on_tick: Rc<MulticastDelegate<dyn Fn()>> = Rc::new(MulticastDelegate::new());
    let guard = Rc::new(RefCell::new(None));
    let (sink, calls) = counter();
    let (weak, slot) = (Rc::downgrade(&on_tick), Rc::clone(&guard));
    let _ = on_tick.add_lambda(move || {
        sink.set(sink.get() + 1);
        if slot.borrow().is_none() {
            *slot.borrow_mut() = Some(weak.upgrade().unwrap().mute());
        }
    });
    let (sink, seconds) = counter();
    let _ = on_tick.add_lambda(move || sink.set(sink.get() + 1));
    on_tick.broadcast(); // the running broadcast finishes
    assert_eq!((calls.get(), seconds.get()), (1, 1));
    on_tick.broadcast();
    assert_eq!((calls.get(), seconds.get()), (1, 1));
    guard.borrow_mut().take();
    on_tick.broadcast();
    assert_eq!((calls.get(), seconds.get()), (2, 2));
}

#[test]
fn a2_blocks_are_counted_and_guards_drop_in_any_order() {
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (sink, hits) = counter();
    let handle = on_hit.add_lambda(move |_| sink.set(sink.get() + 1));
    let first = on_hit.block_scoped(handle);
    let second = on_hit.block_scoped(handle);
    assert!(on_hit.block(handle));
    drop(first);
    on_hit.broadcast(1);
    assert!(on_hit.is_blocked(handle));
    assert!(on_hit.unblock(handle));
    on_hit.broadcast(2);
    assert_eq!(hits.get(), 0, "the second guard still blocks");
    drop(second);
    assert!(!on_hit.is_blocked(handle));
    assert!(!on_hit.unblock(handle), "no block left to lift");
    on_hit.broadcast(3);
    assert_eq!(hits.get(), 1);
    // A muted subscription made by the builder is one block, lifted by one unblock.
    let muted = on_hit.subscribe().muted().add_lambda(|_| {});
    assert!(on_hit.block(muted));
    assert!(on_hit.unblock(muted));
    assert!(on_hit.is_blocked(muted));
    assert!(on_hit.unblock(muted));
    assert!(!on_hit.is_blocked(muted));
}

#[test]
fn a2_many_nested_blocks_of_removed_subscriptions_leave_no_count_behind() {
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    for _ in 0..1000 {
        let handle = on_hit.add_lambda(|_| {});
        assert!(on_hit.block(handle));
        assert!(on_hit.block(handle));
        assert!(on_hit.remove(handle));
        assert!(!on_hit.is_blocked(handle));
        assert!(!on_hit.unblock(handle));
    }
    assert!(on_hit.is_empty());
}

#[test]
fn a2_the_processor_can_be_muted() {
    let processor = EventProcessor::new();
    let _jump = processor.add_handler::<KeyPressedEvent>(0, |_| true);
    let press = || KeyPressedEvent::new(Key::Space, Modifiers::NONE);
    {
        let _menu = processor.mute();
        let _modal = processor.mute();
        assert!(processor.is_muted());
        assert!(!processor.dispatch(press()));
    }
    assert!(processor.dispatch(press()));
}

#[test]
fn a2_a_lifecycle_signal_can_be_muted() {
    let signal = LifecycleSignal::new("on_a2_test");
    let (sink, heard) = counter();
    let _ = signal.add_lambda(move || sink.set(sink.get() + 1));
    let muted = signal.mute();
    assert!(signal.is_muted());
    drop(muted);
    assert!(!signal.is_muted());
    let _muted_again = signal.mute();
    signal.broadcast_and_clear();
    assert_eq!(heard.get(), 0, "fired while muted: nobody heard it");
}

/// The payload of the script delegate below.
#[script_delegate]
#[derive(Clone)]
struct Hit {
    damage: u32,
}

#[test]
fn a2_a_script_delegate_can_be_muted() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let (sink, hits) = counter();
    let _ = on_hit.add_lambda(move |hit| sink.set(sink.get() + hit.damage));
    {
        let _muted = on_hit.mute();
        on_hit.broadcast(&Hit { damage: 5 });
    }
    on_hit.broadcast(&Hit { damage: 7 });
    assert_eq!(hits.get(), 7);
}

lumina::declare_multicast_delegate!(OnScore(points: u32));

#[test]
fn a2_a_declared_delegate_can_be_muted() {
    let on_score = OnScore::new();
    let (sink, total) = counter();
    let handle = on_score.add_lambda(move |points| sink.set(sink.get() + points));
    {
        let _muted = on_score.mute();
        assert!(on_score.is_muted());
        on_score.broadcast(3);
    }
    let first = on_score.block_scoped(handle);
    let second = on_score.block_scoped(handle);
    drop(first);
    on_score.broadcast(4);
    drop(second);
    on_score.broadcast(5);
    assert_eq!(total.get(), 5);
}

lumina::declare_multicast_delegate!(pub sync OnAssetLoaded(u32));

/// The thread-safe delegate (TS1 has what the game-thread one has): mutes are counted, their
/// guards are `Send` and drop in any order on any thread, and a broadcast that starts while one
/// is in force calls nobody, on any thread. A declared one mutes the same way.
#[test]
fn a2_a_thread_safe_delegate_mutes_are_counted_across_threads() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let on_loaded = Arc::new(OnAssetLoaded::new());
    let heard = Arc::new(AtomicU32::new(0));
    let sink = Arc::clone(&heard);
    let _ = on_loaded.add_lambda(move |bytes| {
        sink.fetch_add(bytes, Ordering::Relaxed);
    });
    let streaming = on_loaded.mute();
    let loading_screen = on_loaded.mute();
    assert!(on_loaded.is_muted());
    let worker = {
        let on_loaded = Arc::clone(&on_loaded);
        std::thread::spawn(move || {
            on_loaded.broadcast(1);
            // The first guard ends on the worker: one mute is still in force.
            drop(streaming);
            on_loaded.broadcast(2);
            on_loaded.is_muted()
        })
    };
    assert!(
        worker.join().unwrap(),
        "one of two mutes lifted unmuted the delegate"
    );
    assert_eq!(heard.load(Ordering::Relaxed), 0);
    drop(loading_screen);
    assert!(!on_loaded.is_muted());
    on_loaded.broadcast(4);
    assert_eq!(heard.load(Ordering::Relaxed), 4);
    // A guard that outlives its delegate does nothing when it drops.
    let outliving = on_loaded.mute();
    drop(on_loaded);
    drop(outliving);
}

/// A mute taken by a subscriber during a broadcast: that broadcast finishes (the subscribers
/// after it still run), the next one calls nobody, and subscribing and blocking go on.
#[test]
fn a2_a_thread_safe_delegate_muted_from_inside_a_broadcast_applies_from_the_next_one() {
    use std::sync::{Arc, Mutex};
    let on_loaded = Arc::new(OnAssetLoaded::new());
    let log = Arc::new(Mutex::new(Vec::new()));
    let guard = Arc::new(Mutex::new(None));
    let muter = Arc::downgrade(&on_loaded);
    let (first, second) = (Arc::clone(&log), Arc::clone(&log));
    let held = Arc::clone(&guard);
    let _ = on_loaded.subscribe().priority(1).add_lambda(move |bytes| {
        first.lock().unwrap().push(("muter", bytes));
        let delegate = muter.upgrade().expect("the delegate is broadcasting");
        held.lock().unwrap().get_or_insert_with(|| delegate.mute());
    });
    let _ = on_loaded.add_lambda(move |bytes| second.lock().unwrap().push(("after", bytes)));
    on_loaded.broadcast(1);
    on_loaded.broadcast(2);
    let late = on_loaded.add_lambda(|_| panic!("called while muted"));
    assert!(on_loaded.block(late) && on_loaded.unblock(late));
    on_loaded.broadcast(3);
    assert_eq!(*log.lock().unwrap(), [("muter", 1), ("after", 1)]);
    assert!(on_loaded.remove(late));
    drop(guard.lock().unwrap().take());
    on_loaded.broadcast(4);
    assert_eq!(
        *log.lock().unwrap(),
        [("muter", 1), ("after", 1), ("muter", 4), ("after", 4)]
    );
    // The muter took a new guard at 4: the delegate is muted again.
    assert!(on_loaded.is_muted());
    drop(guard.lock().unwrap().take());
}
