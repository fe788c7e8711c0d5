//! V2, V3: the trace of every broadcast, as a `tracing` subscriber sees it. A small collector
//! records each span's name, fields and parent; the tests check the broadcast span, one child
//! span per subscriber call in call order named by its bind site (this file's own lines), the
//! nesting of a broadcast made inside a subscriber call, the bus send span with its tag, and
//! the subscriber calls of the processor's slow path and of the merging walk.
//! Without the feature `trace` there is nothing to check: CI runs this file with it.
#![cfg(feature = "trace")]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use lumina::MulticastDelegate;
use lumina::bus::{MessageBus, TagKey};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

mod support;

/// One span as recorded: its name, its fields as text, and its parent's index.
#[derive(Debug, Clone)]
struct Recorded {
    name: &'static str,
    fields: Vec<(String, String)>,
    parent: Option<usize>,
}

impl Recorded {
    fn field(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Records every span in creation order; the parent is the span entered when it was made.
#[derive(Default, Clone)]
struct Collector {
    spans: Arc<Mutex<Vec<Recorded>>>,
    stack: Arc<Mutex<Vec<usize>>>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let mut fields = Vec::new();
        attributes.record(&mut Fields(&mut fields));
        let parent = self.stack.lock().unwrap().last().copied();
        let mut spans = self.spans.lock().unwrap();
        spans.push(Recorded {
            name: attributes.metadata().name(),
            fields,
            parent,
        });
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        values.record(&mut Fields(&mut spans[span.into_u64() as usize - 1].fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        self.stack
            .lock()
            .unwrap()
            .push(span.into_u64() as usize - 1);
    }
    fn exit(&self, _: &Id) {
        self.stack.lock().unwrap().pop();
    }
}

/// Runs `f` with a fresh collector installed, and returns what it recorded.
fn collect(f: impl FnOnce()) -> Vec<Recorded> {
    let collector = Collector::default();
    tracing::subscriber::with_default(collector.clone(), f);
    collector.spans.lock().unwrap().clone()
}

#[test]
fn a_broadcast_is_a_span_with_one_child_per_subscriber_call_in_order() {
    let on_tick: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let first = line!() + 1;
    let _a = on_tick.add_lambda(|_| {});
    let second = line!() + 1;
    let _b = on_tick.add_lambda(|_| {});
    let spans = collect(|| on_tick.broadcast(7));

    assert_eq!(spans.len(), 3, "{spans:#?}");
    assert_eq!(spans[0].name, "broadcast");
    assert_eq!(spans[0].parent, None);
    assert!(spans[0].field("source").contains("Fn(u32)"), "{spans:#?}");
    for (span, line) in spans[1..].iter().zip([first, second]) {
        assert_eq!(span.name, "subscriber");
        assert_eq!(span.parent, Some(0));
        assert!(
            span.field("bind_site")
                .starts_with(&format!("{}:{line}:", file!())),
            "{span:?} at line {line}"
        );
    }
}

lumina::declare_multicast_delegate!(FOnScoreChanged(score: u32));

/// A delegate declared with `declare_multicast_delegate!` names its broadcast span by its
/// declared name, not by its subscribers' type (`dyn Fn(u32)`).
#[test]
fn a_declared_delegate_names_its_broadcast_span() {
    let on_score = FOnScoreChanged::new();
    let line = line!() + 1;
    let _hud = on_score.add_lambda(|_| {});
    let spans = collect(|| on_score.broadcast(3));

    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[0].name, "broadcast");
    assert_eq!(spans[0].field("source"), "FOnScoreChanged", "{spans:#?}");
    assert_eq!(spans[1].parent, Some(0));
    assert!(
        spans[1].field("bind_site").contains(&format!(":{line}:")),
        "{spans:#?}"
    );
}

#[test]
fn a_broadcast_made_inside_a_subscriber_call_nests_under_that_call() {
    let inner: Rc<MulticastDelegate<dyn Fn()>> = Rc::new(MulticastDelegate::new());
    let inner_line = line!() + 1;
    let _i = inner.add_lambda(|| {});
    let outer: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let nested = Rc::clone(&inner);
    let _o = outer.add_lambda(move || nested.broadcast());
    let spans = collect(|| outer.broadcast());

    let names: Vec<_> = spans.iter().map(|s| (s.name, s.parent)).collect();
    assert_eq!(
        names,
        [
            ("broadcast", None),
            ("subscriber", Some(0)),
            ("broadcast", Some(1)),
            ("subscriber", Some(2)),
        ]
    );
    assert!(
        spans[3]
            .field("bind_site")
            .contains(&format!(":{inner_line}:"))
    );
}

static DAMAGE: TagKey<u32> = TagKey::new("TraceTest.Damage", false);

#[test]
fn a_bus_send_is_a_span_named_by_its_tag() {
    let bus: MessageBus = MessageBus::new();
    let heard = Rc::new(RefCell::new(Vec::new()));
    let log = Rc::clone(&heard);
    let line = line!() + 1;
    let _l = bus.listen(&DAMAGE, move |amount, _| log.borrow_mut().push(*amount));
    let spans = collect(|| bus.send(&DAMAGE, 5));

    assert_eq!(*heard.borrow(), [5]);
    let send = spans
        .iter()
        .position(|s| s.name == "send")
        .expect("a send span");
    assert_eq!(spans[send].field("tag"), "TraceTest.Damage");
    let calls: Vec<_> = spans.iter().filter(|s| s.name == "subscriber").collect();
    assert_eq!(calls.len(), 1, "{spans:#?}");
    assert!(calls[0].field("bind_site").contains(&format!(":{line}:")));
    // The call is inside the send.
    let mut at = calls[0].parent;
    while let Some(i) = at {
        if i == send {
            return;
        }
        at = spans[i].parent;
    }
    panic!("the subscriber call is not under the send span: {spans:#?}");
}

/// The `trace` example, run with the cargo that runs this test: its `trace.json` (the Chrome
/// trace format Perfetto opens) holds the engine loop's broadcasts, each with its subscriber
/// calls named by their bind sites in `examples/engine_loop.rs`.
#[test]
fn the_trace_example_writes_broadcasts_and_bind_sites_as_chrome_json() {
    let folder = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-example");
    support::run_example_into("trace", "trace", &folder);
    let text = std::fs::read_to_string(folder.join("trace.json")).expect("trace.json written");
    let events: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON array");
    let named = |name: &str| {
        events
            .iter()
            .filter(|e| e["name"] == name && e["ph"] == "B")
            .collect::<Vec<_>>()
    };
    let broadcasts = named("broadcast");
    let calls = named("subscriber");
    assert!(broadcasts.len() >= 3, "{text}");
    assert!(calls.len() >= broadcasts.len(), "{text}");
    for call in &calls {
        let site = call["args"]["bind_site"].as_str().expect("a bind site");
        assert!(site.starts_with("examples/engine_loop.rs:"), "{site}");
    }
    // Every begin has its end, so the file shows a well-nested timeline.
    let ends = events.iter().filter(|e| e["ph"] == "E").count();
    assert_eq!(ends, broadcasts.len() + calls.len(), "{text}");
}

struct Viewport;

impl lumina::event::EventHandler for Viewport {
    fn on_event(&self, _: &mut dyn lumina::event::Event) -> bool {
        true
    }
}

/// Dispatches a key press through `processor` (whose one handler, registered at `line`,
/// consumes it) and checks the trace: a `dispatch` span named by the event type, with the
/// handler's call a `subscriber` span under the handler list's broadcast under it.
fn check_one_handler_call(processor: &lumina::event::EventProcessor, line: u32) {
    use lumina::event::{Key, KeyPressedEvent, Modifiers};
    let spans = collect(|| {
        assert!(processor.dispatch(KeyPressedEvent::new(Key::W, Modifiers::NONE)));
    });

    assert_eq!(spans[0].name, "dispatch", "{spans:#?}");
    assert!(
        spans[0].field("event").ends_with("KeyPressedEvent"),
        "{spans:#?}"
    );
    let calls: Vec<_> = spans.iter().filter(|s| s.name == "subscriber").collect();
    assert_eq!(calls.len(), 1, "{spans:#?}");
    assert!(
        calls[0].field("bind_site").contains(&format!(":{line}:")),
        "{spans:#?}"
    );
    assert!(
        calls[0].parent.is_some_and(|p| spans[p].parent == Some(0)),
        "{spans:#?}"
    );
}

#[test]
fn a_dispatch_is_a_span_named_by_its_event_type_over_its_handler_calls() {
    use lumina::event::{EventProcessor, InputLayer};
    let processor = EventProcessor::new();
    let viewport = Rc::new(Viewport);
    let line = line!() + 1;
    assert!(processor.register_event_handler(&viewport, InputLayer::Viewport));
    check_one_handler_call(&processor, line);
}

/// The processor's slow path (one-shot, blocked and owned handlers): a one-shot handler's call
/// is a `subscriber` span too, named by its registration's line, under the dispatch.
#[test]
fn a_one_shot_handler_call_is_a_span_on_the_slow_dispatch_path() {
    use lumina::event::{EventProcessor, InputLayer};
    let processor = EventProcessor::new();
    let viewport = Rc::new(Viewport);
    let once = processor.subscribe().priority(InputLayer::Viewport).once();
    let line = line!() + 1;
    assert!(once.register_event_handler(&viewport));
    check_one_handler_call(&processor, line);
}

/// The merging walk: a nested broadcast of a list while subscribers added during the outer
/// broadcast wait to be merged still has one `subscriber` span per call, the waiting one's
/// named by the line that added it.
#[test]
fn a_nested_broadcast_that_merges_added_subscribers_has_a_span_per_call() {
    let on_tick: Rc<MulticastDelegate<dyn Fn()>> = Rc::new(MulticastDelegate::new());
    let added_line = Rc::new(std::cell::Cell::new(0));
    let (delegate, at) = (Rc::downgrade(&on_tick), Rc::clone(&added_line));
    let nested = std::cell::Cell::new(false);
    let first_line = line!() + 1;
    let _first = on_tick.add_lambda(move || {
        if nested.replace(true) {
            return;
        }
        let delegate = delegate.upgrade().expect("alive");
        at.set(line!() + 1);
        let _ = delegate.add_lambda(|| {});
        // Nested, while the subscriber just added waits: the merging walk.
        delegate.broadcast();
    });
    let spans = collect(|| on_tick.broadcast());

    let shape: Vec<_> = spans.iter().map(|s| (s.name, s.parent)).collect();
    assert_eq!(
        shape,
        [
            ("broadcast", None),
            ("subscriber", Some(0)),
            ("broadcast", Some(1)),
            ("subscriber", Some(2)),
            ("subscriber", Some(2)),
        ],
        "{spans:#?}"
    );
    for (span, line) in spans[3..].iter().zip([first_line, added_line.get()]) {
        assert!(
            span.field("bind_site").contains(&format!(":{line}:")),
            "{span:?} at line {line}"
        );
    }
}

/// Checks that `spans` are one broadcast whose `source` is `source`, with one `subscriber`
/// child per call in call order, each named by its bind site, one of `lines` of this file.
fn check_broadcast(spans: &[Recorded], source: impl Fn(&str) -> bool, lines: &[u32]) {
    assert_eq!(spans.len(), 1 + lines.len(), "{spans:#?}");
    assert_eq!(spans[0].name, "broadcast", "{spans:#?}");
    assert_eq!(spans[0].parent, None, "{spans:#?}");
    assert!(source(spans[0].field("source")), "{spans:#?}");
    for (span, line) in spans[1..].iter().zip(lines) {
        assert_eq!(span.name, "subscriber", "{spans:#?}");
        assert_eq!(span.parent, Some(0), "{spans:#?}");
        assert!(
            span.field("bind_site")
                .starts_with(&format!("{}:{line}:", file!())),
            "{span:?} at line {line}"
        );
    }
}

/// A fold that stops at the first `false` (and returns it).
fn all_yes(_: bool, yes: bool) -> std::ops::ControlFlow<bool, bool> {
    if yes {
        std::ops::ControlFlow::Continue(true)
    } else {
        std::ops::ControlFlow::Break(false)
    }
}

/// A stop at the first `false`.
fn first_no(yes: bool) -> std::ops::ControlFlow<()> {
    if yes {
        std::ops::ControlFlow::Continue(())
    } else {
        std::ops::ControlFlow::Break(())
    }
}

/// Every broadcast form of a generic multicast delegate is a span with one child per
/// subscriber call: `broadcast_fold` and `broadcast_until` stop at the second subscriber, so the
/// third has no span; `broadcast_collect` and `broadcast_and_clear` call all three.
#[test]
fn every_broadcast_form_of_a_multicast_delegate_is_a_span_over_its_calls() {
    let on_ask: MulticastDelegate<dyn Fn(u32) -> bool> = MulticastDelegate::new();
    let lines = [line!() + 1, line!() + 2, line!() + 3];
    let _a = on_ask.add_lambda(|_| true);
    let _b = on_ask.add_lambda(|_| false);
    let _c = on_ask.add_lambda(|_| true);
    let generic = |source: &str| source.contains("Fn(u32) -> bool");

    let spans = collect(|| assert!(!on_ask.broadcast_fold(1, true, all_yes)));
    check_broadcast(&spans, generic, &lines[..2]);

    let spans = collect(|| assert_eq!(on_ask.broadcast_until(2, first_no), Some(())));
    check_broadcast(&spans, generic, &lines[..2]);

    let spans = collect(|| assert_eq!(on_ask.broadcast_collect(3), [true, false, true]));
    check_broadcast(&spans, generic, &lines);

    let spans = collect(|| on_ask.broadcast_and_clear(4));
    check_broadcast(&spans, generic, &lines);
    assert!(on_ask.is_empty());
}

lumina::declare_multicast_delegate!(FCanOpen(door: u32) -> bool);

/// The same forms of a declared delegate name their span by the declared type, as its
/// `broadcast` does.
#[test]
fn every_broadcast_form_of_a_declared_delegate_is_named_by_its_declared_type() {
    let can_open = FCanOpen::new();
    let lines = [line!() + 1, line!() + 2, line!() + 3];
    let _a = can_open.add_lambda(|_| true);
    let _b = can_open.add_lambda(|door| door != 7);
    let _c = can_open.add_lambda(|_| true);
    let declared = |source: &str| source == "FCanOpen";

    let spans = collect(|| assert!(!can_open.broadcast_fold(7, true, all_yes)));
    check_broadcast(&spans, declared, &lines[..2]);

    let spans = collect(|| assert_eq!(can_open.broadcast_until(7, first_no), Some(())));
    check_broadcast(&spans, declared, &lines[..2]);

    let spans = collect(|| assert_eq!(can_open.broadcast_collect(7), [true, false, true]));
    check_broadcast(&spans, declared, &lines);

    let spans = collect(|| can_open.broadcast(1));
    check_broadcast(&spans, declared, &lines);

    let spans = collect(|| can_open.broadcast_and_clear(1));
    check_broadcast(&spans, declared, &lines);
    assert!(can_open.is_empty());
}

lumina::declare_multicast_delegate!(sync FOnLoaded(level: u32));

/// The thread-safe delegate: its broadcast is a span over one child per call, from the game
/// thread and from another thread (each thread's spans are its own); a declared one is named by
/// its declared type.
#[test]
fn a_thread_safe_delegate_broadcast_is_a_span_over_its_calls_on_any_thread() {
    let on_loaded: lumina::SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> =
        lumina::SyncMulticastDelegate::new();
    let lines = [line!() + 1, line!() + 2];
    let _a = on_loaded.add_lambda(|_| {});
    let _b = on_loaded.subscribe().once().add_lambda(|_| {});
    let generic = |source: &str| source.contains("Fn(u32)") && source.contains("Send");
    let spans = collect(|| on_loaded.broadcast(1));
    check_broadcast(&spans, generic, &lines);
    // The one-shot went: one call, from another thread.
    let spans = std::thread::scope(|scope| {
        scope
            .spawn(|| collect(|| on_loaded.broadcast(2)))
            .join()
            .expect("the thread")
    });
    check_broadcast(&spans, generic, &lines[..1]);

    let declared = FOnLoaded::new();
    let line = line!() + 1;
    let _d = declared.add_lambda(|_| {});
    let spans = collect(|| declared.broadcast(3));
    check_broadcast(&spans, |source| source == "FOnLoaded", &[line]);
}

#[lumina::script_delegate]
#[derive(Clone, Copy, Debug)]
struct TraceHit {
    damage: f32,
}

/// The managed calls of [`count_managed`] (one test uses it).
static MANAGED_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A managed listener's thunk, as the C ABI calls it: counts its calls.
extern "C" fn count_managed(_context: *mut std::ffi::c_void, _payload: *const std::ffi::c_void) {
    MANAGED_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A script delegate's broadcast is a span named by its payload type: with native listeners
/// only (the multicast loop), and with native and managed ones (the two filtered passes of
/// `for_each_matching`): one child per call, natives first, and none for a listener a pass
/// passes over.
#[test]
fn a_script_delegate_broadcast_is_a_span_named_by_its_payload_over_both_passes() {
    let on_hit: lumina::ScriptDelegate<TraceHit> = lumina::ScriptDelegate::new();
    let heard = Rc::new(std::cell::Cell::new(0.0));
    let log = Rc::clone(&heard);
    let native = line!() + 1;
    let _n = on_hit.add_lambda(move |hit| log.set(log.get() + hit.damage));
    let payload = |source: &str| source == "TraceHit";
    let spans = collect(|| on_hit.broadcast(&TraceHit { damage: 1.0 }));
    check_broadcast(&spans, payload, &[native]);

    let managed = line!() + 1;
    let id = on_hit.bind_managed(Some(count_managed), std::ptr::null_mut());
    assert_ne!(id, 0);
    let second = line!() + 1;
    let _m = on_hit.add_lambda(|_| {});
    let spans = collect(|| on_hit.broadcast(&TraceHit { damage: 2.0 }));
    assert_eq!(heard.get(), 3.0);
    assert_eq!(MANAGED_CALLS.load(std::sync::atomic::Ordering::Relaxed), 1);
    check_broadcast(&spans, payload, &[native, second, managed]);
    assert!(on_hit.base().unbind_managed(id));
}

/// A lifecycle signal's `broadcast_and_clear` (the engine's one-shot core delegates) is a span
/// named by the signal's name.
#[test]
fn a_lifecycle_signal_fires_as_a_span_named_by_the_signal() {
    let signal = lumina::core_delegates::LifecycleSignal::new("OnTraceTestInit");
    let line = line!() + 1;
    let _s = signal.add_lambda(|| {});
    let spans = collect(|| signal.broadcast_and_clear());
    check_broadcast(&spans, |source| source == "OnTraceTestInit", &[line]);
}
