//! Behaviour of script delegates (rules SD1-SD4, and M1-M8 across native and managed listeners).
//!
//! Managed listeners are plain `extern "C"` functions here. Their context is an index into a
//! thread-local table of actions; they log `managed <index>` (plus ` null` for a null payload)
//! and run their action, which lets a "managed" listener unbind, broadcast or clear.

mod support;

use lumina::script_delegate::{
    BindError, ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
};
use lumina::{ScriptComponent, ScriptDelegate, script_delegate};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Mutex;

#[script_delegate]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Hit {
    damage: f32,
    entity: u64,
}

#[derive(ScriptComponent, Default)]
struct Target {
    _armor: u32,
    #[property(editable, category = "Events")]
    on_hit: ScriptDelegate<Hit>,
    #[property]
    on_destroyed: ScriptDelegate<()>,
}

type Action = Option<Rc<dyn Fn()>>;

thread_local! {
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static ACTIONS: RefCell<Vec<Action>> = const { RefCell::new(Vec::new()) };
    static LAST_PAYLOAD: Cell<usize> = const { Cell::new(0) };
}

fn log(entry: impl Into<String>) {
    LOG.with(|log| log.borrow_mut().push(entry.into()));
}

fn take_log() -> Vec<String> {
    LOG.with(|log| std::mem::take(&mut *log.borrow_mut()))
}

extern "C" fn recording_thunk(context: *mut c_void, payload: *const c_void) {
    let index = context.addr();
    if payload.is_null() {
        log(format!("managed {index} null"));
    } else {
        log(format!("managed {index}"));
    }
    LAST_PAYLOAD.with(|last| last.set(payload.addr()));
    let action = ACTIONS.with(|actions| actions.borrow().get(index).cloned().flatten());
    if let Some(action) = action {
        action();
    }
}

/// A fresh managed context whose calls run `action`.
fn context_with(action: Action) -> *mut c_void {
    ACTIONS.with(|actions| {
        let mut actions = actions.borrow_mut();
        actions.push(action);
        std::ptr::without_provenance_mut(actions.len() - 1)
    })
}

fn context() -> *mut c_void {
    context_with(None)
}

fn managed(context: *mut c_void) -> String {
    format!("managed {}", context.addr())
}

fn hit() -> Hit {
    Hit {
        damage: 1.5,
        entity: 42,
    }
}

/// Releases recorded by `recording_hook`: (count, reason, ids) per call.
static RELEASED: Mutex<Vec<(usize, ReleaseReason)>> = Mutex::new(Vec::new());
/// The hook is process-wide; tests that install one take turns.
static HOOK_TURN: Mutex<()> = Mutex::new(());

extern "C" fn recording_hook(
    delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    assert!(!delegate.is_null() && !bindings.is_null());
    RELEASED.lock().unwrap().push((count, reason));
}

/// Runs `f` with the recording hook installed; returns what it recorded.
fn with_recording_hook(f: impl FnOnce()) -> Vec<(usize, ReleaseReason)> {
    let _turn = HOOK_TURN.lock().unwrap_or_else(|e| e.into_inner());
    RELEASED.lock().unwrap().clear();
    let previous = set_destroyed_hook(Some(recording_hook));
    f();
    set_destroyed_hook(previous);
    std::mem::take(&mut *RELEASED.lock().unwrap())
}

#[test]
fn sd1_base_is_at_offset_zero_so_a_base_pointer_reaches_any_delegate() {
    let target = Target::default();
    let component = std::ptr::from_ref(&target) as usize;
    assert_eq!(
        std::ptr::from_ref(target.on_hit.base()) as usize - component,
        std::mem::offset_of!(Target, on_hit)
    );
    assert_eq!(
        std::ptr::from_ref(target.on_hit.base()) as usize,
        std::ptr::from_ref(&target.on_hit) as usize
    );
    let base: &ScriptDelegateBase = &target.on_hit;
    assert_eq!(base.payload().name, "Hit");
    let context = context();
    assert_ne!(base.bind_managed(Some(recording_thunk), context), 0);
    target.on_hit.broadcast(&hit());
    assert_eq!(take_log(), [managed(context)]);
    with_recording_hook(|| drop(target));
}

#[test]
fn sd1_managed_thunk_receives_the_address_of_the_payload() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let context = context();
    let _ = on_hit.bind_managed(Some(recording_thunk), context);
    let payload = hit();
    on_hit.broadcast(&payload);
    assert_eq!(
        LAST_PAYLOAD.with(Cell::get),
        std::ptr::from_ref(&payload) as usize
    );
    with_recording_hook(|| drop(on_hit));
}

#[test]
fn sd1_void_payload_gives_managed_thunks_a_null_pointer() {
    let on_died: ScriptDelegate<()> = ScriptDelegate::new();
    let context = context();
    let _ = on_died.bind_managed(Some(recording_thunk), context);
    let natives = Rc::new(Cell::new(0));
    let sink = Rc::clone(&natives);
    let _ = on_died.add_lambda(move |()| sink.set(sink.get() + 1));
    on_died.broadcast(&());
    assert_eq!(natives.get(), 1);
    assert_eq!(take_log(), [format!("{} null", managed(context))]);
    assert_eq!(on_died.payload().name, "void");
    with_recording_hook(|| drop(on_died));
}

#[test]
fn sd2_native_side_has_the_multicast_api_and_handles() {
    struct Listener {
        hits: Cell<u32>,
    }
    fn static_listener(hit: &Hit) {
        log(format!("static {}", hit.entity));
    }
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&seen);
    let lambda = on_hit.add_lambda(move |hit| sink.borrow_mut().push(hit.entity));
    let listener = Rc::new(Listener { hits: Cell::new(0) });
    let _member = on_hit.add_member(&listener, |listener, _hit| {
        listener.hits.set(listener.hits.get() + 1);
    });
    let _static = on_hit.add_static(static_listener);
    assert_eq!(on_hit.len(), 3);
    assert!(on_hit.is_bound_to(&listener));
    on_hit.broadcast(&hit());
    assert_eq!(*seen.borrow(), [42]);
    assert_eq!(listener.hits.get(), 1);
    assert_eq!(take_log(), ["static 42"]);
    assert!(on_hit.remove(lambda));
    assert!(!on_hit.remove(lambda), "H2: removing twice changes nothing");
    drop(listener);
    assert_eq!(on_hit.len(), 1, "M9: a dead owner's binding stops counting");
    assert_eq!(on_hit.remove_all(&Rc::new(0_u8)), 0);
}

#[test]
fn sd2_bind_managed_refuses_a_null_thunk() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    assert_eq!(on_hit.bind_managed(None, std::ptr::null_mut()), 0);
    assert_eq!(
        on_hit.try_bind_managed(None, std::ptr::null_mut()),
        Err(BindError::NullThunk)
    );
    assert!(!on_hit.is_bound());
}

#[test]
fn sd2_bind_managed_ids_are_nonzero_and_increase() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let first = on_hit.bind_managed(Some(recording_thunk), context());
    let second = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(first != 0 && second > first);
    on_hit.clear();
}

#[test]
fn sd2_unbind_managed_by_id_refuses_stale_zero_and_foreign_ids() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let other: ScriptDelegate<Hit> = ScriptDelegate::new();
    let first = on_hit.bind_managed(Some(recording_thunk), context());
    let second = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(
        !other.unbind_managed(first),
        "another delegate's id is refused"
    );
    assert!(on_hit.unbind_managed(first));
    assert!(!on_hit.unbind_managed(first), "a stale id is refused");
    assert!(!on_hit.unbind_managed(0));
    assert!(!on_hit.unbind_managed(u64::MAX));
    assert_eq!(on_hit.managed_len(), 1);
    assert!(on_hit.unbind_managed(second));
    assert!(!on_hit.is_bound());
}

#[test]
fn sd2_native_and_managed_ids_do_not_cross() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let native = on_hit.add_lambda(|_| {});
    let _managed = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(
        !on_hit.unbind_managed(native.id()),
        "unbind_managed never removes a native listener"
    );
    assert_eq!((on_hit.len(), on_hit.managed_len()), (2, 1));
    on_hit.clear();
}

#[test]
fn sd3_broadcast_runs_native_listeners_first_then_managed_each_in_order() {
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let first = context();
    let _ = on_hit.bind_managed(Some(recording_thunk), first);
    let _ = on_hit.add_lambda(|hit| log(format!("native a {}", hit.damage)));
    let second = context();
    let _ = on_hit.bind_managed(Some(recording_thunk), second);
    let _ = on_hit.add_lambda(|_| log("native b"));
    on_hit.broadcast(&hit());
    assert_eq!(
        take_log(),
        [
            "native a 1.5".to_owned(),
            "native b".to_owned(),
            managed(first),
            managed(second),
        ]
    );
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd3_m2_managed_listener_bound_during_the_native_phase_runs_from_the_next_broadcast() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let inner = Rc::clone(&on_hit);
    let late = context();
    let bound = Rc::new(Cell::new(false));
    let once = Rc::clone(&bound);
    let _ = on_hit.add_lambda(move |_| {
        if !once.replace(true) {
            assert_ne!(inner.bind_managed(Some(recording_thunk), late), 0);
            log("native binds");
        }
    });
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), ["native binds"]);
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), [managed(late)]);
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd3_m2_native_listener_added_by_a_managed_one_does_not_run_in_that_broadcast() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let inner = Rc::clone(&on_hit);
    let context = context_with(Some(Rc::new(move || {
        let _ = inner.add_lambda(|_| log("late native"));
    })));
    let _ = on_hit.bind_managed(Some(recording_thunk), context);
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), [managed(context)]);
    assert_eq!(on_hit.len() - on_hit.managed_len(), 1);
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd3_m3_managed_listener_unbound_by_a_native_one_does_not_run() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let managed_id = on_hit.bind_managed(Some(recording_thunk), context());
    let inner = Rc::clone(&on_hit);
    let _ = on_hit.add_lambda(move |_| {
        assert!(inner.unbind_managed(managed_id));
        log("native unbinds");
    });
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), ["native unbinds"]);
    assert_eq!(on_hit.managed_len(), 0);
    on_hit.clear(); // the listener holds the delegate: break the cycle
}

#[test]
fn sd3_m4_managed_listener_unbinding_itself_finishes_and_never_runs_again() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let id = Rc::new(Cell::new(0));
    let inner = Rc::clone(&on_hit);
    let my_id = Rc::clone(&id);
    let context = context_with(Some(Rc::new(move || {
        assert!(inner.unbind_managed(my_id.get()));
        log("unbound myself");
    })));
    id.set(on_hit.bind_managed(Some(recording_thunk), context));
    let after = self::context();
    let _ = on_hit.bind_managed(Some(recording_thunk), after);
    on_hit.broadcast(&hit());
    assert_eq!(
        take_log(),
        [
            managed(context),
            "unbound myself".to_owned(),
            managed(after)
        ]
    );
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), [managed(after)]);
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd3_m5_nested_broadcast_from_a_managed_listener() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let inner = Rc::clone(&on_hit);
    let depth = Rc::new(Cell::new(0));
    let d = Rc::clone(&depth);
    let context = context_with(Some(Rc::new(move || {
        if d.get() < 2 {
            d.set(d.get() + 1);
            inner.broadcast(&hit());
        }
    })));
    let _ = on_hit.bind_managed(Some(recording_thunk), context);
    let _ = on_hit.add_lambda(|_| log("native"));
    on_hit.broadcast(&hit());
    let m = managed(context);
    let n = "native".to_owned();
    assert_eq!(
        take_log(),
        [n.clone(), m.clone(), n.clone(), m.clone(), n, m]
    );
    assert!(!on_hit.is_broadcasting());
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd3_m6_clear_during_the_native_phase_stops_the_managed_phase_and_releases() {
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let inner = Rc::clone(&on_hit);
    let _ = on_hit.add_lambda(move |_| {
        inner.clear();
        log("cleared");
    });
    let _ = on_hit.add_lambda(|_| log("native after clear"));
    let _ = on_hit.bind_managed(Some(recording_thunk), context());
    let released = with_recording_hook(|| on_hit.broadcast(&hit()));
    assert_eq!(take_log(), ["cleared"]);
    assert_eq!(released, [(1, ReleaseReason::Cleared)]);
    assert!(!on_hit.is_bound());
}

#[test]
fn sd3_m7_panicking_native_listener_leaves_the_delegate_consistent() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let fail = Rc::new(Cell::new(true));
    let should_fail = Rc::clone(&fail);
    let _ = on_hit.add_lambda(move |_| assert!(!should_fail.get(), "listener failed"));
    let context = context();
    let _ = on_hit.bind_managed(Some(recording_thunk), context);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        on_hit.broadcast(&hit());
    }));
    assert!(result.is_err());
    assert!(!on_hit.is_broadcasting());
    assert!(
        take_log().is_empty(),
        "the panic reached the broadcaster first"
    );
    fail.set(false);
    on_hit.broadcast(&hit());
    assert_eq!(take_log(), [managed(context)], "works normally afterwards");
    with_recording_hook(|| on_hit.clear());
}

#[test]
fn sd4_m8_is_bound_when_either_side_has_a_listener() {
    let on_hit = ScriptDelegate::<Hit>::new();
    assert!(!on_hit.is_bound());
    let native = on_hit.add_lambda(|_| {});
    assert!(on_hit.is_bound());
    assert!(on_hit.remove(native));
    assert!(!on_hit.is_bound());
    let managed = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(on_hit.is_bound());
    assert_eq!((on_hit.len(), on_hit.managed_len()), (1, 1));
    assert!(on_hit.unbind_managed(managed));
    assert!(!on_hit.is_bound());
    assert!(on_hit.is_empty());
}

#[test]
fn sd4_clone_starts_unbound_on_both_sides() {
    let target = Target::default();
    let _ = target.on_hit.add_lambda(|_| log("original"));
    let _ = target.on_hit.bind_managed(Some(recording_thunk), context());
    let copy = target.on_hit.clone();
    assert!(!copy.is_bound());
    copy.broadcast(&hit());
    assert!(
        take_log().is_empty(),
        "a copy does not fire the original's listeners"
    );
    assert_eq!(target.on_hit.len(), 2);
    let released = with_recording_hook(|| {
        drop(copy);
        drop(target);
    });
    assert_eq!(released, [(1, ReleaseReason::Destroyed)]);
}

#[test]
fn sd4_a_moved_delegate_keeps_its_listeners() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let _ = on_hit.add_lambda(|_| log("still here"));
    let moved = Box::new(on_hit);
    moved.broadcast(&hit());
    assert_eq!(take_log(), ["still here"]);
}

#[test]
fn sd4_dropping_a_delegate_with_managed_bindings_calls_the_destroyed_hook_once_with_all() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let _ = on_hit.add_lambda(|_| {});
    let contexts: Vec<_> = (0..3).map(|_| context()).collect();
    let ids: Vec<u64> = contexts
        .iter()
        .map(|&context| on_hit.bind_managed(Some(recording_thunk), context))
        .collect();
    let unbound = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(on_hit.unbind_managed(unbound));
    // What the hook receives is exactly this list (it is built by the same function).
    let bindings = on_hit.managed_bindings();
    assert_eq!(bindings.iter().map(|b| b.id).collect::<Vec<_>>(), ids);
    assert_eq!(
        bindings.iter().map(|b| b.context).collect::<Vec<_>>(),
        contexts
    );
    let released = with_recording_hook(|| drop(on_hit));
    assert_eq!(
        released,
        [(3, ReleaseReason::Destroyed)],
        "the host-unbound binding is not reported again"
    );
}

#[test]
fn sd4_dropping_a_delegate_without_managed_bindings_does_not_call_the_hook() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let _ = on_hit.add_lambda(|_| {});
    let managed = on_hit.bind_managed(Some(recording_thunk), context());
    assert!(on_hit.unbind_managed(managed));
    let released = with_recording_hook(|| drop(on_hit));
    assert!(released.is_empty());
}

#[test]
fn sd4_clear_hands_managed_bindings_to_the_hook() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let _ = on_hit.bind_managed(Some(recording_thunk), context());
    let _ = on_hit.bind_managed(Some(recording_thunk), context());
    let released = with_recording_hook(|| on_hit.clear());
    assert_eq!(released, [(2, ReleaseReason::Cleared)]);
    let released = with_recording_hook(|| drop(on_hit));
    assert!(released.is_empty(), "nothing is released twice");
}

#[test]
fn sd6_reflection_reports_payloads_and_component_properties() {
    use lumina::reflect::{self, FieldType, PropertyFlags};
    let hit = reflect::PayloadInfo::find("Hit").unwrap();
    assert_eq!((hit.size, hit.align), (16, 8));
    let fields: Vec<_> = hit
        .fields
        .iter()
        .map(|f| (f.name, f.ty, f.offset, f.size))
        .collect();
    assert_eq!(
        fields,
        [
            ("damage", FieldType::F32, 0, 4),
            ("entity", FieldType::U64, 8, 8)
        ]
    );
    let target = reflect::ComponentInfo::find("Target").unwrap();
    assert_eq!(target.size, size_of::<Target>());
    let names: Vec<_> = target.properties.iter().map(|p| p.name).collect();
    assert_eq!(names, ["on_hit", "on_destroyed"], "only #[property] fields");
    let on_hit = target.property("on_hit").unwrap();
    assert_eq!(on_hit.category, "Events");
    assert_eq!(on_hit.flags, PropertyFlags::EDITABLE);
    assert!(std::ptr::eq(on_hit.payload, hit));
    assert_eq!(on_hit.offset, std::mem::offset_of!(Target, on_hit));
    let on_destroyed = target.property("on_destroyed").unwrap();
    assert_eq!(on_destroyed.category, "Default");
    assert_eq!(on_destroyed.flags, PropertyFlags::default());
    assert!(on_destroyed.payload.is_void());
}

#[test]
fn sd6_types_register_themselves_at_link_time_with_unique_names() {
    use lumina::reflect;
    let payloads: Vec<_> = reflect::PayloadInfo::all().map(|p| p.name).collect();
    assert!(payloads.contains(&"Hit") && payloads.contains(&"void"));
    let components: Vec<_> = reflect::ComponentInfo::all().map(|c| c.name).collect();
    assert_eq!(components, ["Target"]);
    assert!(reflect::duplicate_names().is_empty());
}

#[test]
fn sd4_without_a_destroyed_hook_dropped_managed_bindings_are_reported_not_silent() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let line = line!() + 1;
    let _ = on_hit.bind_managed(Some(recording_thunk), context());
    let _ = on_hit.bind_managed(Some(recording_thunk), context());
    let _turn = HOOK_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let previous = set_destroyed_hook(None);
    let ((), report) = support::capture_tracing(|| drop(on_hit));
    set_destroyed_hook(previous);
    for bound in [line, line + 1] {
        assert!(
            report.contains(&format!("tests/script_delegates.rs:{bound}:")),
            "B5: the log names each binding's bind site ({bound}): {report}"
        );
    }
    assert!(report.contains("ERROR"), "{report}");
    assert!(report.contains("no destroyed hook installed"), "{report}");
    assert!(report.contains("count=2"), "{report}");
    assert!(report.contains("payload=\"Hit\""), "{report}");
}

#[test]
fn sd2_a_refused_bind_is_logged_with_its_reason() {
    let on_hit = ScriptDelegate::<Hit>::new();
    let (id, report) = support::capture_tracing(|| on_hit.bind_managed(None, context()));
    assert_eq!(id, 0);
    assert!(
        report.contains("bind_managed refused: the managed thunk is null"),
        "{report}"
    );
}

#[test]
fn m13_4_clear_releases_each_managed_binding_once_even_if_a_native_drop_unbinds_it() {
    // A native listener's capture unbinds the managed binding when the clear drops it. Before
    // the fix the clear had listed the binding first, so the host was told to release a binding
    // that had just been unbound (and released by the host itself): twice.
    struct UnbindOnDrop(Rc<ScriptDelegate<Hit>>, Rc<Cell<u64>>);
    impl Drop for UnbindOnDrop {
        fn drop(&mut self) {
            log(format!("unbind {}", self.0.unbind_managed(self.1.get())));
        }
    }
    for during_broadcast in [false, true] {
        let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
        let id = Rc::new(Cell::new(0));
        let guard = UnbindOnDrop(Rc::clone(&on_hit), Rc::clone(&id));
        let inner = Rc::clone(&on_hit);
        let _ = on_hit.add_lambda(move |_| {
            let _ = &guard;
            if during_broadcast {
                inner.clear();
            }
        });
        id.set(on_hit.bind_managed(Some(recording_thunk), context()));
        let released = with_recording_hook(|| {
            if during_broadcast {
                on_hit.broadcast(&hit());
            } else {
                on_hit.clear();
            }
        });
        assert_eq!(take_log(), ["unbind false"], "already removed by the clear");
        assert_eq!(released, [(1, ReleaseReason::Cleared)], "released once");
        assert!(!on_hit.is_bound());
    }
}

#[test]
fn m13_m4_a_managed_thunk_that_clears_keeps_its_context_until_its_call_returns() {
    // The release hook frees a binding's GC handle: for the binding whose thunk is running (it
    // cleared the delegate), that must wait until its call returns (M4: it finishes safely).
    extern "C" fn logging_hook(
        _: *const ScriptDelegateBase,
        _: *const ManagedBinding,
        count: usize,
        _: ReleaseReason,
    ) {
        log(format!("released {count}"));
    }
    let _turn = HOOK_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let previous = set_destroyed_hook(Some(logging_hook));
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    let inner = Rc::clone(&on_hit);
    let clearing = context_with(Some(Rc::new(move || {
        inner.clear();
        log("thunk done");
    })));
    let _ = on_hit.bind_managed(Some(recording_thunk), clearing);
    let other = context();
    let _ = on_hit.bind_managed(Some(recording_thunk), other);
    on_hit.broadcast(&hit());
    set_destroyed_hook(previous);
    // A clear during a broadcast only marks: both bindings are released when the broadcast
    // ends (M4), so the clearing thunk's context outlives its call (R4: once each).
    assert_eq!(
        take_log(),
        [
            managed(clearing),
            "thunk done".to_string(),
            "released 1".to_string(),
            "released 1".to_string()
        ]
    );
    assert!(!on_hit.is_bound());
}

#[test]
fn m13_the_release_hook_at_the_end_of_a_broadcast_may_re_enter_the_delegate() {
    // The deferred release runs the host's hook (user code) once the outermost broadcast ends:
    // the hook may bind again to the delegate it was called for, and that binding stays.
    thread_local!(static TARGET: Cell<*const ScriptDelegateBase> = const { Cell::new(std::ptr::null()) });
    extern "C" fn rebinding_hook(
        delegate: *const ScriptDelegateBase,
        _: *const ManagedBinding,
        count: usize,
        _: ReleaseReason,
    ) {
        log(format!("released {count}"));
        if TARGET.with(Cell::get) == delegate {
            // SAFETY: the test's delegate is alive for the whole broadcast and this hook.
            let base = unsafe { &*delegate };
            log(format!(
                "rebound {}",
                base.bind_managed(Some(recording_thunk), context()) != 0
            ));
        }
    }
    let _turn = HOOK_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let previous = set_destroyed_hook(Some(rebinding_hook));
    let on_hit = Rc::new(ScriptDelegate::<Hit>::new());
    TARGET.with(|t| t.set(std::ptr::from_ref(on_hit.base())));
    let inner = Rc::clone(&on_hit);
    let clearing = context_with(Some(Rc::new(move || inner.clear())));
    let _ = on_hit.bind_managed(Some(recording_thunk), clearing);
    on_hit.broadcast(&hit());
    assert_eq!(
        take_log(),
        [
            managed(clearing),
            "released 1".to_string(),
            "rebound true".to_string()
        ]
    );
    assert_eq!(
        on_hit.managed_len(),
        1,
        "the binding made by the hook stays"
    );
    // Outside a broadcast the hook runs at once; without a target it only logs.
    TARGET.with(|t| t.set(std::ptr::null()));
    on_hit.clear();
    set_destroyed_hook(previous);
    assert_eq!(take_log(), ["released 1"]);
    assert!(!on_hit.is_bound());
}
