//! Soundness of script delegates (rules R1 and R4, with SD4, SD8 and M4): the reproductions of
//! issue 18's D1, D2, D3 and D7. Each binding reaches the host's release hook exactly once, with
//! the reason of the path that removed it, never while its thunk runs, wherever its delegate
//! was moved; a script generation finds its delegates through their heap blocks, never through
//! their (moving) places. Miri runs this file with Stacked and Tree Borrows (`.ci/run`).

use lumina::script_delegate::{
    ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
};
use lumina::{ScriptDelegate, script_generation};
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::{Rc, Weak};

type Action = Option<Box<dyn Fn()>>;

thread_local! {
    /// What the thunk of each context does (context = index).
    static ACTIONS: RefCell<Vec<Rc<dyn Fn()>>> = const { RefCell::new(Vec::new()) };
    /// Contexts whose thunk is running.
    static RUNNING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Contexts whose thunk ran, in order.
    static CALLS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// (id, reason) of every binding the hook received, in order.
    static RELEASED: RefCell<Vec<(u64, ReleaseReason)>> = const { RefCell::new(Vec::new()) };
    /// Contexts released while their thunk ran (must stay empty, M4).
    static RELEASED_RUNNING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Run once by the next hook call (taken out first).
    static ON_RELEASE: RefCell<Action> = const { RefCell::new(None) };
}

extern "C" fn thunk(context: *mut c_void, _payload: *const c_void) {
    let key = context.addr();
    CALLS.with_borrow_mut(|calls| calls.push(key));
    RUNNING.with_borrow_mut(|running| running.push(key));
    let action = ACTIONS.with_borrow(|actions| actions.get(key).cloned());
    if let Some(action) = action {
        action();
    }
    RUNNING.with_borrow_mut(|running| running.retain(|&k| k != key));
}

extern "C" fn hook(
    _delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
    let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
    for binding in bindings {
        let key = binding.context.addr();
        if RUNNING.with_borrow(|running| running.contains(&key)) {
            RELEASED_RUNNING.with_borrow_mut(|r| r.push(key));
        }
        RELEASED.with_borrow_mut(|released| released.push((binding.id, reason)));
    }
    let action = ON_RELEASE.with_borrow_mut(Option::take);
    if let Some(action) = action {
        action();
    }
}

/// Installs the recording hook (the same for every test of this file; records are per thread).
fn setup() {
    set_destroyed_hook(Some(hook));
}

/// A context whose thunk runs `action`.
fn context(action: impl Fn() + 'static) -> *mut c_void {
    ACTIONS.with_borrow_mut(|actions| {
        actions.push(Rc::new(action));
        std::ptr::without_provenance_mut(actions.len() - 1)
    })
}

fn bind(delegate: &ScriptDelegateBase, action: impl Fn() + 'static) -> u64 {
    let id = delegate.bind_managed(Some(thunk), context(action));
    assert_ne!(id, 0);
    id
}

fn released() -> Vec<(u64, ReleaseReason)> {
    RELEASED.with_borrow_mut(std::mem::take)
}

fn calls() -> Vec<usize> {
    CALLS.with_borrow_mut(std::mem::take)
}

fn assert_none_released_while_running() {
    assert!(
        RELEASED_RUNNING.with_borrow(Vec::is_empty),
        "M4: a binding was released while its thunk ran"
    );
}

/// Clears the delegate it refers to when dropped (a native listener's capture).
struct ClearOnDrop(Weak<ScriptDelegate<()>>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        if let Some(delegate) = self.0.upgrade() {
            delegate.clear();
        }
    }
}

/// Adds a native member listener of a new owner (returned) to `delegate`, whose capture clears
/// `delegate` when it is dropped (by remove_all, a prune, or the delegate's own drop).
fn add_clearing_member(delegate: &Rc<ScriptDelegate<()>>) -> Rc<()> {
    let owner = Rc::new(());
    let clears = ClearOnDrop(Rc::downgrade(delegate));
    let _ = delegate.add_member(&owner, move |_, ()| {
        let _ = &clears;
    });
    owner
}

#[test]
fn r1_d1_a_generation_finds_a_delegate_moved_out_of_its_box() {
    setup();
    let generation = script_generation::begin();
    let boxed = Box::new(ScriptDelegate::<()>::new());
    let id = bind(&boxed, || {});
    // A plain Rust move: the old box is freed.
    let moved = {
        let boxed = boxed;
        Box::new(*boxed)
    };
    assert_eq!(script_generation::unload(generation), Some(1));
    assert_eq!(released(), [(id, ReleaseReason::GenerationUnloaded)]);
    moved.broadcast(&());
    assert!(calls().is_empty(), "SD8: an unloaded binding never runs");
    drop(moved);
    assert!(released().is_empty(), "R4: released once");
}

#[test]
fn r1_d1_a_generation_finds_a_delegate_moved_out_by_mem_replace() {
    setup();
    let generation = script_generation::begin();
    let mut slot = Box::new(ScriptDelegate::<()>::new());
    let id = bind(&slot, || {});
    let old = std::mem::replace(&mut *slot, ScriptDelegate::new());
    assert_eq!(
        script_generation::unload(generation),
        Some(1),
        "the moved binding is found where it went"
    );
    assert_eq!(released(), [(id, ReleaseReason::GenerationUnloaded)]);
    old.broadcast(&());
    slot.broadcast(&());
    assert!(calls().is_empty(), "SD8: an unloaded binding never runs");
    drop(old);
    drop(slot);
    assert!(released().is_empty(), "R4: released once");
}

#[test]
fn r1_d1_a_release_hook_that_drops_the_generations_other_delegates() {
    // A host destroying the components its scripts drove, from the release hook of a
    // generation unload: the unload must not read the delegates it dropped.
    thread_local! {
        static COMPONENTS: RefCell<Vec<ScriptDelegate<()>>> = const { RefCell::new(Vec::new()) };
    }
    setup();
    let generation = script_generation::begin();
    let mut ids = Vec::new();
    for _ in 0..8 {
        // Bound here, then moved into a `Vec` that grows (and moves it again).
        let component = ScriptDelegate::<()>::new();
        ids.push(bind(&component, || {}));
        COMPONENTS.with_borrow_mut(|components| components.push(component));
    }
    ON_RELEASE.with_borrow_mut(|action| {
        *action = Some(Box::new(|| {
            let components = COMPONENTS.with_borrow_mut(std::mem::take);
            drop(components);
        }));
    });
    let unloaded = script_generation::unload(generation);
    assert_eq!(
        unloaded,
        Some(1),
        "one delegate released before the rest were dropped"
    );
    let got = released();
    let mut got_ids: Vec<u64> = got.iter().map(|(id, _)| *id).collect();
    got_ids.sort_unstable();
    assert_eq!(got_ids, ids, "R4: every binding released exactly once");
    assert_eq!(got[0].1, ReleaseReason::GenerationUnloaded);
    assert!(
        got[1..]
            .iter()
            .all(|(_, reason)| *reason == ReleaseReason::Destroyed),
        "the dropped delegates released their own: {got:?}"
    );
}

#[test]
fn r4_d2_a_clear_run_by_a_drop_during_remove_all_is_released_once() {
    setup();
    let delegate = Rc::new(ScriptDelegate::<()>::new());
    let id = bind(&delegate, || {});
    let owner = add_clearing_member(&delegate);
    assert_eq!(delegate.remove_all(&owner), 1);
    assert_eq!(
        released(),
        [(id, ReleaseReason::Cleared)],
        "released when the clear (inside remove_all) ends"
    );
    drop(delegate);
    // A delegate made now may sit where the old one was: nothing of the old one reaches it.
    let next = ScriptDelegate::<()>::new();
    let next_id = bind(&next, || {});
    next.broadcast(&());
    drop(next);
    assert_eq!(released(), [(next_id, ReleaseReason::Destroyed)]);
}

#[test]
fn r4_d2_a_clear_run_by_a_prune_is_released_once() {
    setup();
    let delegate = Rc::new(ScriptDelegate::<()>::new());
    let owner = add_clearing_member(&delegate);
    let id = bind(&delegate, || {});
    drop(owner);
    // The count prunes the dead owner's binding; its capture's Drop, which clears, runs when
    // the count ends (nothing is dropped while a walk of the list runs, M4): the binding was
    // live when counted, and is released by that clear.
    assert_eq!(delegate.managed_len(), 1);
    assert_eq!(released(), [(id, ReleaseReason::Cleared)]);
    assert_eq!(delegate.managed_len(), 0);
    drop(delegate);
    assert!(released().is_empty(), "R4: released once");
}

#[test]
fn r4_d3_a_generation_unload_and_a_clear_by_a_dead_owners_drop_release_once() {
    setup();
    let generation = script_generation::begin();
    let delegate = Rc::new(ScriptDelegate::<()>::new());
    let id = bind(&delegate, || {});
    let owner = add_clearing_member(&delegate);
    drop(owner);
    assert_eq!(script_generation::unload(generation), Some(1));
    delegate.broadcast(&());
    drop(delegate);
    assert_eq!(
        released(),
        [(id, ReleaseReason::GenerationUnloaded)],
        "R4: once, with the reason of the path that removed it first"
    );
    assert!(calls().is_empty());
}

#[test]
fn r4_sd8_d7_a_thunk_that_unloads_its_own_generation_keeps_its_context_until_it_returns() {
    setup();
    let generation = script_generation::begin();
    let delegate = ScriptDelegate::<()>::new();
    // What the thunk saw: the unload's result, and how many were released when it returned.
    let seen = Rc::new(RefCell::new(None));
    let sink = Rc::clone(&seen);
    let reloads = bind(&delegate, move || {
        let unloaded = script_generation::unload(generation);
        let during = RELEASED.with_borrow(Vec::len);
        *sink.borrow_mut() = Some((unloaded, during));
    });
    let other = bind(&delegate, || {});
    delegate.broadcast(&());
    assert_eq!(
        *seen.borrow(),
        Some((Some(2), 0)),
        "both removed; released when the broadcast ends (M4)"
    );
    assert_eq!(calls(), [0], "the unloaded binding after it did not run");
    assert_none_released_while_running();
    let mut got = released();
    got.sort_unstable_by_key(|(id, _)| *id);
    assert_eq!(
        got,
        [
            (reloads, ReleaseReason::GenerationUnloaded),
            (other, ReleaseReason::GenerationUnloaded)
        ]
    );
    delegate.broadcast(&());
    drop(delegate);
    assert!(calls().is_empty());
    assert!(released().is_empty(), "R4: released once");
}
