//! TS6: a model-based test of the thread-safe delegate with several threads.
//!
//! Random scripts run on three threads at once against one `SyncMulticastDelegate`: add (at a
//! priority, one-shot or not, a subscriber that broadcasts again from inside its call, removes
//! itself or yields), remove any subscription made so far (by any thread), block and unblock,
//! clear, broadcast, mute the whole delegate (take a guard, or drop the one the thread holds). Every operation is stamped with tickets from one sequentially consistent
//! counter, taken just before it starts and just after it returns, and every call with the
//! ticket at its start and the broadcast it belongs to. Afterwards the log is checked against
//! what the rules allow for any interleaving consistent with those tickets:
//!
//! - M2/TS3: a subscriber whose add began after a broadcast's first call is not called by it;
//! - TS2: a broadcast that began after a removal (a `remove`, or a `clear` that began after the
//!   add had returned) returned never calls that subscriber; a blocked one is not called;
//! - completeness: a subscriber added before a broadcast began and neither removed, cleared nor
//!   blocked before it ended is called by it exactly once (a one-shot: exactly once overall),
//!   unless a mute overlapped the broadcast;
//! - A2: a broadcast that began after a mute returned and ended before its guard's drop began
//!   calls nobody;
//! - no subscriber is called twice by one broadcast, and a broadcast calls in priority order,
//!   equal priorities in the order added;
//! - `remove` reports `true` at most once per subscription, never after a clear surely took it.
//!
//! User code the operations run, and where the scripts act in it: the subscriber's call (nested
//! broadcast, removal of itself, a yield to widen the races); the callable's `Drop` (counted, so
//! a callable dropped twice or never fails the test). Clone/Hash/Eq of keys do not exist here:
//! the delegate keys nothing by user values.

use lumina::{DelegateHandle, SyncMulticastDelegate};
use proptest::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

const THREADS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Add {
        priority: i32,
        once: bool,
        /// Broadcast again from inside the call (one level deep).
        nested: bool,
        remove_self: bool,
        yields: bool,
    },
    /// Remove the subscription made n-th (modulo how many were made), by any thread.
    Remove(usize),
    Block(usize),
    Unblock(usize),
    Clear,
    Broadcast,
    /// Take a mute guard of the whole delegate, or drop the one this thread holds.
    Mute,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3i32, prop::bool::weighted(0.25), prop::bool::weighted(0.2),
              prop::bool::weighted(0.15), any::<bool>())
            .prop_map(|(priority, once, nested, remove_self, yields)| Op::Add {
                priority, once, nested, remove_self, yields
            }),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::Block),
        1 => any::<usize>().prop_map(Op::Unblock),
        1 => Just(Op::Clear),
        4 => Just(Op::Broadcast),
        1 => Just(Op::Mute),
    ]
}

fn scripts() -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(prop::collection::vec(op(), 1..10), THREADS)
}

/// What the threads log.
#[derive(Clone, Debug)]
enum Rec {
    Add {
        sub: usize,
        priority: i32,
        once: bool,
        start: u64,
        end: u64,
    },
    Remove {
        sub: usize,
        start: u64,
        end: u64,
        removed: bool,
    },
    Block {
        sub: usize,
        start: u64,
        end: u64,
        done: bool,
    },
    Unblock {
        sub: usize,
        start: u64,
    },
    Clear {
        start: u64,
        end: u64,
    },
    Broadcast {
        id: u64,
        start: u64,
        end: u64,
    },
    Call {
        sub: usize,
        broadcast: u64,
        at: u64,
    },
    /// A mute: `mute()`'s (start, end), then its guard's drop's (start, end).
    Mute {
        on: (u64, u64),
        off: (u64, u64),
    },
}

/// What every thread shares.
struct World {
    delegate: OnValue,
    ticket: AtomicU64,
    next_sub: AtomicUsize,
    next_broadcast: AtomicU64,
    /// The subscriptions made so far, in the order their adds returned: (subscriber, handle).
    made: Mutex<Vec<(usize, DelegateHandle)>>,
    log: Mutex<Vec<Rec>>,
    /// How many callables were dropped, per subscriber.
    drops: Mutex<HashMap<usize, usize>>,
}

impl World {
    fn tick(&self) -> u64 {
        self.ticket.fetch_add(1, Ordering::SeqCst)
    }

    fn log(&self, rec: Rec) {
        self.log.lock().unwrap().push(rec);
    }

    fn handle_of(&self, sub: usize) -> Option<DelegateHandle> {
        let made = self.made.lock().unwrap();
        made.iter().find(|(s, _)| *s == sub).map(|(_, h)| *h)
    }

    fn pick(&self, n: usize) -> Option<(usize, DelegateHandle)> {
        let made = self.made.lock().unwrap();
        (!made.is_empty()).then(|| made[n % made.len()])
    }

    fn broadcast(self: &Arc<Self>) {
        let id = self.next_broadcast.fetch_add(1, Ordering::SeqCst);
        let start = self.tick();
        CURRENT.with(|current| current.borrow_mut().push(id));
        self.delegate.broadcast(0);
        CURRENT.with(|current| current.borrow_mut().pop());
        let end = self.tick();
        self.log(Rec::Broadcast { id, start, end });
    }

    fn remove(&self, sub: usize, handle: DelegateHandle) {
        let start = self.tick();
        let removed = self.delegate.remove(handle);
        let end = self.tick();
        self.log(Rec::Remove {
            sub,
            start,
            end,
            removed,
        });
    }

    fn run(self: &Arc<Self>, op: &Op) {
        match *op {
            Op::Add {
                priority,
                once,
                nested,
                remove_self,
                yields,
            } => {
                let sub = self.next_sub.fetch_add(1, Ordering::SeqCst);
                let world = Arc::downgrade(self);
                let dropped = OnDrop(Arc::downgrade(self), sub);
                let call = move |_: u32| {
                    let _keep = &dropped;
                    let Some(world) = world.upgrade() else { return };
                    let broadcast = CURRENT.with(|current| *current.borrow().last().unwrap());
                    let at = world.tick();
                    world.log(Rec::Call { sub, broadcast, at });
                    if yields {
                        thread::yield_now();
                    }
                    if nested && CURRENT.with(|current| current.borrow().len()) < 2 {
                        world.broadcast();
                    }
                    if remove_self && let Some(handle) = world.handle_of(sub) {
                        world.remove(sub, handle);
                    }
                };
                let start = self.tick();
                // Any option combines with any other (A1): one-shots at priorities too.
                let builder = self.delegate.subscribe().priority(priority);
                let handle = match (once, priority) {
                    (false, 0) => self.delegate.add_lambda(call),
                    (true, _) => builder.once().add_lambda(call),
                    (false, _) => builder.add_lambda(call),
                };
                let end = self.tick();
                self.log(Rec::Add {
                    sub,
                    priority,
                    once,
                    start,
                    end,
                });
                self.made.lock().unwrap().push((sub, handle));
            }
            Op::Remove(n) => {
                if let Some((sub, handle)) = self.pick(n) {
                    self.remove(sub, handle);
                }
            }
            Op::Block(n) => {
                if let Some((sub, handle)) = self.pick(n) {
                    let start = self.tick();
                    let done = self.delegate.block(handle);
                    let end = self.tick();
                    self.log(Rec::Block {
                        sub,
                        start,
                        end,
                        done,
                    });
                }
            }
            Op::Unblock(n) => {
                if let Some((sub, handle)) = self.pick(n) {
                    let start = self.tick();
                    self.delegate.unblock(handle);
                    self.log(Rec::Unblock { sub, start });
                }
            }
            Op::Clear => {
                let start = self.tick();
                self.delegate.clear();
                let end = self.tick();
                self.log(Rec::Clear { start, end });
            }
            Op::Broadcast => self.broadcast(),
            Op::Mute => {
                if !self.unmute() {
                    let start = self.tick();
                    let guard = self.delegate.mute();
                    let end = self.tick();
                    HELD.with(|held| *held.borrow_mut() = Some((guard, (start, end))));
                }
            }
        }
    }

    /// Drops the mute guard this thread holds, if any, and logs the mute; whether there was one.
    fn unmute(&self) -> bool {
        let Some((guard, on)) = HELD.with(|held| held.borrow_mut().take()) else {
            return false;
        };
        let start = self.tick();
        drop(guard);
        let end = self.tick();
        self.log(Rec::Mute {
            on,
            off: (start, end),
        });
        true
    }
}

thread_local! {
    /// The broadcasts this thread is inside, innermost last.
    static CURRENT: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// The mute guard this thread holds, with `mute()`'s (start, end).
    static HELD: RefCell<Option<(lumina::sync_delegate::SyncScopedMute, (u64, u64))>> =
        const { RefCell::new(None) };
}

/// Counts the drop of a subscriber's callable.
struct OnDrop(std::sync::Weak<World>, usize);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(world) = self.0.upgrade() {
            *world.drops.lock().unwrap().entry(self.1).or_default() += 1;
        }
    }
}

/// What the log says of one subscriber.
#[derive(Default)]
struct Sub {
    priority: i32,
    once: bool,
    add: (u64, u64),
    /// (start, end) of every removal of it: its removes, and the clears that began after its
    /// add returned (those surely took it if it was there).
    removals: Vec<(u64, u64)>,
    /// Clears that may have raced its add.
    maybe_cleared: Vec<u64>,
    blocks: Vec<(u64, u64)>,
    unblock_starts: Vec<u64>,
    removed_true: usize,
}

fn check(log: &[Rec], drops: &HashMap<usize, usize>) -> Result<(), String> {
    let mut subs: HashMap<usize, Sub> = HashMap::new();
    let mut clears = Vec::new();
    let mut broadcasts = Vec::new();
    let mut calls: HashMap<u64, Vec<(u64, usize)>> = HashMap::new();
    let mut calls_of: HashMap<usize, usize> = HashMap::new();
    let mutes: Vec<((u64, u64), (u64, u64))> = log
        .iter()
        .filter_map(|rec| match *rec {
            Rec::Mute { on, off } => Some((on, off)),
            _ => None,
        })
        .collect();
    for rec in log {
        match *rec {
            Rec::Add {
                sub,
                priority,
                once,
                start,
                end,
            } => {
                let entry = subs.entry(sub).or_default();
                entry.priority = priority;
                entry.once = once;
                entry.add = (start, end);
            }
            Rec::Clear { start, end } => clears.push((start, end)),
            Rec::Broadcast { id, start, end } => broadcasts.push((id, start, end)),
            Rec::Call { sub, broadcast, at } => {
                calls.entry(broadcast).or_default().push((at, sub));
                *calls_of.entry(sub).or_default() += 1;
            }
            _ => {}
        }
    }
    for rec in log {
        match *rec {
            Rec::Remove {
                sub,
                start,
                end,
                removed,
            } => {
                let entry = subs.get_mut(&sub).unwrap();
                entry.removals.push((start, end));
                entry.removed_true += usize::from(removed);
            }
            Rec::Block {
                sub,
                start,
                end,
                done: true,
            } => subs.get_mut(&sub).unwrap().blocks.push((start, end)),
            Rec::Unblock { sub, start, .. } => {
                subs.get_mut(&sub).unwrap().unblock_starts.push(start);
            }
            _ => {}
        }
    }
    for (&id, sub) in &mut subs {
        for &(start, end) in &clears {
            if start > sub.add.1 {
                sub.removals.push((start, end));
            } else if end > sub.add.0 {
                sub.maybe_cleared.push(start);
            }
        }
        // A clear that surely took it leaves nothing for a later remove to report.
        for rec in log {
            if let Rec::Remove {
                sub: s,
                start,
                removed: true,
                ..
            } = *rec
                && s == id
                && clears
                    .iter()
                    .any(|&(c_start, c_end)| c_start > sub.add.1 && c_end < start)
            {
                return Err(format!(
                    "remove of {id} reported true after a clear took it"
                ));
            }
        }
        if sub.removed_true > 1 {
            return Err(format!("remove of {id} reported true twice"));
        }
        if sub.once && calls_of.get(&id).copied().unwrap_or(0) > 1 {
            return Err(format!("one-shot {id} called more than once"));
        }
    }
    for &(id, start, end) in &broadcasts {
        let mine = calls.get(&id).map_or(&[][..], Vec::as_slice);
        let first_call = mine.iter().map(|&(at, _)| at).min().unwrap_or(end);
        // A2: muted from before it began until after it ended.
        if let Some(&(at, _)) = mine.first()
            && mutes.iter().any(|&(on, off)| on.1 < start && end < off.0)
        {
            return Err(format!(
                "broadcast {id} ran while the delegate was muted and called someone at {at}"
            ));
        }
        let mute_overlaps = mutes.iter().any(|&(on, off)| on.0 < end && off.1 > start);
        // No subscriber twice; priority order; equal priorities in the order added.
        for (i, &(at, sub)) in mine.iter().enumerate() {
            if mine[..i].iter().any(|&(_, other)| other == sub) {
                return Err(format!("broadcast {id} called {sub} twice"));
            }
            let this = &subs[&sub];
            // M2: its add began after this broadcast had taken its list.
            if this.add.0 > first_call {
                return Err(format!(
                    "broadcast {id} (first call at {first_call}) called {sub}, added from {}",
                    this.add.0
                ));
            }
            // TS2: surely removed before the broadcast began.
            if this.removals.iter().any(|&(_, r_end)| r_end < start) {
                return Err(format!(
                    "broadcast {id} began at {start}, after {sub} was removed, and called it at {at}"
                ));
            }
            // Blocked through the whole broadcast.
            if this
                .blocks
                .iter()
                .any(|&(_, b_end)| b_end < start && !this.unblock_starts.iter().any(|&u| u < end))
            {
                return Err(format!("broadcast {id} called {sub} while it was blocked"));
            }
            for &(other_at, other) in &mine[..i] {
                let that = &subs[&other];
                debug_assert!(other_at < at);
                if that.priority < this.priority {
                    return Err(format!(
                        "broadcast {id} called {other} (priority {}) before {sub} (priority {})",
                        that.priority, this.priority
                    ));
                }
                if that.priority == this.priority && this.add.1 < that.add.0 {
                    return Err(format!(
                        "broadcast {id} called {other} before {sub}, which was added first"
                    ));
                }
            }
        }
        // Completeness: present and untouched throughout.
        for (&sub, this) in &subs {
            let untouched = !mute_overlaps
                && this.add.1 < start
                && !this.removals.iter().any(|&(r_start, _)| r_start < end)
                && !this.maybe_cleared.iter().any(|&c| c < end)
                && !this.blocks.iter().any(|&(b_start, _)| b_start < end);
            if !untouched {
                continue;
            }
            let called = mine.iter().any(|&(_, s)| s == sub);
            if this.once {
                if calls_of.get(&sub).copied().unwrap_or(0) != 1 {
                    return Err(format!(
                        "one-shot {sub} live through broadcast {id} never called"
                    ));
                }
            } else if !called {
                return Err(format!("broadcast {id} missed {sub}, live throughout"));
            }
        }
    }
    // Every callable was dropped exactly once by the end (the delegate is gone).
    for &sub in subs.keys() {
        let n = drops.get(&sub).copied().unwrap_or(0);
        if n != 1 {
            return Err(format!("the callable of {sub} was dropped {n} times"));
        }
    }
    Ok(())
}

fn run(script: &[Vec<Op>]) -> Result<(), String> {
    let world = Arc::new(World {
        delegate: OnValue::new(),
        ticket: AtomicU64::new(0),
        next_sub: AtomicUsize::new(0),
        next_broadcast: AtomicU64::new(0),
        made: Mutex::new(Vec::new()),
        log: Mutex::new(Vec::new()),
        drops: Mutex::new(HashMap::new()),
    });
    let barrier = Arc::new(Barrier::new(script.len()));
    let threads: Vec<_> = script
        .iter()
        .cloned()
        .map(|ops| {
            let world = Arc::clone(&world);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                for op in &ops {
                    world.run(op);
                }
                world.unmute();
            })
        })
        .collect();
    for thread in threads {
        thread.join().map_err(|_| "a thread panicked".to_string())?;
    }
    // Drop the delegate's callables while the counters are still reachable.
    world.delegate.clear();
    let log = world.log.lock().unwrap().clone();
    let drops = world.drops.lock().unwrap().clone();
    check(&log, &drops)
}

fn cases() -> u32 {
    if cfg!(miri) { 2 } else { 300 }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn ts2_ts3_m2_three_threads_agree_with_what_the_rules_allow(script in scripts()) {
        run(&script).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn ts6_the_checker_rejects_a_broadcast_that_calls_a_removed_subscriber() {
    // The checker itself can fail: a log where a broadcast began after a removal returned and
    // still called the subscriber.
    let broadcast_4_to_6 = Rec::Broadcast {
        id: 0,
        start: 4,
        end: 6,
    };
    let call_at_5 = Rec::Call {
        sub: 0,
        broadcast: 0,
        at: 5,
    };
    let log = vec![
        Rec::Add {
            sub: 0,
            priority: 0,
            once: false,
            start: 0,
            end: 1,
        },
        Rec::Remove {
            sub: 0,
            start: 2,
            end: 3,
            removed: true,
        },
        broadcast_4_to_6.clone(),
        call_at_5.clone(),
    ];
    let drops = HashMap::from([(0, 1)]);
    let error = check(&log, &drops).unwrap_err();
    assert!(error.contains("after 0 was removed"), "{error}");
    // And one where a broadcast misses a subscriber live throughout.
    let log = vec![log[0].clone(), broadcast_4_to_6.clone()];
    let error = check(&log, &drops).unwrap_err();
    assert!(error.contains("missed 0"), "{error}");
    // And one where a broadcast inside a mute calls a subscriber.
    let log = vec![
        log[0].clone(),
        Rec::Mute {
            on: (2, 3),
            off: (7, 8),
        },
        broadcast_4_to_6,
        call_at_5,
    ];
    let error = check(&log, &drops).unwrap_err();
    assert!(error.contains("muted"), "{error}");
}
