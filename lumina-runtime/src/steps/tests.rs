//! Rule N4, counted: each operation runs `OPS` times on state of 1 000 and of 16 000, and its
//! steps per operation (comparisons, probes, elements visited or shifted: `steps::add`) may grow
//! at most 2x from the small size to the large one. A linear scan grows 16x, a binary search
//! 1.4x.

use std::rc::Rc;

use super::count;
use crate::handle::DelegateHandle;
use crate::multicast::MulticastDelegate;

mod bus;

const SMALL: usize = 1_000;
const LARGE: usize = 16_000;
/// Operations measured per size (after the state is built, which is not counted).
const OPS: usize = 64;

type Delegate = MulticastDelegate<dyn Fn(u32)>;

/// Steps per operation at size `n`: `setup(n)` builds the state and returns the operation,
/// called with `0..OPS`.
fn per_op<F: FnMut(usize)>(n: usize, setup: &impl Fn(usize) -> F) -> f64 {
    let mut op = setup(n);
    let steps = count(|| (0..OPS).for_each(&mut op));
    steps as f64 / OPS as f64
}

/// Fails when `setup`'s operation costs more than 2x per operation at 16 000 than at 1 000 (plus
/// a few steps of slack, for operations that cost almost nothing).
#[track_caller]
fn assert_flat<F: FnMut(usize)>(name: &str, setup: impl Fn(usize) -> F) {
    let small = per_op(SMALL, &setup);
    let large = per_op(LARGE, &setup);
    println!("N4 {name}: {small:.1} steps per operation at {SMALL}, {large:.1} at {LARGE}");
    assert!(
        large <= 2.0 * small + 8.0,
        "N4: {name} grows from {small:.1} steps per operation at {SMALL} to {large:.1} at {LARGE}"
    );
}

fn plain(n: usize) -> (Delegate, Vec<DelegateHandle>) {
    let delegate = Delegate::new();
    let handles = (0..n).map(|_| delegate.add_lambda(|_| {})).collect();
    (delegate, handles)
}

struct Actor;
impl Actor {
    fn on(&self, _: u32) {}
    fn other(&self, _: u32) {}
}

/// `n` owners, each with one `add_method` binding; the owners are returned to be kept alive.
fn owned(n: usize) -> (Delegate, Vec<Rc<Actor>>) {
    let delegate = Delegate::new();
    let owners: Vec<Rc<Actor>> = (0..n).map(|_| Rc::new(Actor)).collect();
    for owner in &owners {
        let _ = delegate.add_method(owner, Actor::on);
    }
    (delegate, owners)
}

#[test]
fn n4_the_counter_sees_a_scan() {
    // The device works: an operation that walks by nature (`len`) is counted per entry.
    let (delegate, _owners) = owned(SMALL);
    let steps = count(|| assert_eq!(delegate.len(), SMALL));
    assert!(steps >= SMALL as u64, "{steps}");
}

#[test]
fn n4_add_and_remove_by_handle_at_one_priority() {
    assert_flat("add_lambda", |n| {
        let (delegate, _) = plain(n);
        move |_| {
            let _ = delegate.add_lambda(|_| {});
        }
    });
    assert_flat("remove by handle", |n| {
        let (delegate, handles) = plain(n);
        move |i| assert!(delegate.remove(handles[i * 7]))
    });
    assert_flat("block + unblock", |n| {
        let (delegate, handles) = plain(n);
        move |i| assert!(delegate.block(handles[i * 7]) && delegate.unblock(handles[i * 7]))
    });
}

/// By owner: O(k) in the owner's own subscriptions (rule N4), not a scan of the list.
#[test]
fn n4_by_owner_costs_the_owners_subscriptions() {
    assert_flat("remove_all(owner)", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_all(&owners[i * 7]), 1)
    });
    assert_flat("is_bound_to(owner)", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert!(delegate.is_bound_to(&owners[i * 7]))
    });
    assert_flat("is_bound_to(a stranger)", |n| {
        let (delegate, _owners) = owned(n);
        let stranger = Rc::new(Actor);
        move |_| assert!(!delegate.is_bound_to(&stranger))
    });
    assert_flat("remove_method", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_method(&owners[i * 7], Actor::on), 1)
    });
    assert_flat("remove_method of another method", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_method(&owners[i * 7], Actor::other), 0)
    });
}

fn unknown(_: u32) {}
fn known(_: u32) {}

/// `remove_static` of a function with no subscription, and `is_bound` after removals: O(1).
#[test]
fn n4_remove_static_and_is_bound_look_nothing_up_in_the_list() {
    assert_flat("remove_static(unknown)", |n| {
        let delegate = Delegate::new();
        for _ in 0..n {
            let _ = delegate.add_static(known);
        }
        move |_| assert_eq!(delegate.remove_static(unknown), 0)
    });
    assert_flat("is_bound after half were removed", |n| {
        let (delegate, handles) = plain(n);
        for handle in &handles[..n / 2 - 1] {
            assert!(delegate.remove(*handle));
        }
        move |_| assert!(delegate.is_bound())
    });
}

/// Fails when `small` (steps per operation at 1 000) grows more than 2x at 16 000 (`large`).
#[track_caller]
fn assert_within(name: &str, small: f64, large: f64) {
    println!("N4 {name}: {small:.1} steps per operation at {SMALL}, {large:.1} at {LARGE}");
    assert!(
        large <= 2.0 * small + 8.0,
        "N4: {name} grows from {small:.1} steps per operation at {SMALL} to {large:.1} at {LARGE}"
    );
}

type List = crate::invocation::InvocationList<Rc<dyn Fn(u32)>>;

fn callable() -> Rc<dyn Fn(u32)> {
    Rc::new(|_| {})
}

/// A list locked by a running broadcast (leaked: the state of one measure), with `n`
/// subscribers added during it, waiting in the pending list.
fn broadcasting_with_pending(n: usize) -> (&'static List, Vec<DelegateHandle>) {
    let list: &'static List = Box::leak(Box::new(List::new()));
    let _ = list.add(callable());
    std::mem::forget(list.begin());
    let added = (0..n).map(|_| list.add(callable())).collect();
    (list, added)
}

/// A nested broadcast over P subscribers added during the outer one: O(1) per call (the pending
/// entry it calls is found by key, not by a scan), so O(P) per broadcast.
#[test]
fn n4_a_nested_broadcast_over_pending_subscribers_costs_per_call() {
    let per_call = |n: usize| {
        let (list, _) = broadcasting_with_pending(n);
        let steps = count(|| {
            for _ in 0..4 {
                list.broadcast_with(0, |subscriber, argument| subscriber(argument));
            }
        });
        steps as f64 / (4 * n) as f64
    };
    assert_within(
        "nested broadcast over pending (per call)",
        per_call(SMALL),
        per_call(LARGE),
    );
}

/// Adding then removing a subscriber during a broadcast, with P added before it waiting:
/// O(log P) (a binary search in the pending list).
#[test]
fn n4_add_and_remove_during_a_broadcast() {
    assert_flat("add + remove during a broadcast", |n| {
        let (list, _) = broadcasting_with_pending(n);
        move |_| {
            let handle = list.add(callable());
            assert!(list.remove(handle));
        }
    });
    assert_flat("remove of a pending subscriber", |n| {
        let (list, added) = broadcasting_with_pending(n);
        move |i| assert!(list.remove(added[i * 7]))
    });
}

/// `n` subscribers at `n` distinct priorities (added from the highest down, then broadcast
/// once: `n` priority runs).
fn prioritized(n: usize) -> (Delegate, Vec<DelegateHandle>) {
    let delegate = Delegate::new();
    let handles = (0..n)
        .map(|i| {
            delegate
                .subscribe()
                .priority(i32::try_from(n - i).unwrap())
                .add_lambda(|_| {})
        })
        .collect();
    delegate.broadcast(0);
    (delegate, handles)
}

/// With n distinct priorities, a lookup by handle finds the priority run by the index by id:
/// O(log n), not a search in each run.
#[test]
fn n4_by_handle_among_distinct_priorities() {
    // The lowest priorities: a search run by run would reach them last.
    assert_flat("remove by handle, distinct priorities", |n| {
        let (delegate, handles) = prioritized(n);
        move |i| assert!(delegate.remove(handles[n - 1 - i * 7]))
    });
    assert_flat("block + unblock, distinct priorities", |n| {
        let (delegate, handles) = prioritized(n);
        move |i| {
            let handle = handles[n - 1 - i * 7];
            assert!(delegate.block(handle) && delegate.unblock(handle));
        }
    });
}

/// A change of priority outside a broadcast moves the subscriber into the deferred (pending)
/// list, merged by the next broadcast's end: O(log n) plus the changes deferred since, not a
/// shift of the main list.
#[test]
fn n4_set_priority_is_no_shift_of_the_list() {
    assert_flat("set_priority above every priority", |n| {
        let (delegate, handles) = prioritized(n);
        let top = i32::try_from(n).unwrap() + 1;
        move |i| {
            let priority = top + i32::try_from(i).unwrap();
            assert!(delegate.set_priority(handles[n - 1 - i * 7], priority));
        }
    });
    assert_flat("set_priority into the middle", |n| {
        let (delegate, handles) = prioritized(n);
        move |i| {
            let priority = i32::try_from(n / 2).unwrap();
            assert!(delegate.set_priority(handles[n - 1 - i * 7], priority));
        }
    });
}

/// Adding at a priority higher than every other waits in the deferred list for the next
/// broadcast's merge: O(log n) amortized, not an insertion at the front.
#[test]
fn n4_adding_above_every_priority() {
    assert_flat("add at a priority above every other", |n| {
        let (delegate, _) = prioritized(n);
        let top = i32::try_from(n).unwrap() + 1;
        move |i| {
            let _ = delegate
                .subscribe()
                .priority(top + i32::try_from(i).unwrap())
                .add_lambda(|_| {});
        }
    });
}

/// Adds above every priority, then one broadcast: the merge is shared by the adds (O(n + m)),
/// so per add and per broadcast O(1) amortized when m grows with n.
#[test]
fn n4_adds_above_every_priority_merged_by_a_broadcast() {
    let per_add = |n: usize| {
        let (delegate, _) = prioritized(n);
        let top = i32::try_from(n).unwrap() + 1;
        let adds = n / 8;
        let steps = count(|| {
            for i in 0..adds {
                let _ = delegate
                    .subscribe()
                    .priority(top + i32::try_from(i % 16).unwrap())
                    .add_lambda(|_| {});
            }
            delegate.broadcast(0);
        });
        steps as f64 / adds as f64
    };
    assert_within(
        "add above every priority, the broadcast's merge included",
        per_add(SMALL),
        per_add(LARGE),
    );
}

/// Changes of priority during a broadcast wait for its end, which applies them all in one
/// merge: with n / 8 of them, O(log n) each, settle included (the settle is O(n), shared by
/// the n / 8 moves).
#[test]
fn n4_set_priority_during_a_broadcast_settle_included() {
    let per_move = |n: usize| {
        let (delegate, handles) = prioritized(n);
        let delegate: &'static Delegate = Box::leak(Box::new(delegate));
        let moves = n / 8;
        let done = std::cell::Cell::new(false);
        let _ = delegate
            .subscribe()
            .priority(i32::MAX)
            .add_lambda(move |_| {
                if !done.replace(true) {
                    for (i, handle) in handles.iter().step_by(7).take(moves).enumerate() {
                        assert!(delegate.set_priority(*handle, -1 - i32::try_from(i).unwrap()));
                    }
                }
            });
        // The walk itself counts nothing; its settle and the merges are the moves' cost.
        let steps = count(|| delegate.broadcast(0));
        steps as f64 / moves as f64
    };
    assert_within(
        "set_priority during a broadcast, settle included",
        per_move(SMALL),
        per_move(LARGE),
    );
}

/// Subscribing with an owner that dies at once, n times with no broadcast: the add's sweep of
/// dead owners runs once the owners table has doubled since the last sweep. Beside one live
/// subscription placed after every dead one, `is_bound` after each add walks the dead ones not
/// yet swept: at most 8 here (a list that never swept would walk all of them, O(n) per add);
/// beside n live owners, a sweep walks the n rows once every n adds (one on every add would be
/// O(n) per add).
#[test]
fn n4_adds_sweep_dead_owners_when_the_owners_table_doubled() {
    let with_is_bound = |n: usize| {
        let delegate = Delegate::new();
        let kept = Rc::new(Actor);
        let _ = delegate
            .subscribe()
            .priority(-1)
            .add_method(&kept, Actor::on);
        let steps = count(|| {
            for _ in 0..n {
                let _ = delegate.add_method(&Rc::new(Actor), Actor::on);
                assert!(delegate.is_bound());
            }
        });
        assert_eq!(delegate.len(), 1);
        steps as f64 / n as f64
    };
    assert_within(
        "add_method whose owner dies, then is_bound (dead ones not swept walked)",
        with_is_bound(SMALL),
        with_is_bound(LARGE),
    );
    let beside_live = |n: usize| {
        let (delegate, _owners) = owned(n);
        let steps = count(|| {
            for _ in 0..n {
                let _ = delegate.add_method(&Rc::new(Actor), Actor::on);
            }
        });
        assert_eq!(delegate.len(), n);
        steps as f64 / n as f64
    };
    assert_within(
        "add_method whose owner dies beside n live owners, sweeps included",
        beside_live(SMALL),
        beside_live(LARGE),
    );
}

/// A burst of n subscriptions (closures, members of live owners, higher priorities), then
/// every one removed by handle, twice: the tables shrink once under a quarter full, to twice
/// what they hold, so each reallocation is paid by the subscriptions that came and went
/// (O(1) amortized: the moves are counted), and afterwards they hold room for a few slots, not
/// for the burst (a list that never shrank keeps room for n).
#[test]
fn n4_tables_shrink_after_a_burst() {
    let per_subscription = |n: usize| {
        let list = List::new();
        let _kept = list.add(callable());
        let owners: Vec<Rc<Actor>> = (0..n).map(|_| Rc::new(Actor)).collect();
        let steps = count(|| {
            for _ in 0..2 {
                let handles: Vec<DelegateHandle> = (0..n)
                    .map(|i| match i % 3 {
                        0 => list.add_owned(&owners[i], callable()),
                        1 => list.insert(i32::try_from(i % 5).unwrap(), None, callable()),
                        _ => list.add(callable()),
                    })
                    .collect();
                for handle in handles {
                    assert!(list.remove(handle));
                }
            }
        });
        assert_eq!(list.len(), 1);
        let room = list.capacities();
        assert!(
            room <= 512,
            "N4: {room} slots of room left after a burst of {n}"
        );
        steps as f64 / (2 * n) as f64
    };
    assert_within(
        "a burst of subscriptions then their removal, shrinks included",
        per_subscription(SMALL),
        per_subscription(LARGE),
    );
}

mod events {
    //! The event processor's registrations (N4).

    use std::rc::Rc;

    use super::{LARGE, SMALL, assert_flat, assert_within, count};
    use crate::event::{Event, EventHandler, EventProcessor, Key, KeyPressedEvent, Modifiers};

    /// A handler that takes the key presses.
    struct Keys;

    impl EventHandler for Keys {
        fn on_event(&self, event: &mut dyn Event) -> bool {
            event.is::<KeyPressedEvent>()
        }
    }

    fn consumer() -> Rc<Keys> {
        Rc::new(Keys)
    }

    type Handlers = Vec<Rc<Keys>>;

    /// A processor with `n` handlers at `n` distinct priorities (kept alive by the caller).
    fn processor(n: usize) -> (EventProcessor, Handlers) {
        let processor = EventProcessor::new();
        let handlers: Handlers = (0..n)
            .map(|i| {
                let handler = consumer();
                assert!(processor.register_event_handler(&handler, i32::try_from(i).unwrap()));
                handler
            })
            .collect();
        processor.dispatch(KeyPressedEvent::new(Key::Q, Modifiers::NONE));
        (processor, handlers)
    }

    /// Register + unregister: O(log n) through the index by owner, also for typed handlers.
    #[test]
    fn n4_processor_register_and_unregister() {
        assert_flat("register + unregister", |n| {
            let (processor, _handlers) = processor(n);
            move |i| {
                let handler = consumer();
                assert!(processor.register_event_handler(&handler, -1 - i32::try_from(i).unwrap()));
                assert!(processor.unregister_event_handler(&handler));
            }
        });
        assert_flat("unregister of an old handler", |n| {
            let (processor, handlers) = processor(n);
            move |i| assert!(processor.unregister_event_handler(&handlers[i * 7]))
        });
        assert_flat("typed handler add + drop", |n| {
            let (processor, _handlers) = processor(n);
            move |_| drop(processor.add_handler::<KeyPressedEvent>(5, |_| false))
        });
    }

    /// A viewport that takes every event routed to it.
    struct Takes;

    impl EventHandler for Takes {
        fn on_event(&self, _: &mut dyn Event) -> bool {
            true
        }
    }

    fn viewport() -> Rc<Takes> {
        Rc::new(Takes)
    }

    /// A registry with `n` live viewports (kept by the caller) and `n` dropped ones, the first
    /// focused, registered with a processor.
    fn viewports(
        n: usize,
    ) -> (
        EventProcessor,
        Rc<crate::event::InputViewportRegistry>,
        Vec<crate::event::ViewportId>,
        Vec<Rc<Takes>>,
    ) {
        use crate::event::{InputViewportRegistry, Rect};
        let processor = EventProcessor::new();
        let registry = Rc::new(InputViewportRegistry::new());
        assert!(registry.register(&processor));
        let mut ids = Vec::new();
        let mut kept = Vec::new();
        for _ in 0..n {
            let live = viewport();
            ids.push(registry.add_viewport(&live, Rect::new(0.0, 0.0, 10.0, 10.0)));
            kept.push(live);
            let _ = registry.add_viewport(&viewport(), Rect::new(0.0, 0.0, 10.0, 10.0));
        }
        assert!(registry.focus(ids[0]));
        (processor, registry, ids, kept)
    }

    /// Viewports (N4): add + remove, a key to the focused viewport, `set_rect`, `focus` and
    /// `remove` of a dropped one: a binary search by id, the sweep of dropped ones
    /// amortized.
    #[test]
    fn n4_viewports_by_id() {
        use crate::event::Rect;
        let rect = Rect::new(1.0, 1.0, 5.0, 5.0);
        assert_flat("viewport add + remove", |n| {
            let (_processor, registry, _ids, _kept) = viewports(n);
            move |_| {
                let live = viewport();
                let id = registry.add_viewport(&live, rect);
                assert!(registry.remove(id));
            }
        });
        assert_flat("viewport add + drop", |n| {
            let (_processor, registry, _ids, _kept) = viewports(n);
            move |_| {
                let _ = registry.add_viewport(&viewport(), rect);
            }
        });
        assert_flat("a key to the focused viewport", |n| {
            let (processor, registry, _ids, kept) = viewports(n);
            move |_| {
                // Kept alive by the measure: the registry and its viewports.
                let _ = (&registry, &kept);
                assert!(processor.dispatch(KeyPressedEvent::new(Key::Q, Modifiers::NONE)));
            }
        });
        assert_flat("viewport set_rect + focus", |n| {
            let (_processor, registry, ids, kept) = viewports(n);
            move |i| {
                let _ = &kept;
                assert!(registry.set_rect(ids[n - 1 - i * 7], rect));
                assert!(registry.focus(ids[n - 1 - i * 7]));
            }
        });
        assert_flat("remove of a viewport, a dropped one", |n| {
            let (_processor, registry, ids, mut kept) = viewports(n);
            move |i| {
                drop(std::mem::replace(&mut kept[n - 1 - i * 7], viewport()));
                assert!(!registry.remove(ids[n - 1 - i * 7]));
            }
        });
    }

    /// Register + unregister n times (the allocator hands the same address out again and
    /// again): removed ids do not pile up under it in the index by owner (N4).
    #[test]
    fn n4_processor_register_and_unregister_n_times() {
        let per_op = |n: usize| {
            let (processor, _handlers) = processor(n);
            let steps = count(|| {
                for i in 0..n {
                    let handler = consumer();
                    let priority = i32::try_from(i % 7).unwrap();
                    assert!(processor.register_event_handler(&handler, priority));
                    assert!(processor.unregister_event_handler(&handler));
                }
            });
            steps as f64 / n as f64
        };
        assert_within(
            "register + unregister, n times",
            per_op(SMALL),
            per_op(LARGE),
        );
    }

    /// Register + unregister from inside a dispatch: the added handler waits in the pending
    /// list, found there by a binary search.
    #[test]
    fn n4_processor_register_and_unregister_during_a_dispatch() {
        let per_op = |n: usize| {
            let (processor, handlers) = processor(n);
            let processor = Rc::new(processor);
            let inner = Rc::clone(&processor);
            let steps = Rc::new(std::cell::Cell::new(0));
            let counted = Rc::clone(&steps);
            let once = Rc::new(std::cell::Cell::new(false));
            let trigger = Rc::new(move |_: &mut dyn Event| {
                if !once.replace(true) {
                    // `n` added first, then the measured operations among them.
                    let added: Handlers = (0..n).map(|_| consumer()).collect();
                    for handler in &added {
                        assert!(inner.register_event_handler(handler, 3));
                    }
                    counted.set(count(|| {
                        for handler in added.iter().step_by(7).take(64) {
                            assert!(inner.unregister_event_handler(handler));
                            let fresh = consumer();
                            assert!(inner.register_event_handler(&fresh, 2));
                            assert!(inner.unregister_event_handler(&fresh));
                        }
                    }));
                }
                false
            });
            assert!(processor.register_event_handler(&trigger, i32::MAX));
            // A key no handler of `processor(n)` takes before the trigger runs.
            processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE));
            drop(handlers);
            steps.get() as f64 / 64.0
        };
        assert_within(
            "register + unregister during a dispatch",
            per_op(SMALL),
            per_op(LARGE),
        );
    }
}
