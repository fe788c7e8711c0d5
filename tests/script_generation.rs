//! Script generations (rule SD8), from Rust: unloading a generation releases every managed
//! binding made in it, in every script delegate, through the release hook, exactly once; none is
//! called afterwards; other generations' bindings and native listeners keep working. The C# host
//! test (`tests/csharp_host.rs`) does the same with Mono AppDomains.

use lumina::script_delegate::{
    ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
};
use lumina::{ScriptDelegate, script_delegate, script_generation};
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

#[path = "support/child.rs"]
mod child;

/// A payload.
#[script_delegate]
pub struct Damage {
    /// How much.
    pub amount: u32,
}

thread_local! {
    /// Contexts of the thunks that ran, in order.
    static CALLS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// (binding id, context, reason) of every release.
    static RELEASED: RefCell<Vec<(u64, usize, u32)>> = const { RefCell::new(Vec::new()) };
    /// Called by the thunk of context 99, during a broadcast.
    static DURING: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

extern "C" fn thunk(context: *mut c_void, _payload: *const c_void) {
    CALLS.with_borrow_mut(|calls| calls.push(context.addr()));
    if context.addr() == 99 {
        DURING.with_borrow(|during| during.as_ref().map(|f| f()));
    }
}

extern "C" fn release_hook(
    _delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
    let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
    RELEASED.with_borrow_mut(|released| {
        released.extend(
            bindings
                .iter()
                .map(|binding| (binding.id, binding.context.addr(), reason as u32)),
        );
    });
}

/// The release hook is process-wide: one test at a time.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    set_destroyed_hook(Some(release_hook));
    CALLS.with_borrow_mut(Vec::clear);
    RELEASED.with_borrow_mut(Vec::clear);
    guard
}

fn bind(delegate: &ScriptDelegateBase, context: usize) -> u64 {
    let id = delegate.bind_managed(Some(thunk), std::ptr::without_provenance_mut(context));
    assert_ne!(id, 0);
    id
}

fn calls() -> Vec<usize> {
    CALLS.with_borrow_mut(std::mem::take)
}

fn released() -> Vec<(u64, usize, u32)> {
    RELEASED.with_borrow_mut(std::mem::take)
}

const UNLOADED: u32 = ReleaseReason::GenerationUnloaded as u32;

#[test]
fn sd8_unloading_a_generation_releases_its_bindings_once_in_every_delegate() {
    let _guard = exclusive();
    let on_hit: ScriptDelegate<Damage> = ScriptDelegate::new();
    let on_died: ScriptDelegate<()> = ScriptDelegate::new();
    let native = std::rc::Rc::new(std::cell::Cell::new(0));
    let sink = native.clone();
    let _native = on_hit.add_lambda(move |damage| sink.set(sink.get() + damage.amount));

    let before = bind(&on_hit, 1); // made before any generation: the host's own
    let first = script_generation::begin();
    let a = bind(&on_hit, 11);
    let b = bind(&on_died, 12);
    let c = bind(&on_hit, 13);
    let unbound = bind(&on_died, 14);
    assert!(on_died.unbind_managed(unbound)); // the host released this one itself
    on_hit.broadcast(&Damage { amount: 2 });
    on_died.broadcast(&());
    assert_eq!(calls(), [1, 11, 13, 12]);

    assert_eq!(script_generation::unload(first), Some(3));
    let mut got = released();
    got.sort_unstable();
    assert_eq!(
        got,
        [(a, 11, UNLOADED), (b, 12, UNLOADED), (c, 13, UNLOADED)]
    );
    on_hit.broadcast(&Damage { amount: 2 });
    on_died.broadcast(&());
    assert_eq!(calls(), [1], "no binding of the unloaded generation runs");
    assert_eq!(
        native.get(),
        4,
        "native listeners are not part of a generation"
    );
    assert!(!on_hit.unbind_managed(a));
    assert_eq!(script_generation::unload(first), None, "exactly once");
    assert!(released().is_empty());

    // The next generation binds and runs.
    let second = script_generation::begin();
    let d = bind(&on_died, 21);
    on_died.broadcast(&());
    assert_eq!(calls(), [21]);
    assert_eq!(script_generation::unload(second), Some(1));
    assert_eq!(released(), [(d, 21, UNLOADED)]);

    // What is left goes with its delegate, once.
    drop(on_hit);
    drop(on_died);
    assert_eq!(released(), [(before, 1, ReleaseReason::Destroyed as u32)]);
}

#[test]
fn sd8_unloading_during_a_broadcast_stops_the_generation_there() {
    let _guard = exclusive();
    let on_hit: ScriptDelegate<Damage> = ScriptDelegate::new();
    let host = script_generation::begin();
    let _unloader = bind(&on_hit, 99);
    let scripts = script_generation::begin();
    let later = bind(&on_hit, 31);
    DURING.with_borrow_mut(|during| {
        *during = Some(Box::new(move || {
            assert_eq!(script_generation::unload(scripts), Some(1));
        }));
    });
    on_hit.broadcast(&Damage { amount: 1 });
    assert_eq!(calls(), [99], "the unloaded binding was not reached");
    assert_eq!(released(), [(later, 31, UNLOADED)]);
    DURING.with_borrow_mut(|during| *during = None);
    assert_eq!(script_generation::unload(host), Some(1));
    assert_eq!(released().len(), 1);
    drop(on_hit);
    assert!(released().is_empty(), "nothing is released twice");
}

#[test]
fn sd8_a_dropped_delegate_releases_once_and_the_generation_forgets_it() {
    let _guard = exclusive();
    let generation = script_generation::begin();
    let on_hit: ScriptDelegate<Damage> = ScriptDelegate::new();
    let id = bind(&on_hit, 41);
    drop(on_hit);
    assert_eq!(released(), [(id, 41, ReleaseReason::Destroyed as u32)]);
    assert_eq!(script_generation::unload(generation), Some(0));
    assert!(released().is_empty());
}

/// A native listener's capture that, when it is dropped, does what a game's `Drop` may do with
/// script generations: bind a managed listener (in the current generation), unload one, begin
/// one.
struct UsesGenerations {
    target: ScriptDelegate<()>,
    generation: u64,
}

/// Set when a [`UsesGenerations`] capture's `Drop` ran to its end.
static USED_AT_EXIT: AtomicBool = AtomicBool::new(false);

impl Drop for UsesGenerations {
    fn drop(&mut self) {
        let _ = self
            .target
            .bind_managed(Some(thunk), std::ptr::without_provenance_mut(7));
        let _ = script_generation::unload(self.generation);
        let next = script_generation::begin();
        let _ = self
            .target
            .bind_managed(Some(thunk), std::ptr::without_provenance_mut(8));
        let _ = script_generation::unload(next);
        USED_AT_EXIT.store(true, Ordering::SeqCst);
    }
}

thread_local! {
    /// A script delegate the game keeps in a thread local (dropped when its thread exits).
    static KEPT: RefCell<Option<ScriptDelegate<()>>> = const { RefCell::new(None) };
}

/// R2, SD8: a script delegate kept in a thread local is dropped when its thread exits, after
/// the runtime's thread locals that were first used later (thread locals are destroyed in the
/// reverse order). A capture's `Drop` it runs then may bind a managed listener in a
/// generation, unload one, or begin one. Without it, the generations' registry was reached
/// with `with`, which panicked ("cannot access a Thread Local Storage value during or after
/// destruction") inside a thread local's destructor: the process aborted.
#[test]
fn r2_sd8_generations_used_while_the_thread_exits_do_not_abort() {
    child::in_child_process(
        "r2_sd8_generations_used_while_the_thread_exits_do_not_abort",
        || {
            std::thread::spawn(|| {
                // Used first, so destroyed last.
                KEPT.with_borrow_mut(|slot| *slot = None);
                // The runtime's generation registry: first used now, destroyed before `KEPT`.
                let generation = script_generation::begin();
                let capture = UsesGenerations {
                    target: ScriptDelegate::new(),
                    generation,
                };
                let kept: ScriptDelegate<()> = ScriptDelegate::new();
                let _ = kept.add_lambda(move |()| {
                    let _ = &capture;
                });
                KEPT.with_borrow_mut(|slot| *slot = Some(kept));
            })
            .join()
            .expect("the thread exits normally");
            assert!(
                USED_AT_EXIT.load(Ordering::SeqCst),
                "the capture's Drop ran to its end"
            );
        },
    );
}
