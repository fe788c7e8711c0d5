//! The systems under measurement, shared by the criterion benches (`benches/delegates.rs`) and the
//! quick report (`examples/bench_report.rs`), so both measure exactly the same work.
//!
//! Every subscriber of every system does the same thing: add its argument to one global counter
//! with a relaxed load and store (plain moves, no locked instruction), through a reference it
//! captured. The counter also lets a caller check that each system really ran every subscriber.

#![allow(dead_code)] // each includer uses a different subset

use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use lumina::{Delegate, DelegateHandle, MulticastDelegate};
use signals2::{Connect1, Emit1, Signal};

/// Where every subscriber adds its argument.
pub static SINK: AtomicU64 = AtomicU64::new(0);

/// Nesting depth of the nested-broadcast benchmark.
static DEPTH: AtomicU32 = AtomicU32::new(0);

/// The subscriber body, identical for every system.
#[inline(always)]
pub fn work(sink: &AtomicU64, x: i32) {
    sink.store(sink.load(Relaxed).wrapping_add(x as u64), Relaxed);
}

/// Reads (and resets) the number the subscribers added since the last call.
pub fn take_sink() -> u64 {
    SINK.swap(0, Relaxed)
}

/// A broadcast system: N subscribers, one call broadcasts `x` to all of them.
pub trait System {
    /// Short name for tables and benchmark ids.
    const NAME: &'static str;
    /// A system with `n` subscribers.
    fn with_subscribers(n: usize) -> Self;
    /// Calls every subscriber once with `x`.
    fn broadcast(&self, x: i32);
}

/// The floor: a raw `Vec<Box<dyn Fn>>` loop, no handles, no reentrancy safety.
pub struct Floor(Subscribers);

impl System for Floor {
    const NAME: &'static str = "floor Vec<Box<dyn Fn>>";
    fn with_subscribers(n: usize) -> Self {
        let sink: &'static AtomicU64 = &SINK;
        Floor(
            (0..n)
                .map(|_| Box::new(move |x| work(sink, x)) as Box<dyn Fn(i32)>)
                .collect(),
        )
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        for subscriber in &self.0 {
            subscriber(x);
        }
    }
}

/// lumina's `MulticastDelegate`.
pub struct Lumina(MulticastDelegate<dyn Fn(i32)>);

impl System for Lumina {
    const NAME: &'static str = "lumina MulticastDelegate";
    fn with_subscribers(n: usize) -> Self {
        let delegate: MulticastDelegate<dyn Fn(i32)> = MulticastDelegate::new();
        let sink: &'static AtomicU64 = &SINK;
        for _ in 0..n {
            let _ = delegate.add_lambda(move |x| work(sink, x));
        }
        Lumina(delegate)
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        self.0.broadcast(x);
    }
}

/// lumina's thread-safe `SyncMulticastDelegate` (TS1), broadcast from one thread.
pub struct LuminaSync(lumina::SyncMulticastDelegate<dyn Fn(i32) + Send + Sync>);

impl System for LuminaSync {
    const NAME: &'static str = "SyncMulticastDelegate (lumina, any thread)";
    fn with_subscribers(n: usize) -> Self {
        let delegate = lumina::SyncMulticastDelegate::<dyn Fn(i32) + Send + Sync>::new();
        let sink: &'static AtomicU64 = &SINK;
        for _ in 0..n {
            let _ = delegate.add_lambda(move |x| work(sink, x));
        }
        LuminaSync(delegate)
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        self.0.broadcast(x);
    }
}

/// The `signals2` crate (thread-safe, modelled on Boost.Signals2).
pub struct Signals2(Signal<(i32,)>);

impl System for Signals2 {
    const NAME: &'static str = "signals2 crate";
    fn with_subscribers(n: usize) -> Self {
        let signal: Signal<(i32,)> = Signal::new();
        let sink: &'static AtomicU64 = &SINK;
        for _ in 0..n {
            let _ = signal.connect(move |x| work(sink, x));
        }
        Signals2(signal)
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        self.0.emit(x);
    }
}

/// Boost.Signals2 through the C++ shim `benches/boost_shim.cpp` (feature `boost-bench`).
#[cfg(lumina_boost_shim)]
pub mod boost {
    use std::ffi::c_void;
    use std::sync::atomic::AtomicU64;

    // SAFETY: these declarations match the C functions of benches/boost_shim.cpp exactly. The two
    // marked `safe` take no pointer: calling them cannot break any invariant.
    unsafe extern "C" {
        safe fn lumina_boost_new() -> *mut c_void;
        fn lumina_boost_free(signal: *mut c_void);
        fn lumina_boost_connect(signal: *mut c_void, sink: *const AtomicU64) -> u64;
        fn lumina_boost_disconnect(signal: *mut c_void, id: u64);
        fn lumina_boost_emit(signal: *mut c_void, x: i32);
        /// How many times C++ `operator new` ran in the process.
        pub safe fn lumina_boost_allocations() -> u64;
    }

    /// A `boost::signals2::signal<void(int)>` with its connections. Owns the pointer made by
    /// `lumina_boost_new`, freed once, in `Drop`.
    pub struct BoostSignals2(*mut c_void);

    impl BoostSignals2 {
        /// An empty signal.
        pub fn new() -> Self {
            BoostSignals2(lumina_boost_new())
        }
        /// Connects a counting slot that adds to the `'static` sink; the id disconnects it.
        pub fn connect(&self) -> u64 {
            // SAFETY: `self.0` is a live signal (freed only in Drop); SINK is a static.
            unsafe { lumina_boost_connect(self.0, &super::SINK) }
        }
        /// Disconnects the slot of `id` (an unknown id is ignored by the shim).
        pub fn disconnect(&self, id: u64) {
            // SAFETY: `self.0` is a live signal.
            unsafe { lumina_boost_disconnect(self.0, id) }
        }
        /// Emits `x` to every connected slot.
        pub fn emit(&self, x: i32) {
            // SAFETY: `self.0` is a live signal.
            unsafe { lumina_boost_emit(self.0, x) }
        }
    }

    impl Drop for BoostSignals2 {
        fn drop(&mut self) {
            // SAFETY: the pointer came from `lumina_boost_new` and is freed only here, once.
            unsafe { lumina_boost_free(self.0) }
        }
    }

    impl super::System for BoostSignals2 {
        const NAME: &'static str = "Boost.Signals2 (C++)";
        fn with_subscribers(n: usize) -> Self {
            let signal = BoostSignals2::new();
            for _ in 0..n {
                signal.connect();
            }
            signal
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            self.emit(x);
        }
    }
}

/// Why Boost.Signals2 is not measured in this build, or `None` when it is.
pub fn boost_skipped() -> Option<&'static str> {
    if cfg!(lumina_boost_shim) {
        None
    } else {
        Some(option_env!("LUMINA_BOOST_SKIPPED").unwrap_or("the build script did not run"))
    }
}

/// Subscribers of one level of the nested benchmark.
pub const NESTED_WIDTH: usize = 16;
/// Broadcast levels of the nested benchmark: the first subscriber of each level re-broadcasts
/// the same list until this depth, so one outer broadcast makes `NESTED_WIDTH * NESTED_DEPTH`
/// subscriber calls.
pub const NESTED_DEPTH: u32 = 4;

/// The body of the first subscriber of the nested benchmark: the usual work, then, above the
/// deepest level, `again` (which broadcasts the same list once more) one level deeper.
#[inline(always)]
fn nested_work(sink: &AtomicU64, x: i32, again: impl FnOnce()) {
    work(sink, x);
    let depth = DEPTH.load(Relaxed);
    if depth + 1 < NESTED_DEPTH {
        DEPTH.store(depth + 1, Relaxed);
        again();
        DEPTH.store(depth, Relaxed);
    }
}

/// The floor's subscriber list.
type Subscribers = Vec<Box<dyn Fn(i32)>>;

/// Nested broadcast, floor: the first subscriber loops over the same `Vec` again.
pub struct NestedFloor(Rc<Subscribers>);

impl System for NestedFloor {
    const NAME: &'static str = Floor::NAME;
    fn with_subscribers(n: usize) -> Self {
        let sink: &'static AtomicU64 = &SINK;
        NestedFloor(Rc::new_cyclic(|me: &Weak<Subscribers>| {
            let me = me.clone();
            let mut list: Subscribers = vec![Box::new(move |x| {
                nested_work(sink, x, || {
                    if let Some(list) = me.upgrade() {
                        for subscriber in list.iter() {
                            subscriber(x);
                        }
                    }
                })
            })];
            list.extend((1..n).map(|_| Box::new(move |x| work(sink, x)) as Box<dyn Fn(i32)>));
            list
        }))
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        for subscriber in self.0.iter() {
            subscriber(x);
        }
    }
}

/// Nested broadcast, lumina: the first subscriber re-broadcasts the same delegate (M5).
pub struct NestedLumina(Rc<MulticastDelegate<dyn Fn(i32)>>);

impl System for NestedLumina {
    const NAME: &'static str = Lumina::NAME;
    fn with_subscribers(n: usize) -> Self {
        let sink: &'static AtomicU64 = &SINK;
        NestedLumina(Rc::new_cyclic(
            |me: &Weak<MulticastDelegate<dyn Fn(i32)>>| {
                let me = me.clone();
                let delegate: MulticastDelegate<dyn Fn(i32)> = MulticastDelegate::new();
                let _ = delegate.add_lambda(move |x| {
                    nested_work(sink, x, || {
                        if let Some(delegate) = me.upgrade() {
                            delegate.broadcast(x);
                        }
                    })
                });
                for _ in 1..n {
                    let _ = delegate.add_lambda(move |x| work(sink, x));
                }
                delegate
            },
        ))
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        self.0.broadcast(x);
    }
}

/// Nested broadcast, signals2: the first slot re-emits the same signal.
pub struct NestedSignals2(Signal<(i32,)>);

impl System for NestedSignals2 {
    const NAME: &'static str = Signals2::NAME;
    fn with_subscribers(n: usize) -> Self {
        let sink: &'static AtomicU64 = &SINK;
        let signal: Signal<(i32,)> = Signal::new();
        let me = signal.weak();
        let _ = signal.connect(move |x| {
            nested_work(sink, x, || {
                if let Some(signal) = me.upgrade() {
                    signal.emit(x);
                }
            })
        });
        for _ in 1..n {
            let _ = signal.connect(move |x| work(sink, x));
        }
        NestedSignals2(signal)
    }
    #[inline(never)]
    fn broadcast(&self, x: i32) {
        self.0.emit(x);
    }
}

/// Single-cast: a raw boxed closure (the floor).
pub fn single_floor() -> Box<dyn Fn(i32)> {
    let sink: &'static AtomicU64 = &SINK;
    Box::new(move |x| work(sink, x))
}

/// Single-cast: lumina's `Delegate`.
pub fn single_lumina() -> Delegate<dyn Fn(i32)> {
    let sink: &'static AtomicU64 = &SINK;
    Delegate::<dyn Fn(i32)>::create_lambda(move |x| work(sink, x))
}

/// A small deterministic generator (xorshift64*), for shuffling without a dependency.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// Churn on lumina: adds `order.len()` subscribers, then removes them all in the order given (a
/// permutation of `0..n`, drawn by the caller outside the timing).
pub fn churn_lumina(order: &[usize]) {
    let (delegate, handles) = lumina_add(order.len());
    lumina_remove(&delegate, &handles, order);
}

/// The add half of [`churn_lumina`].
pub fn lumina_add(n: usize) -> (MulticastDelegate<dyn Fn(i32)>, Vec<DelegateHandle>) {
    let delegate: MulticastDelegate<dyn Fn(i32)> = MulticastDelegate::new();
    let sink: &'static AtomicU64 = &SINK;
    let handles = (0..n)
        .map(|_| delegate.add_lambda(move |x| work(sink, x)))
        .collect();
    (delegate, handles)
}

/// The remove half of [`churn_lumina`]: removes `handles[i]` for each `i` of `order`.
pub fn lumina_remove(
    delegate: &MulticastDelegate<dyn Fn(i32)>,
    handles: &[DelegateHandle],
    order: &[usize],
) {
    for &index in order {
        assert!(delegate.remove(handles[index]));
    }
    assert!(delegate.is_empty());
}

/// Churn floor: the raw ordered structure with O(log n) insert and remove, a
/// `BTreeMap<u64, Box<dyn Fn>>` keyed by a counter, same order of removal. Known O(n log n), so
/// lumina's time relative to it must stay flat as n grows.
pub fn churn_floor(order: &[usize]) {
    let mut map: std::collections::BTreeMap<u64, Box<dyn Fn(i32)>> = Default::default();
    let sink: &'static AtomicU64 = &SINK;
    for id in 0..order.len() as u64 {
        map.insert(id, Box::new(move |x| work(sink, x)));
    }
    for &index in order {
        assert!(map.remove(&(index as u64)).is_some());
    }
    assert!(map.is_empty());
}

/// Churn on signals2 (connect, then disconnect in the same random order).
pub fn churn_signals2(order: &[usize]) {
    let signal: Signal<(i32,)> = Signal::new();
    let sink: &'static AtomicU64 = &SINK;
    let connections: Vec<_> = (0..order.len())
        .map(|_| signal.connect(move |x| work(sink, x)))
        .collect();
    for &index in order {
        connections[index].disconnect();
    }
}

/// Churn on Boost.Signals2 (connect, then disconnect in the same random order).
#[cfg(lumina_boost_shim)]
pub fn churn_boost(order: &[usize]) {
    let signal = boost::BoostSignals2::new();
    let ids: Vec<u64> = (0..order.len()).map(|_| signal.connect()).collect();
    for &index in order {
        signal.disconnect(ids[index]);
    }
}

/// A random permutation of `0..n`, fixed per `n`.
pub fn removal_order(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    Rng::new(0x5EED ^ n as u64).shuffle(&mut order);
    order
}

/// Event dispatch: handlers that count and never consume, so a dispatch runs through all of them.
pub mod dispatch {
    use std::rc::{Rc, Weak};
    use std::sync::atomic::AtomicU64;

    use lumina::event::{
        Envelope, Event, EventHandler, EventProcessor, Key, KeyPressedEvent, Modifiers,
    };

    use super::{SINK, work};

    /// A handler that does the common work and lets the event through.
    pub struct Counting(&'static AtomicU64);

    impl EventHandler for Counting {
        fn on_event(&self, _event: &mut dyn Event) -> bool {
            work(self.0, 1);
            false
        }
    }

    /// Priorities spread over the three input layers, as an engine registers them.
    fn priority(index: usize) -> i32 {
        [1000, 500, 0][index % 3]
    }

    /// The event every dispatch sends.
    #[inline(always)]
    pub fn event() -> KeyPressedEvent {
        KeyPressedEvent::new(Key::W, Modifiers::NONE)
    }

    /// A dispatch system with n handlers.
    pub trait Dispatch {
        /// Short name.
        const NAME: &'static str;
        /// A system with `n` handlers.
        fn with_handlers(n: usize) -> Self;
        /// Dispatches one event; whether a handler consumed it.
        fn dispatch(&self) -> bool;
    }

    /// The dispatch floor: a raw `Vec` of handlers sorted by priority (stable: equal priorities
    /// in registration order), strong references, no reentrancy safety.
    pub struct Floor(Vec<(i32, Rc<dyn EventHandler>)>);

    impl Dispatch for Floor {
        const NAME: &'static str = "floor sorted Vec<Rc<dyn>>";
        fn with_handlers(n: usize) -> Self {
            let mut handlers: Vec<(i32, Rc<dyn EventHandler>)> = (0..n)
                .map(|i| {
                    (
                        priority(i),
                        Rc::new(Counting(&SINK)) as Rc<dyn EventHandler>,
                    )
                })
                .collect();
            handlers.sort_by_key(|(priority, _)| -priority);
            Floor(handlers)
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            let mut envelope = Envelope::new(event());
            for (_, handler) in &self.0 {
                if handler.on_event(&mut envelope) || envelope.is_handled() {
                    envelope.set_handled(true);
                    return true;
                }
            }
            false
        }
    }

    /// The dispatch floor plus what P3 costs by itself: the same sorted `Vec`, holding handlers
    /// weakly, each upgraded for its call (no reentrancy safety, no pruning). Not a target's
    /// floor: it shows how much of lumina's ratio holding handlers weakly explains.
    pub struct WeakFloor {
        handlers: Vec<(i32, Weak<dyn EventHandler>)>,
        _strong: Vec<Rc<Counting>>,
    }

    impl Dispatch for WeakFloor {
        const NAME: &'static str = "floor + Weak::upgrade (P3)";
        fn with_handlers(n: usize) -> Self {
            let strong: Vec<Rc<Counting>> = (0..n).map(|_| Rc::new(Counting(&SINK))).collect();
            let mut handlers: Vec<(i32, Weak<dyn EventHandler>)> = strong
                .iter()
                .enumerate()
                .map(|(i, handler)| {
                    let handler: Rc<dyn EventHandler> = handler.clone();
                    (priority(i), Rc::downgrade(&handler))
                })
                .collect();
            handlers.sort_by_key(|(priority, _)| -priority);
            WeakFloor {
                handlers,
                _strong: strong,
            }
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            let mut envelope = Envelope::new(event());
            for (_, handler) in &self.handlers {
                let Some(handler) = handler.upgrade() else {
                    continue;
                };
                if handler.on_event(&mut envelope) || envelope.is_handled() {
                    envelope.set_handled(true);
                    return true;
                }
            }
            false
        }
    }

    /// lumina's `EventProcessor` (handlers held weakly, P3).
    pub struct Lumina {
        processor: EventProcessor,
        _handlers: Vec<Rc<Counting>>,
    }

    impl Dispatch for Lumina {
        const NAME: &'static str = "lumina EventProcessor";
        fn with_handlers(n: usize) -> Self {
            let processor = EventProcessor::new();
            let handlers: Vec<Rc<Counting>> = (0..n).map(|_| Rc::new(Counting(&SINK))).collect();
            for (i, handler) in handlers.iter().enumerate() {
                assert!(processor.register_event_handler(handler, priority(i)));
            }
            Lumina {
                processor,
                _handlers: handlers,
            }
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            self.processor.dispatch(event())
        }
    }

    /// A handler of today's kind that reacts to one class: downcasts, then does the common work.
    pub struct Downcasting(&'static AtomicU64);

    impl EventHandler for Downcasting {
        fn on_event(&self, event: &mut dyn Event) -> bool {
            if let Some(key) = event.downcast_mut::<KeyPressedEvent>() {
                work(self.0, 1);
                return key.key == Key::Escape;
            }
            false
        }
    }

    /// lumina's `EventProcessor` with today's handlers reacting to `KeyPressedEvent`: each
    /// downcasts `&mut dyn Event` itself (X1's baseline).
    pub struct LuminaDowncast {
        processor: EventProcessor,
        _handlers: Vec<Rc<Downcasting>>,
    }

    impl Dispatch for LuminaDowncast {
        const NAME: &'static str = "lumina dyn handler + downcast";
        fn with_handlers(n: usize) -> Self {
            let processor = EventProcessor::new();
            let handlers: Vec<Rc<Downcasting>> =
                (0..n).map(|_| Rc::new(Downcasting(&SINK))).collect();
            for (i, handler) in handlers.iter().enumerate() {
                assert!(processor.register_event_handler(handler, priority(i)));
            }
            LuminaDowncast {
                processor,
                _handlers: handlers,
            }
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            self.processor.dispatch(event())
        }
    }

    /// lumina's `EventProcessor` with typed handlers (`add_handler::<KeyPressedEvent>`, X1) doing
    /// the same work.
    pub struct LuminaTyped {
        processor: EventProcessor,
        _handlers: Vec<lumina::event::EventSubscription>,
    }

    impl Dispatch for LuminaTyped {
        const NAME: &'static str = "lumina typed handler (X1)";
        fn with_handlers(n: usize) -> Self {
            let processor = EventProcessor::new();
            let handlers = (0..n)
                .map(|i| {
                    processor.add_handler::<KeyPressedEvent>(priority(i), |key| {
                        work(&SINK, 1);
                        key.key == Key::Escape
                    })
                })
                .collect();
            LuminaTyped {
                processor,
                _handlers: handlers,
            }
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            self.processor.dispatch(event())
        }
    }
    /// lumina's `EventProcessor` with self-aware handlers (X6) doing the same work as
    /// [`Lumina`]'s, none of them blocked (X4): what muting and self-awareness cost a dispatch
    /// that uses neither.
    pub struct LuminaSelfAware {
        processor: EventProcessor,
        _handlers: Vec<lumina::event::EventSubscription>,
    }

    impl Dispatch for LuminaSelfAware {
        const NAME: &'static str = "lumina self-aware handler (X6)";
        fn with_handlers(n: usize) -> Self {
            let processor = EventProcessor::new();
            let handlers = (0..n)
                .map(|i| {
                    processor
                        .subscribe()
                        .priority(priority(i))
                        .self_aware()
                        .add_handler::<lumina::event::category::All>(|_, _| {
                        work(&SINK, 1);
                        false
                    })
                })
                .collect();
            LuminaSelfAware {
                processor,
                _handlers: handlers,
            }
        }
        #[inline(never)]
        fn dispatch(&self) -> bool {
            self.processor.dispatch(event())
        }
    }
}

/// Script delegates: native listeners (Rust closures) and managed ones (`extern "C"` thunks, as
/// the C# host binds them).
pub mod script {
    use std::ffi::c_void;
    use std::sync::atomic::AtomicU64;

    use lumina::script_delegate::ManagedThunk;
    use lumina::{ScriptDelegate, script_delegate};

    use super::{SINK, System, work};

    /// The payload every broadcast carries.
    #[script_delegate]
    pub struct Hit {
        /// Added to the counter by each listener.
        pub damage: i32,
    }

    /// A managed listener: the host's thunk, here plain Rust behind the C ABI.
    extern "C" fn managed(_context: *mut c_void, _payload: *const c_void) {
        work(&SINK, 1);
    }

    /// A boxed native listener.
    type Listener = Box<dyn Fn(&Hit)>;

    /// Floor for native listeners: a raw `Vec<Box<dyn Fn(&Hit)>>` loop.
    pub struct NativeFloor(Vec<Listener>);

    impl System for NativeFloor {
        const NAME: &'static str = "floor Vec<Box<dyn Fn(&P)>>";
        fn with_subscribers(n: usize) -> Self {
            let sink: &'static AtomicU64 = &SINK;
            NativeFloor(
                (0..n)
                    .map(|_| Box::new(move |hit: &Hit| work(sink, hit.damage)) as Listener)
                    .collect(),
            )
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            let hit = Hit { damage: x };
            for listener in &self.0 {
                listener(&hit);
            }
        }
    }

    /// lumina's `ScriptDelegate<Hit>` with native listeners.
    pub struct Native(ScriptDelegate<Hit>);

    impl System for Native {
        const NAME: &'static str = "lumina ScriptDelegate native";
        fn with_subscribers(n: usize) -> Self {
            let delegate = ScriptDelegate::<Hit>::new();
            let sink: &'static AtomicU64 = &SINK;
            for _ in 0..n {
                let _ = delegate.add_lambda(move |hit| work(sink, hit.damage));
            }
            Native(delegate)
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            self.0.broadcast(&Hit { damage: x });
        }
    }

    /// Floor for managed listeners: a raw `Vec` of (thunk, context) called with the payload's
    /// address.
    pub struct ManagedFloor(Vec<(ManagedThunk, *mut c_void)>);

    impl System for ManagedFloor {
        const NAME: &'static str = "floor Vec<extern \"C\" fn>";
        fn with_subscribers(n: usize) -> Self {
            let thunk: ManagedThunk = managed;
            ManagedFloor(vec![(thunk, std::ptr::null_mut()); n])
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            let hit = Hit { damage: x };
            let payload = (&raw const hit).cast::<c_void>();
            for &(thunk, context) in &self.0 {
                thunk(context, payload);
            }
        }
    }

    /// lumina's `ScriptDelegate<Hit>` with managed listeners bound through `bind_managed`.
    pub struct Managed(ScriptDelegate<Hit>);

    impl System for Managed {
        const NAME: &'static str = "lumina ScriptDelegate managed";
        fn with_subscribers(n: usize) -> Self {
            let delegate = ScriptDelegate::<Hit>::new();
            for _ in 0..n {
                assert_ne!(
                    delegate
                        .base()
                        .bind_managed(Some(managed), std::ptr::null_mut()),
                    0
                );
            }
            Managed(delegate)
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            self.0.broadcast(&Hit { damage: x });
        }
    }
}

/// The game-shaped body (rule N2): a declared delegate `Tick(dt: u64)` whose subscriber `i` adds
/// `dt ^ i` into a thread-local `Cell<u64>`, a `Copy` argument and no captured reference, against
/// a raw `Vec<Box<dyn Fn(u64)>>` loop with the same body, and the same body on a generic
/// `MulticastDelegate<dyn Fn(u64)>`. A body-specific cost of the broadcast path shows here even
/// when the atomic-sink body above hides it.
pub mod tick {
    use std::cell::Cell;

    use lumina::{MulticastDelegate, declare_multicast_delegate};

    thread_local! {
        /// Where every tick subscriber adds.
        pub static ACCUMULATOR: Cell<u64> = const { Cell::new(0) };
    }

    declare_multicast_delegate!(
        /// The frame tick of the N2 benchmarks.
        pub Tick(dt: u64)
    );

    /// Subscriber `i`'s body, identical for every system.
    #[inline(always)]
    pub fn tick_body(dt: u64, i: u64) {
        ACCUMULATOR.with(|sum| sum.set(sum.get().wrapping_add(dt ^ i)));
    }

    /// Reads (and resets) the accumulator.
    pub fn take() -> u64 {
        ACCUMULATOR.with(|sum| sum.replace(0))
    }

    /// What one broadcast of `dt` to `n` subscribers adds.
    pub fn expected(n: usize, dt: u64) -> u64 {
        (0..n as u64).fold(0, |sum, i| sum.wrapping_add(dt ^ i))
    }

    /// A tick system: `n` subscribers, one call broadcasts `dt`.
    pub trait TickSystem {
        /// Short name for tables.
        const NAME: &'static str;
        /// A system with `n` subscribers.
        fn with_subscribers(n: usize) -> Self;
        /// Calls every subscriber once with `dt`.
        fn broadcast(&self, dt: u64);
    }

    /// The floor: a raw loop in a function that is never inlined.
    pub struct Floor(Vec<Box<dyn Fn(u64)>>);

    impl TickSystem for Floor {
        const NAME: &'static str = "floor Vec<Box<dyn Fn(u64)>>";
        fn with_subscribers(n: usize) -> Self {
            Floor(
                (0..n as u64)
                    .map(|i| Box::new(move |dt| tick_body(dt, i)) as Box<dyn Fn(u64)>)
                    .collect(),
            )
        }
        #[inline(never)]
        fn broadcast(&self, dt: u64) {
            for subscriber in &self.0 {
                subscriber(dt);
            }
        }
    }

    /// The declared delegate `Tick`.
    pub struct Declared(Tick);

    impl TickSystem for Declared {
        const NAME: &'static str = "lumina declared Tick(dt: u64)";
        fn with_subscribers(n: usize) -> Self {
            let tick = Tick::new();
            for i in 0..n as u64 {
                let _ = tick.add_lambda(move |dt| tick_body(dt, i));
            }
            Declared(tick)
        }
        #[inline(never)]
        fn broadcast(&self, dt: u64) {
            self.0.broadcast(dt);
        }
    }

    /// The generic delegate with the same body.
    pub struct Generic(MulticastDelegate<dyn Fn(u64)>);

    impl TickSystem for Generic {
        const NAME: &'static str = "lumina generic <dyn Fn(u64)>";
        fn with_subscribers(n: usize) -> Self {
            let delegate: MulticastDelegate<dyn Fn(u64)> = MulticastDelegate::new();
            for i in 0..n as u64 {
                let _ = delegate.add_lambda(move |dt| tick_body(dt, i));
            }
            Generic(delegate)
        }
        #[inline(never)]
        fn broadcast(&self, dt: u64) {
            self.0.broadcast(dt);
        }
    }
}

/// The message bus (GB9): a send on one tag against a raw `HashMap<u32, Vec<Box<dyn Fn>>>`
/// lookup and loop (exact listeners), and a send on a tag of depth 3 whose three levels each
/// have partial listeners against three such lookups and loops.
pub mod bus {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;

    use lumina::{MessageBus, TagKey};

    use super::{SINK, System, work};

    /// The tag of the exact-listener sends.
    pub static EXACT: TagKey<i32> = TagKey::new("BenchBus.Exact", false);
    /// The tag of depth 4 whose three nearest levels have partial listeners.
    pub static DEEP: TagKey<i32> = TagKey::new("BenchBus.Deep.Level.Three", false);

    /// The floor's map: listeners by tag id.
    pub type FloorMap = HashMap<u32, Vec<Box<dyn Fn(&i32)>>>;

    /// A floor map with 8 other channels (so it is not a single entry) and `n` listeners on each
    /// of `ids`.
    pub fn floor_map(ids: &[u32], n: usize) -> FloorMap {
        let sink: &'static AtomicU64 = &SINK;
        let mut map: FloorMap = HashMap::new();
        for id in 0..8 {
            map.insert(1000 + id, Vec::new());
        }
        for &id in ids {
            map.entry(id).or_default().extend(
                (0..n).map(|_| Box::new(move |x: &i32| work(sink, *x)) as Box<dyn Fn(&i32)>),
            );
        }
        map
    }

    /// The floor's send: one lookup, then a loop.
    #[inline(always)]
    pub fn floor_send(map: &FloorMap, id: u32, x: i32) {
        if let Some(listeners) = map.get(&id) {
            for listener in listeners {
                listener(&x);
            }
        }
    }

    /// The three ids of `DEEP`'s nearest levels (the tag, its parent, its grandparent).
    pub fn deep_levels() -> Vec<u32> {
        DEEP.tag().ancestors().take(3).map(|tag| tag.id()).collect()
    }

    /// The floor of an exact send: `n` listeners on one id.
    pub struct Floor {
        map: FloorMap,
        id: u32,
    }

    impl System for Floor {
        const NAME: &'static str = "floor HashMap<u32, Vec<Box>>";
        fn with_subscribers(n: usize) -> Self {
            let id = EXACT.tag().id();
            Floor {
                map: floor_map(&[id], n),
                id,
            }
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            floor_send(&self.map, self.id, x);
        }
    }

    /// `MessageBus::send` to `n` exact listeners.
    pub struct Bus(MessageBus<u32>);

    impl System for Bus {
        const NAME: &'static str = "lumina MessageBus::send";
        fn with_subscribers(n: usize) -> Self {
            let bus: MessageBus<u32> = MessageBus::new();
            let sink: &'static AtomicU64 = &SINK;
            for _ in 0..n {
                let _ = bus.listen(&EXACT, move |x, _| work(sink, *x));
            }
            Bus(bus)
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            self.0.send(&EXACT, x);
        }
    }

    /// The floor of a partial send at depth 3: `n / 3` listeners on each of three ids, three
    /// lookups and loops.
    pub struct PartialFloor {
        map: FloorMap,
        levels: Vec<u32>,
    }

    impl System for PartialFloor {
        const NAME: &'static str = "floor 3 lookups + loops";
        fn with_subscribers(n: usize) -> Self {
            assert!(
                n.is_multiple_of(3),
                "a partial send has listeners on 3 levels"
            );
            let levels = deep_levels();
            PartialFloor {
                map: floor_map(&levels, n / 3),
                levels,
            }
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            for &id in &self.levels {
                floor_send(&self.map, id, x);
            }
        }
    }

    /// `MessageBus::send` on `DEEP` with `n / 3` partial listeners on each of its three nearest
    /// levels.
    pub struct Partial(MessageBus<u32>);

    impl System for Partial {
        const NAME: &'static str = "lumina MessageBus::send";
        fn with_subscribers(n: usize) -> Self {
            assert!(
                n.is_multiple_of(3),
                "a partial send has listeners on 3 levels"
            );
            let bus: MessageBus<u32> = MessageBus::new();
            let sink: &'static AtomicU64 = &SINK;
            for tag in DEEP.tag().ancestors().take(3) {
                for _ in 0..n / 3 {
                    let _ = bus.subscribe().partial().listen(tag, move |message| {
                        work(sink, *message.payload::<i32>().expect("an i32"));
                    });
                }
            }
            Partial(bus)
        }
        #[inline(never)]
        fn broadcast(&self, x: i32) {
            self.0.send(&DEEP, x);
        }
    }
}
