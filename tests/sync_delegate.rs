//! Thread-safe delegates (rules TS1-TS4): `SyncMulticastDelegate` from many threads at once,
//! re-entered from its subscribers, crossed with another, queued to the game thread; and the
//! threaded cases of the peers (sigslot's `test_threaded_mix`, `test_threaded_crossed`,
//! `test_threaded_misc`, boost::signals2's threading-model cases) in the form lumina can state
//! them. These tests also run under ThreadSanitizer and Miri in CI.

use lumina::SyncMulticastDelegate;
use lumina::main_thread;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

/// Fewer rounds under Miri (it interprets every step).
fn rounds(native: usize) -> usize {
    if cfg!(miri) { native.min(20) } else { native }
}

/// A counter subscriber.
fn counting(delegate: &OnValue) -> (lumina::DelegateHandle, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let handle = delegate.add_lambda(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (handle, calls)
}

#[test]
fn ts1_the_delegate_and_its_guard_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<OnValue>();
    send_sync::<SyncMulticastDelegate<dyn Fn(String, u64) + Send + Sync>>();
    send::<lumina::sync_delegate::SyncScopedSubscription>();
}

#[test]
fn ts1_every_operation_works_from_any_thread() {
    let delegate = Arc::new(OnValue::new());
    let total = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = (0..4)
        .map(|worker| {
            let delegate = Arc::clone(&delegate);
            let total = Arc::clone(&total);
            thread::spawn(move || {
                let handle = delegate.add_lambda(move |value| {
                    total.fetch_add(value, Ordering::SeqCst);
                });
                delegate.broadcast(worker);
                handle
            })
        })
        .map(|thread| thread.join().unwrap())
        .collect();
    // Every broadcast reached at least its own subscriber.
    assert!(total.load(Ordering::SeqCst) >= 1 + 2 + 3);
    assert_eq!(delegate.len(), 4);
    total.store(0, Ordering::SeqCst);
    delegate.broadcast(10);
    assert_eq!(total.load(Ordering::SeqCst), 40);
    let removers: Vec<_> = handles
        .into_iter()
        .map(|handle| {
            let delegate = Arc::clone(&delegate);
            thread::spawn(move || delegate.remove(handle))
        })
        .collect();
    for remover in removers {
        assert!(remover.join().unwrap());
    }
    assert!(!delegate.is_bound());
}

#[test]
fn ts1_priorities_order_the_calls_and_equal_ones_keep_subscription_order() {
    let delegate = OnValue::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    for (priority, name) in [(0, 'a'), (5, 'b'), (0, 'c'), (-1, 'd'), (5, 'e')] {
        let order = Arc::clone(&order);
        let _ = delegate
            .subscribe()
            .priority(priority)
            .add_lambda(move |_| {
                order.lock().unwrap().push(name);
            });
    }
    delegate.broadcast(0);
    assert_eq!(*order.lock().unwrap(), ['b', 'e', 'a', 'c', 'd']);
}

#[test]
fn ts1_a_member_is_held_weakly() {
    struct Counter(AtomicU32);
    impl Counter {
        fn on(&self, value: u32) {
            self.0.fetch_add(value, Ordering::SeqCst);
        }
    }
    let delegate = OnValue::new();
    let counter = Arc::new(Counter(AtomicU32::new(0)));
    let _ = delegate.add_member(&counter, Counter::on);
    delegate.broadcast(3);
    assert_eq!(counter.0.load(Ordering::SeqCst), 3);
    let weak = Arc::downgrade(&counter);
    drop(counter);
    assert!(
        weak.upgrade().is_none(),
        "the delegate keeps no strong reference"
    );
    delegate.broadcast(3); // calls nothing, does not panic
}

#[test]
fn ts1_guards_are_send_and_remove_on_drop_on_another_thread() {
    let delegate = Arc::new(OnValue::new());
    let (handle, calls) = counting(&delegate);
    let guard = delegate.scoped(handle);
    thread::spawn(move || drop(guard)).join().unwrap();
    delegate.broadcast(1);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(!delegate.contains(handle));
}

#[test]
fn ts1_a2_blocks_are_counted_and_nest_in_any_order() {
    let delegate = OnValue::new();
    let (handle, calls) = counting(&delegate);
    let first = delegate.block_scoped(handle);
    let second = delegate.block_scoped(handle);
    delegate.broadcast(1);
    drop(first);
    delegate.broadcast(1);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "still blocked by the second guard"
    );
    drop(second);
    delegate.broadcast(1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(!delegate.unblock(handle), "nothing left to undo");
}

#[test]
fn ts2_removal_is_final_while_other_threads_broadcast() {
    for _ in 0..rounds(20) {
        let delegate = Arc::new(OnValue::new());
        let started = Arc::new(AtomicUsize::new(0));
        let handle = {
            let started = Arc::clone(&started);
            delegate.add_lambda(move |_| {
                started.fetch_add(1, Ordering::SeqCst);
            })
        };
        // A slow subscriber ahead of it: broadcasts that took their list before the removal
        // reach the removed subscriber after the removal returned, and must skip it.
        let _ = delegate.subscribe().priority(1).add_lambda(|_| {
            thread::sleep(Duration::from_micros(200));
        });
        let stop = Arc::new(AtomicBool::new(false));
        // Per broadcaster: how many broadcasts it began and finished.
        let progress: Vec<_> = (0..2)
            .map(|_| Arc::new((AtomicUsize::new(0), AtomicUsize::new(0))))
            .collect();
        let broadcasters: Vec<_> = progress
            .iter()
            .map(|progress| {
                let delegate = Arc::clone(&delegate);
                let stop = Arc::clone(&stop);
                let progress = Arc::clone(progress);
                thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        progress.0.fetch_add(1, Ordering::SeqCst);
                        delegate.broadcast(1);
                        progress.1.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) < 3 {
            thread::yield_now();
        }
        assert!(delegate.remove(handle));
        // Calls that started before the removal may finish: wait until each broadcaster
        // finished a broadcast it began after the removal (so every earlier one is over).
        for progress in &progress {
            let begun = progress.0.load(Ordering::SeqCst);
            while progress.1.load(Ordering::SeqCst) <= begun {
                thread::yield_now();
            }
        }
        let after = started.load(Ordering::SeqCst);
        for progress in &progress {
            let begun = progress.0.load(Ordering::SeqCst);
            while progress.1.load(Ordering::SeqCst) <= begun + 2 {
                thread::yield_now();
            }
        }
        stop.store(true, Ordering::SeqCst);
        for broadcaster in broadcasters {
            broadcaster.join().unwrap();
        }
        assert_eq!(
            started.load(Ordering::SeqCst),
            after,
            "a call started after the removal"
        );
    }
}

/// TS2, step by step: a broadcast on another thread has taken its list and waits inside an
/// earlier subscriber; the removal returns; the broadcast goes on and must skip the removed
/// subscriber, though its list still holds it.
#[test]
fn ts2_a_broadcast_that_began_before_the_removal_skips_the_removed_subscriber() {
    let delegate = Arc::new(OnValue::new());
    let (handle, calls) = counting(&delegate);
    let (inside, wait_inside) = std::sync::mpsc::channel();
    let (go, wait_go) = std::sync::mpsc::channel::<()>();
    let wait_go = Mutex::new(wait_go);
    let _ = delegate.subscribe().priority(1).add_lambda(move |_| {
        inside.send(()).unwrap();
        wait_go.lock().unwrap().recv().unwrap();
    });
    let broadcaster = {
        let delegate = Arc::clone(&delegate);
        thread::spawn(move || delegate.broadcast(1))
    };
    wait_inside.recv().unwrap();
    assert!(delegate.remove(handle));
    go.send(()).unwrap();
    broadcaster.join().unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "called after its removal returned"
    );
}

#[test]
fn ts2_a_subscriber_may_remove_add_clear_and_broadcast_from_inside_its_call() {
    let delegate = Arc::new(OnValue::new());
    let calls = Arc::new(AtomicU32::new(0));
    let me = Arc::new(Mutex::new(None));
    let handle = {
        let delegate_in = Arc::downgrade(&delegate);
        let calls = Arc::clone(&calls);
        let me = Arc::clone(&me);
        delegate.add_lambda(move |depth| {
            calls.fetch_add(1, Ordering::SeqCst);
            let delegate = delegate_in.upgrade().unwrap();
            if depth == 0 {
                // Again, nested: the same subscriber runs at depth 1.
                delegate.broadcast(1);
                // Itself, then a new subscriber (not called by this broadcast, M2), then all.
                assert!(delegate.remove(me.lock().unwrap().unwrap()));
                let _ = delegate.add_lambda(|_| {});
                assert_eq!(delegate.len(), 2);
                delegate.clear();
            }
        })
    };
    *me.lock().unwrap() = Some(handle);
    let (_, later) = counting(&delegate);
    delegate.broadcast(0);
    // Depth 0 and depth 1. The counter after it ran in the nested broadcast only: the clear
    // returned before the outer broadcast reached it, so its call there never starts (TS2).
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(later.load(Ordering::SeqCst), 1);
    assert!(delegate.is_empty());
}

#[test]
fn ts3_m2_a_subscriber_added_during_a_broadcast_is_not_called_by_it() {
    let delegate = Arc::new(OnValue::new());
    let added = Arc::new(AtomicU32::new(0));
    let _ = {
        let weak = Arc::downgrade(&delegate);
        let added = Arc::clone(&added);
        delegate.add_lambda(move |_| {
            let added = Arc::clone(&added);
            let _ = weak.upgrade().unwrap().add_lambda(move |_| {
                added.fetch_add(1, Ordering::SeqCst);
            });
        })
    };
    delegate.broadcast(0);
    assert_eq!(added.load(Ordering::SeqCst), 0);
    delegate.broadcast(0);
    assert_eq!(added.load(Ordering::SeqCst), 1);
}

#[test]
fn ts3_broadcasts_from_two_threads_run_at_once() {
    // Both broadcasts must be inside the subscriber at the same time to pass the barrier: a
    // lock held across user code would deadlock here.
    let delegate = Arc::new(OnValue::new());
    let barrier = Arc::new(Barrier::new(2));
    let _ = {
        let barrier = Arc::clone(&barrier);
        delegate.add_lambda(move |_| {
            barrier.wait();
        })
    };
    let other = {
        let delegate = Arc::clone(&delegate);
        thread::spawn(move || delegate.broadcast(1))
    };
    delegate.broadcast(2);
    other.join().unwrap();
}

#[test]
fn x3_a_one_shot_is_called_once_by_racing_broadcasts() {
    for _ in 0..rounds(50) {
        let delegate = Arc::new(OnValue::new());
        let calls = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&calls);
        let _ = delegate.subscribe().once().add_lambda(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let delegate = Arc::clone(&delegate);
                thread::spawn(move || delegate.broadcast(1))
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(delegate.is_empty());
    }
}

/// sigslot's `test_threaded_crossed` (TS2's crossed case): thread A broadcasts D1, whose
/// subscriber broadcasts D2, while thread B broadcasts D2, whose subscriber broadcasts D1. With
/// a lock held across a call this deadlocks; here every broadcast completes and counts.
#[test]
fn ts2_sigslot_threaded_crossed_never_deadlocks() {
    let one = Arc::new(OnValue::new());
    let two = Arc::new(OnValue::new());
    let calls = Arc::new(AtomicU32::new(0));
    for (from, to) in [(&one, &two), (&two, &one)] {
        let to = Arc::downgrade(to);
        let calls = Arc::clone(&calls);
        let _ = from.add_lambda(move |depth| {
            calls.fetch_add(1, Ordering::SeqCst);
            if depth == 0 {
                to.upgrade().unwrap().broadcast(1);
            }
        });
    }
    let n = rounds(1000);
    let threads: Vec<_> = [Arc::clone(&one), Arc::clone(&two)]
        .into_iter()
        .map(|delegate| {
            thread::spawn(move || {
                for _ in 0..n {
                    delegate.broadcast(0);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst) as usize, 2 * 2 * n);
}

/// sigslot's `test_threaded_mix`: threads subscribe, broadcast and unsubscribe at once; every
/// subscription a thread made is removed by it, every broadcast completes, and the delegate
/// ends empty with each thread's own subscriber called at least by its own broadcast.
#[test]
fn ts2_sigslot_threaded_mix() {
    let delegate = Arc::new(OnValue::new());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let delegate = Arc::clone(&delegate);
            thread::spawn(move || {
                for _ in 0..rounds(200) {
                    let mine = Arc::new(AtomicU32::new(0));
                    let counter = Arc::clone(&mine);
                    let handle = delegate.add_lambda(move |_| {
                        counter.fetch_add(1, Ordering::SeqCst);
                    });
                    delegate.broadcast(1);
                    assert!(mine.load(Ordering::SeqCst) >= 1);
                    assert!(delegate.remove(handle));
                    let after = mine.load(Ordering::SeqCst);
                    delegate.broadcast(1);
                    // This thread's own broadcast after the removal does not call it (TS2).
                    assert!(mine.load(Ordering::SeqCst) - after <= 3);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert!(delegate.is_empty());
}

/// sigslot's `test_threaded_misc` and boost::signals2's threading-model cases: a broadcast
/// from several threads while others clear and block; the counts stay consistent and nothing
/// deadlocks.
#[test]
fn ts2_sigslot_threaded_misc_clear_and_block_while_broadcasting() {
    let delegate = Arc::new(OnValue::new());
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicU32::new(0));
    let broadcasters: Vec<_> = (0..2)
        .map(|_| {
            let delegate = Arc::clone(&delegate);
            let stop = Arc::clone(&stop);
            let running = Arc::clone(&running);
            thread::spawn(move || {
                let mut broadcasts = 0u32;
                running.fetch_add(1, Ordering::SeqCst);
                while broadcasts == 0 || !stop.load(Ordering::SeqCst) {
                    delegate.broadcast(1);
                    broadcasts += 1;
                }
                broadcasts
            })
        })
        .collect();
    while running.load(Ordering::SeqCst) < 2 {
        thread::yield_now();
    }
    for _ in 0..rounds(200) {
        let (handle, _) = counting(&delegate);
        let guard = delegate.block_scoped(handle);
        drop(guard);
        delegate.clear();
    }
    stop.store(true, Ordering::SeqCst);
    for broadcaster in broadcasters {
        assert!(broadcaster.join().unwrap() > 0);
    }
    assert!(delegate.is_empty());
}

#[test]
fn ts4_a_queued_subscription_runs_on_the_game_thread_with_the_broadcasts_arguments() {
    let _game = main_thread::GameThreadScope::enter();
    let game_thread = thread::current().id();
    let delegate = Arc::new(SyncMulticastDelegate::<dyn Fn(String) + Send + Sync>::new());
    let heard = Arc::new(Mutex::new(Vec::new()));
    let handle = {
        let heard = Arc::clone(&heard);
        delegate.add_queued(move |name: String| {
            assert_eq!(thread::current().id(), game_thread);
            heard.lock().unwrap().push(name);
        })
    };
    let worker = {
        let delegate = Arc::clone(&delegate);
        thread::spawn(move || delegate.broadcast("loaded".to_owned()))
    };
    worker.join().unwrap();
    assert!(heard.lock().unwrap().is_empty(), "not before the drain");
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(*heard.lock().unwrap(), ["loaded"]);
    // Removed before the drain: its queued call does not run (TS2).
    delegate.broadcast("late".to_owned());
    assert!(delegate.remove(handle));
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(*heard.lock().unwrap(), ["loaded"]);
}

/// M13 at the points where the thread-safe delegate runs user code outside a call: a removed
/// callable's capture is dropped by the change that replaced its list, with no lock held, so its
/// `Drop` may add, remove, broadcast and clear the same delegate.
#[test]
fn m13_ts2_a_removed_captures_drop_may_reenter_the_delegate() {
    struct ReenterOnDrop(std::sync::Weak<OnValue>, Arc<AtomicU32>);
    impl Drop for ReenterOnDrop {
        fn drop(&mut self) {
            if let Some(delegate) = self.0.upgrade() {
                let calls = Arc::clone(&self.1);
                let added = delegate.add_lambda(move |_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                });
                delegate.broadcast(1);
                assert!(delegate.remove(added));
                delegate.clear();
            }
        }
    }
    let delegate = Arc::new(OnValue::new());
    let calls = Arc::new(AtomicU32::new(0));
    let capture = ReenterOnDrop(Arc::downgrade(&delegate), Arc::clone(&calls));
    let handle = delegate.add_lambda(move |_| {
        let _ = &capture;
    });
    assert!(delegate.remove(handle)); // drops the capture: its Drop re-enters
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(delegate.is_empty());
}

/// R2: a subscriber panics while the argument's `Drop` panics too; the broadcast's own frame
/// drops the argument under the guard, so the process does not abort and the first panic
/// reaches the caller.
#[test]
fn r2_a_panicking_subscriber_with_an_argument_whose_drop_panics_does_not_abort() {
    #[derive(Clone)]
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                return;
            }
            panic!("argument drop");
        }
    }
    let delegate = SyncMulticastDelegate::<dyn Fn(PanicsOnDrop) + Send + Sync>::new();
    let _ = delegate.add_lambda(|argument| {
        std::mem::forget(argument);
        panic!("subscriber");
    });
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        delegate.broadcast(PanicsOnDrop);
    }));
    let payload = caught.expect_err("the subscriber's panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"subscriber"));
}

/// A1 on the thread-safe delegate: priority, one-shot and muted combine on one builder; a
/// one-shot at a priority runs once, in its place, on whichever thread broadcasts first.
#[test]
fn a1_ts1_options_combine_on_the_builder() {
    let delegate = Arc::new(OnValue::new());
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = |name: &'static str| {
        let log = Arc::clone(&log);
        move |value: u32| log.lock().unwrap().push((name, value))
    };
    let _ = delegate.add_lambda(sink("plain"));
    let _ = delegate
        .subscribe()
        .priority(5)
        .once()
        .add_lambda(sink("first, once"));
    let muted = delegate
        .subscribe()
        .priority(9)
        .muted()
        .add_lambda(sink("muted"));
    let _ = delegate.subscribe().priority(-1).add_static(|_| {});
    let listed = delegate.subscriptions();
    assert_eq!(
        listed
            .iter()
            .map(|s| (s.priority, s.muted, s.one_shot))
            .collect::<Vec<_>>(),
        [
            (9, true, false),
            (5, false, true),
            (0, false, false),
            (-1, false, false)
        ]
    );
    {
        let delegate = Arc::clone(&delegate);
        thread::spawn(move || delegate.broadcast(1)).join().unwrap();
    }
    assert!(delegate.unblock(muted));
    delegate.broadcast(2);
    assert_eq!(
        *log.lock().unwrap(),
        [("first, once", 1), ("plain", 1), ("muted", 2), ("plain", 2)]
    );
    assert_eq!(delegate.len(), 3, "the one-shot went after its call");
}

/// X6 on the thread-safe delegate: a self-aware subscriber receives its own subscription on
/// whichever thread calls it, and removes or blocks itself through it.
#[test]
fn x6_ts1_a_self_aware_subscriber_removes_itself_on_any_thread() {
    let delegate = Arc::new(OnValue::new());
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let handle = delegate
        .subscribe()
        .priority(3)
        .self_aware()
        .add_lambda(move |this, value| {
            counter.fetch_add(1, Ordering::SeqCst);
            assert!(this.is_subscribed());
            if value == 2 {
                assert!(this.remove());
                assert!(!this.is_subscribed());
            }
        });
    delegate.broadcast(1);
    {
        let delegate = Arc::clone(&delegate);
        thread::spawn(move || delegate.broadcast(2)).join().unwrap();
    }
    delegate.broadcast(3);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(!delegate.contains(handle));

    // A self-aware member blocks itself (counted) and is skipped until unblocked.
    struct Owner(AtomicU32);
    let owner = Arc::new(Owner(AtomicU32::new(0)));
    let handle = delegate
        .subscribe()
        .self_aware()
        .add_member(&owner, |owner, this, value| {
            owner.0.fetch_add(value, Ordering::SeqCst);
            assert!(this.block());
        });
    delegate.broadcast(5);
    delegate.broadcast(7);
    assert_eq!(owner.0.load(Ordering::SeqCst), 5);
    assert!(delegate.unblock(handle));
    delegate.broadcast(7);
    assert_eq!(owner.0.load(Ordering::SeqCst), 12);
}

/// M9 on the thread-safe delegate: the listing shows a member's owner alive, then dropped; the
/// dropped one is never called and goes at the delegate's next change.
#[test]
fn m9_ts1_a_members_owner_state_is_listed_and_a_dropped_one_goes_at_the_next_change() {
    use lumina::bind_site::OwnerState;
    struct Owner;
    fn on(_: &Owner, _: u32) {
        panic!("an owner that was dropped is never called");
    }
    let delegate = OnValue::new();
    let owner = Arc::new(Owner);
    let member = delegate.add_member(&owner, on);
    let (_plain, _) = counting(&delegate);
    let owners = |delegate: &OnValue| {
        delegate
            .subscriptions()
            .iter()
            .map(|s| s.owner)
            .collect::<Vec<_>>()
    };
    assert_eq!(owners(&delegate), [OwnerState::Alive, OwnerState::NoOwner]);
    drop(owner);
    assert_eq!(
        owners(&delegate),
        [OwnerState::Dropped, OwnerState::NoOwner]
    );
    delegate.broadcast(1);
    let (_other, _) = counting(&delegate);
    assert_eq!(
        owners(&delegate),
        [OwnerState::NoOwner, OwnerState::NoOwner]
    );
    assert!(!delegate.remove(member), "it went with the add");
}

/// B1 on the thread-safe delegate: the bind-only view subscribes (with options) and removes,
/// and is `Send + Sync` for a worker to subscribe through.
#[test]
fn b1_ts1_the_registration_view_subscribes_from_any_thread() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let delegate = OnValue::new();
    let calls = Arc::new(AtomicU32::new(0));
    let view = delegate.registration();
    send_sync(&view);
    let handle = thread::scope(|scope| {
        let calls = Arc::clone(&calls);
        scope
            .spawn(move || {
                view.subscribe().once().add_lambda(move |value| {
                    calls.fetch_add(value, Ordering::SeqCst);
                })
            })
            .join()
            .unwrap()
    });
    assert!(view.contains(handle));
    assert!(view.subscriptions()[0].one_shot);
    delegate.broadcast(4);
    delegate.broadcast(4);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(view.is_empty());
    let again = view.add_lambda(|_| {});
    assert!(view.remove(again));
}

lumina::declare_multicast_delegate!(
    /// An asset finished loading on a worker.
    pub sync AssetLoaded(path: String, bytes: u64)
);
lumina::declare_multicast_delegate!(pub sync Ready);

/// TS1: the declaring macro's thread-safe form: a named `Send + Sync` type with the runtime's
/// operations and builder, broadcast from a worker and the test's thread.
#[test]
fn ts1_a_declared_thread_safe_delegate() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AssetLoaded>();
    let on_loaded = Arc::new(AssetLoaded::new());
    let log = Arc::new(Mutex::new(Vec::new()));
    let (first, later) = (Arc::clone(&log), Arc::clone(&log));
    let _ = on_loaded.add_lambda(move |path, bytes| later.lock().unwrap().push((path, bytes)));
    let first_handle = on_loaded
        .subscribe()
        .priority(1)
        .once()
        .add_lambda(move |path: String, _| first.lock().unwrap().push((path.to_uppercase(), 0)));
    {
        let on_loaded = Arc::clone(&on_loaded);
        thread::spawn(move || on_loaded.broadcast("a.png".into(), 3))
            .join()
            .unwrap();
    }
    on_loaded.broadcast("b.png".into(), 4);
    assert_eq!(
        *log.lock().unwrap(),
        [
            ("A.PNG".to_string(), 0),
            ("a.png".to_string(), 3),
            ("b.png".to_string(), 4)
        ]
    );
    assert!(!on_loaded.contains(first_handle));
    assert_eq!(on_loaded.registration().len(), 1);

    let ready = Ready::default();
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let _ = ready.add_lambda(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    ready.broadcast();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Sets its flag when dropped: tells when a removed callable's last list version was freed.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// TS3's reclamation: a subscriber that removes itself replaces the list its broadcast reads;
/// that version (and the callable only it holds) is not freed while the broadcast runs, and is
/// freed as the last broadcast reading it returns, not later.
#[test]
fn ts3_a_replaced_list_is_freed_when_the_last_broadcast_reading_it_ends() {
    let delegate = Arc::new(OnValue::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let seen_during_call = Arc::new(AtomicBool::new(true));
    let flag = DropFlag(Arc::clone(&dropped));
    let (inner, seen) = (Arc::clone(&dropped), Arc::clone(&seen_during_call));
    let _ = delegate
        .subscribe()
        .self_aware()
        .add_lambda(move |this, _| {
            let _keep = &flag;
            assert!(this.remove());
            // The removal replaced the list: this call's own version must still be alive.
            seen.store(inner.load(Ordering::SeqCst), Ordering::SeqCst);
        });
    delegate.broadcast(1);
    assert!(
        !seen_during_call.load(Ordering::SeqCst),
        "the version a broadcast reads was freed during its call"
    );
    assert!(
        freed_by_the_end_or_the_next_changes(&dropped),
        "the removed callable's last version was not freed as its broadcast returned"
    );
    assert!(delegate.is_empty());
}

/// Whether `dropped` is set, or becomes so within a few changes of another thread-safe delegate:
/// a replaced version is freed when the last broadcast reading it ends, or, if that broadcast's
/// end found the reclamation busy on another thread (tests of this binary run in parallel), at
/// the next change of any thread-safe delegate (the module's docs).
fn freed_by_the_end_or_the_next_changes(dropped: &AtomicBool) -> bool {
    let other = OnValue::new();
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            return true;
        }
        let handle = other.add_lambda(|_| ());
        assert!(other.remove(handle));
    }
    dropped.load(Ordering::SeqCst)
}

/// TS3, nesting deeper than a thread's hazard slots: the inner broadcasts pin the version
/// instead; the innermost removes the subscriber, and its version lives until the outermost
/// broadcast reading it returns.
#[test]
fn ts3_broadcasts_nested_deeper_than_the_slots_keep_their_version() {
    let delegate = Arc::new(OnValue::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let early = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU32::new(0));
    let flag = DropFlag(Arc::clone(&dropped));
    let (weak, inner, early_seen, counter) = (
        Arc::downgrade(&delegate),
        Arc::clone(&dropped),
        Arc::clone(&early),
        Arc::clone(&calls),
    );
    let handle = Arc::new(Mutex::new(None));
    let own = Arc::clone(&handle);
    *handle.lock().unwrap() = Some(delegate.add_lambda(move |depth| {
        let _keep = &flag;
        counter.fetch_add(1, Ordering::SeqCst);
        let delegate = weak.upgrade().unwrap();
        if depth < 12 {
            delegate.broadcast(depth + 1);
        } else {
            assert!(delegate.remove(own.lock().unwrap().unwrap()));
        }
        early_seen.fetch_or(inner.load(Ordering::SeqCst), Ordering::SeqCst);
    }));
    delegate.broadcast(1);
    assert_eq!(calls.load(Ordering::SeqCst), 12);
    assert!(
        !early.load(Ordering::SeqCst),
        "a nested broadcast's version was freed early"
    );
    assert!(freed_by_the_end_or_the_next_changes(&dropped));
}

/// X6, V1: the listing says which subscriptions are self-aware.
#[test]
fn x6_ts1_the_listing_shows_self_aware_subscriptions() {
    let delegate = OnValue::new();
    let _ = delegate.add_lambda(|_| ());
    let aware = delegate
        .subscribe()
        .priority(1)
        .self_aware()
        .add_lambda(|_, _| ());
    let listing = delegate.subscriptions();
    assert_eq!(listing.len(), 2);
    assert_eq!(listing[0].handle, aware);
    assert!(listing[0].self_aware);
    assert!(!listing[1].self_aware);
}
