//! The scaling section of the quick report (rule N4): each operation's time at two sizes of the
//! state it works on, 1 000 and 16 000, through the public API, and whether its cost per
//! operation stays within 2x from the small size to the large one.
//!
//! Each operation leaves the state as it found it (a removal adds back what it removed), so it
//! can run many times on one state: the state is built once per size, then timed in 3 batches
//! of at least [`BATCH`] each, the two sizes' batches alternating; a cell is the median of the 3. Operations that walk by nature
//! (broadcast, dispatch, send, listings) are timed per element they walk.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::hint::black_box;
use std::ptr::null_mut;
use std::rc::Rc;
use std::time::{Duration, Instant};

use lumina::bus::{MessageBus, Tag, TagKey};
use lumina::event::{
    EventProcessor, InputViewportRegistry, Key, KeyPressedEvent, Modifiers, Rect, ViewportId,
};
use lumina::{
    DelegateHandle, MulticastDelegate, QueuedSender, ScriptDelegate, coroutine, main_thread,
    script_generation,
};

/// The small size of every row; the large one is 16 times it.
const SMALL: usize = 1_000;
const LARGE: usize = 16 * SMALL;
/// The least time one timed batch takes.
const BATCH: Duration = Duration::from_millis(3);

type Delegate = MulticastDelegate<dyn Fn(u32)>;

/// One operation on the state a size builds: called with 0, 1, 2, ...; it does `per` units of
/// work (subscribers walked), the row's time is per unit.
struct Op {
    run: Box<dyn FnMut(usize)>,
    per: usize,
    /// The time the operation measured itself (the part of it the row is about), if it does.
    clock: Option<Rc<Cell<Duration>>>,
    /// How many calls the state allows (an operation that uses it up), over the 3 batches.
    limit: usize,
}

fn op(run: impl FnMut(usize) + 'static) -> Op {
    per(1, run)
}

fn per(per: usize, run: impl FnMut(usize) + 'static) -> Op {
    Op {
        run: Box::new(run),
        per,
        clock: None,
        limit: usize::MAX,
    }
}

/// One row: its name and how a size builds its state and operation.
struct Row {
    name: &'static str,
    build: Box<dyn Fn(usize) -> Op>,
    /// Its state lies partly in a registry of the thread (queued senders, script generations):
    /// the two sizes are timed one after the other, each state alone in it.
    alone: bool,
}

fn row(name: &'static str, build: impl Fn(usize) -> Op + 'static) -> Row {
    Row {
        name,
        build: Box::new(build),
        alone: false,
    }
}

/// A [`row`] whose state lies partly in a registry of the thread (see [`Row::alone`]).
fn row_alone(name: &'static str, build: impl Fn(usize) -> Op + 'static) -> Row {
    Row {
        alone: true,
        ..row(name, build)
    }
}

/// ns per unit of `op`'s next batch of at least [`BATCH`] (and at most its share of `limit`);
/// `calls` counts the calls made so far.
fn batch(op: &mut Op, calls: &mut usize) -> f64 {
    if let Some(clock) = &op.clock {
        clock.set(Duration::ZERO);
    }
    let start = Instant::now();
    let mut done = 0;
    while done < op.limit / ROUNDS && (done < 4 || start.elapsed() < BATCH) {
        (op.run)(*calls);
        *calls += 1;
        done += 1;
    }
    let spent = op
        .clock
        .as_ref()
        .map_or(start.elapsed(), |clock| clock.get());
    spent.as_nanos() as f64 / (done * op.per) as f64
}

/// Batches per size; a cell is their median.
const ROUNDS: usize = 3;

/// ns per unit at both sizes: the median of [`ROUNDS`] batches each, the sizes' batches
/// alternating (so a stretch of load from the machine's other users slows both alike), or,
/// for a row [`alone`](Row::alone), one size after the other.
fn time(row: &Row) -> (f64, f64) {
    let median = |mut times: [f64; ROUNDS]| {
        times.sort_by(f64::total_cmp);
        times[ROUNDS / 2]
    };
    let mut times = ([0.0; ROUNDS], [0.0; ROUNDS]);
    if row.alone {
        for (size, times) in [(SMALL, &mut times.0), (LARGE, &mut times.1)] {
            let (mut op, mut calls) = ((row.build)(size), 0);
            for time in times.iter_mut() {
                *time = batch(&mut op, &mut calls);
            }
        }
    } else {
        let (mut small, mut large) = ((row.build)(SMALL), (row.build)(LARGE));
        let (mut small_calls, mut large_calls) = (0, 0);
        for (at_small, at_large) in times.0.iter_mut().zip(&mut times.1) {
            *at_small = batch(&mut small, &mut small_calls);
            *at_large = batch(&mut large, &mut large_calls);
        }
    }
    (median(times.0), median(times.1))
}

struct Actor;
impl Actor {
    fn on(&self, _: u32) {}
}

// Different bodies: identical functions may be merged into one address by the optimizer.
fn known(value: u32) {
    black_box(value);
}
fn unknown(value: u32) {
    black_box(value + 1);
}

/// The `i`th index among `n` to visit: from the newest down, so that a walk from the oldest
/// (the linear searches rule N4 removes) shows, and memory is visited in order.
fn spread(i: usize, n: usize) -> usize {
    n - 1 - i % n
}

/// `n` owners, one `add_method` binding each.
fn owned(n: usize) -> (Rc<Delegate>, Rc<Vec<Rc<Actor>>>) {
    let delegate = Rc::new(Delegate::new());
    let owners: Vec<Rc<Actor>> = (0..n).map(|_| Rc::new(Actor)).collect();
    for owner in &owners {
        let _ = delegate.add_method(owner, Actor::on);
    }
    (delegate, Rc::new(owners))
}

/// `n` subscribers, each at its own priority, with their handles.
fn prioritized(n: usize) -> (Delegate, Vec<DelegateHandle>) {
    let delegate = Delegate::new();
    let handles = (0..n)
        .map(|i| delegate.subscribe().priority(i as i32).add_lambda(|_| {}))
        .collect();
    (delegate, handles)
}

/// The rows of the multicast delegate.
fn delegate_rows() -> Vec<Row> {
    vec![
        row(
            "nested broadcast over P added during the outer one, per call",
            |n| {
                // The outer broadcast's subscriber adds P, broadcasts again (timed), removes them.
                let delegate = Rc::new(Delegate::new());
                let spent = Rc::new(Cell::new(Duration::ZERO));
                let (inner, clock) = (Rc::downgrade(&delegate), Rc::clone(&spent));
                let _ = delegate.add_lambda(move |depth| {
                    let Some(delegate) = inner.upgrade() else {
                        return;
                    };
                    if depth > 0 {
                        return;
                    }
                    let handles: Vec<DelegateHandle> =
                        (0..n).map(|_| delegate.add_lambda(|_| {})).collect();
                    let start = Instant::now();
                    delegate.broadcast(1);
                    clock.set(clock.get() + start.elapsed());
                    for handle in handles {
                        delegate.remove(handle);
                    }
                });
                // Timed inside: only the nested broadcast counts.
                Op {
                    clock: Some(spent),
                    ..per(n, move |_| delegate.broadcast(0))
                }
            },
        ),
        row(
            "add + remove P subscribers within one broadcast, per pair",
            |n| {
                let delegate = Rc::new(Delegate::new());
                let inner = Rc::downgrade(&delegate);
                let _ = delegate.add_lambda(move |_| {
                    let Some(delegate) = inner.upgrade() else {
                        return;
                    };
                    let handles: Vec<DelegateHandle> =
                        (0..n).map(|_| delegate.add_lambda(|_| {})).collect();
                    for handle in handles {
                        delegate.remove(handle);
                    }
                });
                per(n, move |_| delegate.broadcast(0))
            },
        ),
        row("remove_all(owner) + add_method, n owners", |n| {
            let (delegate, owners) = owned(n);
            op(move |i| {
                let owner = &owners[spread(i, n)];
                assert_eq!(delegate.remove_all(owner), 1);
                let _ = delegate.add_method(owner, Actor::on);
            })
        }),
        row("is_bound_to(owner), n owners", |n| {
            let (delegate, owners) = owned(n);
            op(move |i| assert!(delegate.is_bound_to(&owners[spread(i, n)])))
        }),
        row("remove_method + add_method, n owners", |n| {
            let (delegate, owners) = owned(n);
            op(move |i| {
                let owner = &owners[spread(i, n)];
                assert_eq!(delegate.remove_method(owner, Actor::on), 1);
                let _ = delegate.add_method(owner, Actor::on);
            })
        }),
        row("remove_static of a function not subscribed", |n| {
            let delegate = Delegate::new();
            for _ in 0..n {
                let _ = delegate.add_static(known);
            }
            op(move |_| assert_eq!(delegate.remove_static(unknown), 0))
        }),
        row("is_bound after half were removed", |n| {
            let delegate = Delegate::new();
            let handles: Vec<DelegateHandle> =
                (0..n).map(|_| delegate.add_lambda(|_| {})).collect();
            for handle in &handles[..n / 2] {
                delegate.remove(*handle);
            }
            op(move |_| assert!(delegate.is_bound()))
        }),
        row("block + unblock, n priorities", |n| {
            let (delegate, handles) = prioritized(n);
            op(move |i| {
                let handle = handles[spread(i, n)];
                assert!(delegate.block(handle) && delegate.unblock(handle));
            })
        }),
        row("remove by handle + add back, n priorities", |n| {
            let (delegate, handles) = prioritized(n);
            let mut handles = handles;
            op(move |i| {
                let at = spread(i, n);
                assert!(delegate.remove(handles[at]));
                handles[at] = delegate.subscribe().priority(at as i32).add_lambda(|_| {});
            })
        }),
        row("add at a priority above all + remove, n priorities", |n| {
            let (delegate, _) = prioritized(n);
            op(move |i| {
                let handle = delegate
                    .subscribe()
                    .priority((n + i) as i32)
                    .add_lambda(|_| {});
                assert!(delegate.remove(handle));
            })
        }),
        row("set_priority, n priorities", |n| {
            let (delegate, handles) = prioritized(n);
            op(move |i| {
                let at = spread(i, n);
                let priority = if (i / n) % 2 == 0 {
                    -(at as i32) - 1
                } else {
                    at as i32
                };
                assert!(delegate.set_priority(handles[at], priority));
            })
        }),
        row(
            "set_priority during a broadcast, n priorities (per call)",
            |n| {
                let (delegate, handles) = prioritized(n);
                let delegate = Rc::new(delegate);
                let (inner, round) = (Rc::downgrade(&delegate), Cell::new(0_i32));
                // n / 8 moves per broadcast, as the step test
                // (`n4_set_priority_during_a_broadcast_settle_included`): each broadcast walks
                // its n subscribers and its settle merges the n entries once, O(n) shared by
                // the moves; with a fixed count (it was 32) each call carried 1/32 of that
                // O(n) walk and merge, so the row grew with n by construction.
                let calls = n / 8;
                let _ = delegate
                    .subscribe()
                    .priority(i32::MAX)
                    .add_lambda(move |_| {
                        let Some(delegate) = inner.upgrade() else {
                            return;
                        };
                        round.set(round.get() + 1);
                        for k in 0..calls {
                            let at = spread(round.get() as usize * calls + k, n);
                            delegate
                                .set_priority(handles[at], round.get() % 2 * n as i32 + at as i32);
                        }
                    });
                per(calls, move |_| delegate.broadcast(0))
            },
        ),
        row("add_lambda + remove by handle, one priority (flat)", |n| {
            let delegate = Delegate::new();
            for _ in 0..n {
                let _ = delegate.add_lambda(|_| {});
            }
            op(move |_| {
                let handle = delegate.add_lambda(|_| {});
                assert!(delegate.remove(handle));
            })
        }),
        row(
            "one-shots used up in a broadcast, per one-shot (flat)",
            |n| {
                let delegate = Delegate::new();
                per(n, move |_| {
                    for _ in 0..n {
                        let _ = delegate.subscribe().once().add_lambda(|_| {});
                    }
                    delegate.broadcast(0);
                })
            },
        ),
        row("broadcast, per subscriber (flat)", |n| {
            let delegate = Delegate::new();
            let sum = Rc::new(Cell::new(0_u32));
            for _ in 0..n {
                let sum = Rc::clone(&sum);
                let _ = delegate.add_lambda(move |value| sum.set(sum.get().wrapping_add(value)));
            }
            per(n, move |_| delegate.broadcast(1))
        }),
        row("subscriptions() listing, per subscriber (flat)", |n| {
            let delegate = Delegate::new();
            for _ in 0..n {
                let _ = delegate.add_lambda(|_| {});
            }
            per(n, move |_| assert_eq!(delegate.subscriptions().len(), n))
        }),
        row("next() made and dropped, n subscribers (flat)", |n| {
            let delegate = Delegate::new();
            for _ in 0..n {
                let _ = delegate.add_lambda(|_| {});
            }
            op(move |_| drop(black_box(delegate.next())))
        }),
    ]
}

/// A handler that handles nothing.
fn pass(_: &mut dyn lumina::event::Event) -> bool {
    false
}

/// A processor with `n` handlers registered (held weakly there), and the handlers.
fn handlers(n: usize) -> (EventProcessor, Vec<View>) {
    let processor = EventProcessor::new();
    let handlers: Vec<View> = (0..n).map(|_| view()).collect();
    for handler in &handlers {
        assert!(processor.register_event_handler(handler, 0));
    }
    (processor, handlers)
}

/// The rows of the event processor and viewports.
fn event_rows() -> Vec<Row> {
    vec![
        row("EventProcessor register + unregister, n handlers", |n| {
            let (processor, handlers) = handlers(n);
            op(move |i| {
                let _ = &handlers;
                let handler = view();
                assert!(processor.register_event_handler(&handler, (i % 7) as i32));
                assert!(processor.unregister_event_handler(&handler));
            })
        }),
        row("dispatch, per handler (flat)", |n| {
            let (processor, handlers) = handlers(n);
            per(n, move |_| {
                let _ = &handlers;
                let event = KeyPressedEvent::new(Key::Space, Modifiers::default());
                black_box(processor.dispatch(event));
            })
        }),
        row("viewports: add + remove, n viewports", |n| {
            let (registry, views, _) = viewports(n);
            op(move |_| {
                let _ = &views;
                let view = view();
                let id = registry.add_viewport(&view, Rect::new(0.0, 0.0, 1.0, 1.0));
                assert!(registry.remove(id));
            })
        }),
        row("viewports: a key to the focused one, n viewports", |n| {
            let (registry, views, ids) = viewports(n);
            let processor = EventProcessor::new();
            assert!(registry.register(&processor));
            assert!(registry.focus(ids[n / 2]));
            op(move |_| {
                let _ = (&views, &registry);
                let event = KeyPressedEvent::new(Key::Space, Modifiers::default());
                black_box(processor.dispatch(event));
            })
        }),
        row("viewports: set_rect, n viewports", |n| {
            let (registry, views, ids) = viewports(n);
            op(move |i| {
                let _ = &views;
                let at = spread(i, n);
                let rect = Rect::new(at as f32, (i % 2) as f32, 1.0, 1.0);
                assert!(registry.set_rect(ids[at], rect));
            })
        }),
    ]
}

/// A handler or viewport that handles nothing.
type View = Rc<fn(&mut dyn lumina::event::Event) -> bool>;

fn view() -> View {
    Rc::new(pass)
}

/// A registry of `n` viewports side by side, with the viewports (held weakly there) and ids.
fn viewports(n: usize) -> (Rc<InputViewportRegistry>, Vec<View>, Vec<ViewportId>) {
    let registry = Rc::new(InputViewportRegistry::new());
    let views: Vec<View> = (0..n)
        .map(|_| Rc::new(pass as fn(&mut _) -> bool))
        .collect();
    let ids = views
        .iter()
        .enumerate()
        .map(|(i, view)| registry.add_viewport(view, Rect::new(i as f32, 0.0, 1.0, 1.0)))
        .collect();
    (registry, views, ids)
}

static SCALE_PLAIN: TagKey<u32> = TagKey::new("Scaling.Plain", false);
static SCALE_KEPT: TagKey<u32> = TagKey::new("Scaling.Kept", true);

extern "C" fn thunk(_context: *mut c_void, _payload: *const c_void) {}

/// A bus with `n` tags of its size registered and listened to (partially).
fn tagged(n: usize) -> (MessageBus<u32>, Vec<Tag>) {
    let bus = MessageBus::new();
    let tags: Vec<Tag> = (0..n)
        .map(|i| Tag::register(&format!("Scaling.Tags{n}.T{}.Leaf{i}", i % 8)).unwrap())
        .collect();
    for tag in &tags {
        let _ = bus.subscribe().partial().listen(*tag, |_| {});
    }
    bus.send(&SCALE_KEPT, 1);
    (bus, tags)
}

/// A bus with `n` managed listeners, and their ids.
fn managed(n: usize) -> (MessageBus<u64>, Vec<u64>) {
    let bus = MessageBus::<u64>::new();
    let ids = (0..n).map(|_| listen_managed(&bus)).collect();
    (bus, ids)
}

/// A row that removes from Rust one of `n` managed listeners per call (the newest first),
/// with `remove`: their handles come from the listing, so the calls use them up ([`SMALL`] / 4
/// calls at each size).
fn managed_removal(n: usize, remove: impl Fn(&MessageBus<u64>, DelegateHandle) + 'static) -> Op {
    let (bus, _) = managed(n);
    let handles: Vec<DelegateHandle> = bus
        .subscriptions()
        .iter()
        .map(|listener| listener.subscription.handle)
        .collect();
    assert_eq!(handles.len(), n);
    Op {
        limit: SMALL / 4,
        ..op(move |i| remove(&bus, handles[spread(i, n)]))
    }
}

fn listen_managed(bus: &MessageBus<u64>) -> u64 {
    bus.listen_managed(SCALE_PLAIN.tag(), true, None, Some(thunk), null_mut())
        .unwrap()
}

/// The rows of the message bus.
fn bus_rows() -> Vec<Row> {
    vec![
        row("bus listen_partial + remove, n tags", |n| {
            let (bus, tags) = tagged(n);
            op(move |i| {
                let handle = bus.subscribe().partial().listen(tags[spread(i, n)], |_| {});
                assert!(bus.remove(handle));
            })
        }),
        row("bus listen on a retained tag + remove, n tags", |n| {
            let (bus, _tags) = tagged(n);
            op(move |_| {
                let handle = bus.listen(&SCALE_KEPT, |_, _| {});
                assert!(bus.remove(handle));
            })
        }),
        row("bus listen + remove around 2^k listeners", |n| {
            let bus = MessageBus::<u32>::new();
            for _ in 0..n.next_power_of_two() - 1 {
                let _ = bus.listen(&SCALE_PLAIN, |_, _| {});
            }
            op(move |_| {
                let handle = bus.listen(&SCALE_PLAIN, |_, _| {});
                assert!(bus.remove(handle));
            })
        }),
        row("bus forget_entity + listen_entity, n entities", |n| {
            let bus = MessageBus::<u32>::new();
            for entity in 0..n as u32 {
                let _ = bus
                    .subscribe()
                    .entity(entity)
                    .listen(&SCALE_PLAIN, |_, _| {});
            }
            op(move |i| {
                let entity = spread(i, n) as u32;
                assert_eq!(bus.forget_entity(entity), 1);
                let _ = bus
                    .subscribe()
                    .entity(entity)
                    .listen(&SCALE_PLAIN, |_, _| {});
            })
        }),
        row("bus remove, n managed", |n| {
            managed_removal(n, |bus, handle| assert!(bus.remove(handle)))
        }),
        row("bus scoped (dropped), n managed", |n| {
            managed_removal(n, |bus, handle| drop(bus.scoped(handle)))
        }),
        row("bus remove_managed + listen_managed, n managed", |n| {
            let (bus, mut ids) = managed(n);
            op(move |i| {
                let at = spread(i, n);
                assert!(bus.remove_managed(ids[at]));
                ids[at] = listen_managed(&bus);
            })
        }),
        row("bus send, per listener (flat)", |n| {
            let bus = MessageBus::<u32>::new();
            let sum = Rc::new(Cell::new(0_u32));
            for _ in 0..n {
                let sum = Rc::clone(&sum);
                let _ = bus.listen(&SCALE_PLAIN, move |value, _| {
                    sum.set(sum.get().wrapping_add(*value))
                });
            }
            per(n, move |_| bus.send(&SCALE_PLAIN, 1))
        }),
        row("bus send_to, per level of n/16 entities (flat)", |n| {
            let bus = MessageBus::<u32>::new();
            let levels = n / 16;
            bus.set_entity_parents(|entity: u32| entity.checked_sub(1));
            for entity in 0..levels as u32 {
                let _ = bus
                    .subscribe()
                    .entity(entity)
                    .listen(&SCALE_PLAIN, |_, _| {});
            }
            per(levels, move |_| {
                bus.send_to(&SCALE_PLAIN, levels as u32 - 1, 1)
            })
        }),
        row("bus post + deliver_posted, per message (flat)", |n| {
            let bus = MessageBus::<u32>::new();
            let _ = bus.listen(&SCALE_PLAIN, |_, _| {});
            per(n, move |_| {
                for _ in 0..n {
                    bus.post(&SCALE_PLAIN, 1);
                }
                assert_eq!(bus.deliver_posted(), n);
            })
        }),
        row("bus subscriptions() listing, per listener (flat)", |n| {
            let bus = MessageBus::<u32>::new();
            for _ in 0..n {
                let _ = bus.listen(&SCALE_PLAIN, |_, _| {});
            }
            per(n, move |_| assert_eq!(bus.subscriptions().len(), n))
        }),
        row("Tag::find, n tags (flat)", |n| {
            let (_bus, tags) = tagged(n);
            op(move |i| {
                let tag = tags[spread(i, n)];
                assert_eq!(Tag::find(tag.name()), Ok(tag));
            })
        }),
    ]
}

/// The rows of script generations, script delegates, the main-thread queue and coroutines.
fn script_and_queue_rows() -> Vec<Row> {
    vec![
        row(
            "script generation unload + rebind (bus), n generations",
            |n| {
                let bus = MessageBus::<u64>::new();
                generations(n, move || {
                    let _ = listen_managed(&bus);
                })
            },
        ),
        row(
            "script generation unload + rebind (script delegate), n gens",
            |n| {
                let delegate: ScriptDelegate<()> = ScriptDelegate::new();
                generations(n, move || {
                    assert_ne!(delegate.bind_managed(Some(thunk), null_mut()), 0);
                })
            },
        ),
        row(
            "script delegate bind_managed + unbind_managed, n bound (flat)",
            |n| {
                let delegate: ScriptDelegate<()> = ScriptDelegate::new();
                for _ in 0..n {
                    let _ = delegate.bind_managed(Some(thunk), null_mut());
                }
                op(move |_| {
                    let id = delegate.bind_managed(Some(thunk), null_mut());
                    assert!(delegate.unbind_managed(id));
                })
            },
        ),
        row_alone("QueuedSender::new + drop, n senders alive", |n| {
            let player = Rc::new(Player {
                on_hit: MulticastDelegate::new(),
            });
            let alive: Vec<QueuedSender<(u32,)>> = (0..n)
                .map(|_| QueuedSender::new(&player, |player: &Player| &player.on_hit))
                .collect();
            op(move |_| {
                let _ = &alive;
                drop(QueuedSender::new(&player, |player: &Player| &player.on_hit));
            })
        }),
        row("enqueue + process_queue, per task (flat)", |n| {
            let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            per(n, move |_| {
                for _ in 0..n {
                    let count = std::sync::Arc::clone(&count);
                    main_thread::enqueue(move || {
                        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
                main_thread::process_queue();
            })
        }),
        row("coroutine spawn_local + run, per task (flat)", |n| {
            per(n, move |_| {
                for _ in 0..n {
                    let _ = coroutine::spawn_local(async {});
                }
                main_thread::process_queue();
            })
        }),
        row("frame waiters (next_frame), per task (flat)", |n| {
            let done = Rc::new(RefCell::new(0_usize));
            per(n, move |_| {
                for _ in 0..n {
                    let done = Rc::clone(&done);
                    let _ = coroutine::spawn_local(async move {
                        coroutine::frames(1).await;
                        *done.borrow_mut() += 1;
                    });
                }
                main_thread::process_queue();
                main_thread::process_queue();
                main_thread::process_queue();
            })
        }),
    ]
}

struct Player {
    on_hit: MulticastDelegate<dyn Fn(u32)>,
}

/// `n` generations with one binding `bind` makes each; the operation unloads one and begins a
/// new one with one binding, so `n` stay.
fn generations(n: usize, bind: impl Fn() + 'static) -> Op {
    let mut open: Vec<u64> = (0..n)
        .map(|_| {
            let generation = script_generation::begin();
            bind();
            generation
        })
        .collect();
    op(move |i| {
        let at = spread(i, n);
        assert_eq!(script_generation::unload(open[at]), Some(1));
        open[at] = script_generation::begin();
        bind();
    })
}

/// Prints the scaling section: every row at both sizes (or those whose name contains `only`),
/// with its verdict.
pub fn print_scaling(only: Option<&str>) {
    let _game = main_thread::GameThreadScope::enter();
    let start = Instant::now();
    let rows: Vec<Row> = [
        delegate_rows(),
        event_rows(),
        bus_rows(),
        script_and_queue_rows(),
    ]
    .into_iter()
    .flatten()
    .filter(|row| only.is_none_or(|only| row.name.contains(only)))
    .collect();
    println!(
        "\nscaling (rule N4): ns per operation at n = {SMALL} and n = {LARGE}, median of 3; \
         target: at most 2x from the small size to the large one"
    );
    println!(
        "  {:<64} {:>11} {:>11} {:>7}",
        "operation", "n = 1 000", "n = 16 000", "ratio"
    );
    let mut failing = 0;
    for row in rows {
        let (small, large) = time(&row);
        let ratio = large / small;
        let ok = ratio <= 2.0;
        failing += usize::from(!ok);
        println!(
            "  {:<64} {small:>11.1} {large:>11.1} {ratio:>6.2}x {}",
            row.name,
            if ok { "PASS" } else { "FAIL" }
        );
    }
    println!(
        "scaling: {failing} row(s) over 2x; the section took {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
