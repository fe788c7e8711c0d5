use super::{Loaded, MODULES, ModuleEntry, ModuleId, RawStr, track};
use crate::bus::{MessageBus, TagKey};
use crate::core_delegates::ModuleInfo;
use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;

/// A payload whose type counts as the fake module's; says when it is dropped.
struct Loot(Rc<Cell<bool>>, #[allow(dead_code)] u32);

impl Drop for Loot {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// MB6, MB4: a message the module posts into a queue the engine created, and a retained
/// message it sends into the slot the engine's filled, carry a type whose code is the
/// engine's (here `Loot`, as `Box<dyn Fn()>` in a real module): only the running code says
/// they are the module's. Recorded when they enter the store, the module's unload drops
/// exactly them; the engine's stay. The mirror case: the engine's retained message
/// replacing the module's is not dropped by the unload. Without the records made on entry
/// (the queue's record was made when the engine created it; the slot was reused in place
/// with no record), the unload dropped nothing and the engine delivered (and replayed) the
/// module's values after the unload.
#[test]
fn mb6_a_modules_posted_and_retained_values_in_engine_stores_go_with_its_unload() {
    const FAKE: ModuleId = ModuleId(u64::MAX - 49);
    static POSTED: TagKey<Loot> = TagKey::new("MB6Running.Posted", false);
    static KEPT: TagKey<Loot> = TagKey::new("MB6Running.Kept", true);
    let _game = crate::main_thread::GameThreadScope::enter();
    let bus: MessageBus<u32> = MessageBus::new();
    let flag = || Rc::new(Cell::new(false));
    let (engine_posted, module_posted, engine_kept, module_kept) = (flag(), flag(), flag(), flag());
    // A module is loaded (a range no code word falls in): `Loot`'s code is no module's.
    #[cfg(not(miri))]
    track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
    #[cfg(miri)]
    track::add_range(FAKE.0, 0, 1);
    bus.post(&POSTED, Loot(Rc::clone(&engine_posted), 1));
    bus.send(&KEPT, Loot(flag(), 0));
    {
        // The module's code runs (its task, say): what it posts and retains is its own.
        let _module_code = track::enter(FAKE.0, track::Running::Task);
        bus.post(&POSTED, Loot(Rc::clone(&module_posted), 2));
        bus.send(&KEPT, Loot(Rc::clone(&module_kept), 3));
    }
    assert_eq!(track::count(FAKE.0), 2, "both recorded on entry");
    let _ = super::release_values(FAKE);
    assert!(
        module_posted.get() && module_kept.get(),
        "the module's went"
    );
    assert!(!engine_posted.get(), "the engine's message stays");
    assert_eq!(bus.posted(), 1);
    assert!(bus.retained(&KEPT).is_none());
    assert_eq!(bus.deliver_posted(), 1);
    assert!(engine_posted.get(), "delivered, then dropped");
    // The mirror case: the module's retained message replaced by the engine's.
    {
        let _module_code = track::enter(FAKE.0, track::Running::Task);
        bus.send(&KEPT, Loot(flag(), 4));
    }
    assert_eq!(track::count(FAKE.0), 1);
    bus.send(&KEPT, Loot(Rc::clone(&engine_kept), 5));
    assert_eq!(
        track::count(FAKE.0),
        0,
        "the engine's value is not the module's"
    );
    let _ = super::release_values(FAKE);
    assert!(
        !engine_kept.get(),
        "the unload left the engine's retained message"
    );
    assert!(bus.retained(&KEPT).is_some());
    track::remove_range(FAKE.0);
}

unsafe extern "C" fn shut_down(_: *const super::EntryReport) -> bool {
    true
}

static ENTRY: ModuleEntry = ModuleEntry {
    abi_version: ModuleEntry::ABI_VERSION,
    name: RawStr::new("fake"),
    lumina_version: RawStr::new(""),
    rustc_version: RawStr::new(""),
    runtime_marker: std::ptr::null(),
    start_up: shut_down,
    shut_down,
};

fn loaded(id: ModuleId) -> bool {
    MODULES.with_borrow(|modules| modules.iter().any(|m| m.id == id))
}

/// R3 (and MB4, R5): an unload runs to its end when a `Drop` it runs panics, then resumes
/// that panic. Without it, the first panicking `Drop` stopped the unload halfway: the
/// module's other subscriptions stayed (its code went on running after its shut-down), and
/// the module stayed "being unloaded" for good.
#[test]
fn r3_an_unload_completes_when_a_drop_it_runs_panics_then_resumes_the_panic() {
    use crate::drops::panic_text;
    use crate::invocation::InvocationList;
    use std::any::Any;

    const FAKE: ModuleId = ModuleId(u64::MAX - 44);
    /// A module's capture whose `Drop` panics.
    struct Loud;
    impl Drop for Loud {
        fn drop(&mut self) {
            panic!("a module's capture panicked");
        }
    }
    /// A module's capture that counts its drops.
    struct Counted(Rc<Cell<usize>>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    let _game = crate::main_thread::GameThreadScope::enter();
    let dropped = Rc::new(Cell::new(0));
    let loud: Rc<dyn Any> = Rc::new(Loud);
    let counted: Rc<dyn Any> = Rc::new(Counted(Rc::clone(&dropped)));
    // Attribute exactly these two types' code to the fake module, after a placeholder range
    // no code word falls in (see `track`'s `r1_mb4_an_unload_whose_drop_frees_...`: a range
    // at 0 would claim the values of tests running in parallel; under Miri, one test at a
    // time, the zero word as before).
    #[cfg(not(miri))]
    track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
    #[cfg(miri)]
    track::add_range(FAKE.0, 0, 1);
    for it in [&loud, &counted] {
        let vtable = track::code_of(&**it).expect("a module is loaded").vtable();
        track::add_range(FAKE.0, vtable, vtable + 1);
    }
    let list: InvocationList<Rc<dyn Any>> = InvocationList::new();
    // Recorded first, so removed first.
    let _ = list.add(loud);
    let _ = list.add(counted);
    assert_eq!(track::count(FAKE.0), 2);
    MODULES.with_borrow_mut(|modules| {
        modules.push(Loaded {
            id: FAKE,
            info: ModuleInfo::new("fake"),
            // No such mapping: the unload leaves the (not really loaded) library alone.
            mapped: PathBuf::from("/nonexistent/r3-unload-fake.so"),
            modified: None,
            entry: &ENTRY,
            library: libloading::os::unix::Library::this().into(),
            unloading: false,
            ranges: Vec::new(),
        });
    });
    let heard = Rc::new(Cell::new(false));
    let sink = Rc::clone(&heard);
    let _unloaded = crate::core_delegates::CoreDelegates::get()
        .on_module_unloaded()
        .add_lambda(move || sink.set(true));
    let payload = std::panic::catch_unwind(|| super::unload(FAKE))
        .expect_err("the panic of the Drop resumes");
    assert_eq!(panic_text(&*payload), "a module's capture panicked");
    assert!(!loaded(FAKE), "the module is gone");
    assert!(
        list.is_empty(),
        "every subscription of the module was removed"
    );
    assert_eq!(dropped.get(), 1);
    assert_eq!(track::count(FAKE.0), 0);
    assert!(heard.get(), "on_module_unloaded fired");
    track::remove_range(FAKE.0);
}

/// MB6, M4: a subscription of the module that its unload finds in a list that is
/// broadcasting can only be marked removed: its callable stays in its slot until that
/// broadcast ends (the list's settle drops it then). A `Drop` the unload ran subscribed the
/// module's code to that list. Its record stays, marked left, so the module counts as still
/// referred to (a debug build's `unmap` refuses) until the settle dropped the callable, and
/// goes then.
#[test]
fn r5_mb6_a_module_callable_whose_removal_waits_for_a_broadcast_is_still_referenced_until_it_ends()
{
    use crate::invocation::InvocationList;
    use std::any::Any;

    const FAKE: ModuleId = ModuleId(u64::MAX - 45);
    type Anys = InvocationList<Rc<dyn Any>>;
    /// A module's capture that counts its drops.
    struct Counted(Rc<Cell<usize>>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    /// A module's capture whose `Drop` subscribes more of the module's code to `list`.
    struct Respawn {
        list: Rc<Anys>,
        spawn: Option<Rc<dyn Any>>,
    }
    impl Drop for Respawn {
        fn drop(&mut self) {
            if let Some(spawn) = self.spawn.take() {
                let _ = self.list.add(spawn);
            }
        }
    }
    let _game = crate::main_thread::GameThreadScope::enter();
    let dropped = Rc::new(Cell::new(0));
    let host: Rc<Anys> = Rc::default();
    let module_list: Anys = InvocationList::new();
    // Attribute exactly these two types' code to the fake module (see
    // `r3_an_unload_completes_when_a_drop_it_runs_panics_then_resumes_the_panic`).
    #[cfg(not(miri))]
    track::add_range(FAKE.0, usize::MAX - 1, usize::MAX);
    #[cfg(miri)]
    track::add_range(FAKE.0, 0, 1);
    // Made beforehand, so that its vtable is the one attributed (Miri does not keep one
    // vtable per type).
    let spawn: Rc<dyn Any> = Rc::new(Counted(Rc::clone(&dropped)));
    let vtable = track::code_of(&*spawn)
        .expect("a module is loaded")
        .vtable();
    track::add_range(FAKE.0, vtable, vtable + 1);
    let respawn: Rc<dyn Any> = Rc::new(Respawn {
        list: Rc::clone(&host),
        spawn: Some(spawn),
    });
    let vtable = track::code_of(&*respawn)
        .expect("a module is loaded")
        .vtable();
    track::add_range(FAKE.0, vtable, vtable + 1);
    let _ = module_list.add(respawn);
    // The host's own subscriber: no code of the module (one word, not 0: the placeholder
    // range under Miri claims the zero word).
    let _ = host.add(Rc::new(7_usize) as Rc<dyn Any>);
    assert_eq!(track::count(FAKE.0), 1);
    let inside = Rc::new(Cell::new(None));
    let seen = Rc::clone(&inside);
    host.broadcast_with((), |_, ()| {
        let swept = super::release_values(FAKE);
        seen.set(Some((track::count(FAKE.0), swept, dropped.get())));
    });
    assert_eq!(
        inside.get(),
        Some((1, 0, 0)),
        "the callable left in the broadcasting list is recorded as left (it still refers to \
         the module), and is not dropped while the list broadcasts"
    );
    assert_eq!(dropped.get(), 1, "the broadcast's end dropped it");
    assert_eq!(track::count(FAKE.0), 0);
    track::remove_range(FAKE.0);
}

/// MB4, R5, R4: a game module's code may bind a managed listener to a script delegate with
/// an `extern "C" fn` of its own (`bind_managed` is a safe call), and may install the
/// release hook with `set_destroyed_hook`. Its unload must remove that binding (handing it
/// to the hook once, as `Removed`) and uninstall that hook, while the library is mapped.
/// Without it, the binding stayed (a managed listener counted as no module's code), and the
/// next broadcast called the thunk in the unmapped library; the hook stayed installed, and
/// the next release called it there. (Not under Miri, which cannot `dlopen`: no `r5_` in
/// its name.)
#[test]
fn mb4_a_managed_thunk_and_a_release_hook_of_the_module_go_before_the_unmap() {
    use crate::script_delegate::{
        DestroyedHook, ManagedBinding, ManagedThunk, ReleaseReason, ScriptDelegate,
        ScriptDelegateBase, destroyed_hook, set_destroyed_hook,
    };
    use std::ffi::c_void;

    const FAKE: ModuleId = ModuleId(u64::MAX - 46);
    thread_local! {
        static MODULE_CALLS: Cell<usize> = const { Cell::new(0) };
        static ENGINE_CALLS: Cell<usize> = const { Cell::new(0) };
        static RELEASED: std::cell::RefCell<Vec<(u64, ReleaseReason)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    /// The module's thunk.
    extern "C" fn module_thunk(_: *mut c_void, _: *const c_void) {
        MODULE_CALLS.set(MODULE_CALLS.get() + 1);
    }
    /// The engine's (the host's) thunk.
    extern "C" fn engine_thunk(_: *mut c_void, _: *const c_void) {
        ENGINE_CALLS.set(ENGINE_CALLS.get() + 1);
    }
    /// The module's release hook.
    extern "C" fn module_hook(
        _: *const ScriptDelegateBase,
        bindings: *const ManagedBinding,
        count: usize,
        reason: ReleaseReason,
    ) {
        // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
        let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
        RELEASED.with_borrow_mut(|released| {
            released.extend(bindings.iter().map(|binding| (binding.id, reason)));
        });
    }
    let _game = crate::main_thread::GameThreadScope::enter();
    let _lock = crate::ffi::tests::HOOK_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Each made into a pointer once (Miri gives every reification of a function an address
    // of its own): the values bound and installed are the ones attributed.
    let module_thunk: ManagedThunk = module_thunk;
    let module_hook: DestroyedHook = module_hook;
    let previous = set_destroyed_hook(Some(module_hook));
    // Attribute exactly the module's thunk and hook to the fake module.
    for code in [
        (module_thunk as *const ()).addr(),
        (module_hook as *const ()).addr(),
    ] {
        track::add_range(FAKE.0, code, code + 1);
    }
    let delegate: ScriptDelegate<()> = ScriptDelegate::new();
    let module_id = delegate.bind_managed(Some(module_thunk), std::ptr::null_mut());
    let engine_id = delegate.bind_managed(Some(engine_thunk), std::ptr::null_mut());
    assert_ne!(module_id, 0);
    assert_eq!(
        track::count(FAKE.0),
        1,
        "the module's managed binding is the module's"
    );
    MODULES.with_borrow_mut(|modules| {
        modules.push(Loaded {
            id: FAKE,
            info: ModuleInfo::new("fake"),
            // No such mapping: the unload leaves the (not really loaded) library alone.
            mapped: PathBuf::from("/nonexistent/mb4-managed-fake.so"),
            modified: None,
            entry: &ENTRY,
            library: libloading::os::unix::Library::this().into(),
            unloading: false,
            ranges: Vec::new(),
        });
    });
    let unloaded = super::unload(FAKE);
    let hook_after = destroyed_hook();
    set_destroyed_hook(previous);
    track::remove_range(FAKE.0);
    assert!(unloaded.is_ok(), "{unloaded:?}");
    assert_eq!(
        delegate
            .managed_bindings()
            .iter()
            .map(|binding| binding.id)
            .collect::<Vec<_>>(),
        [engine_id],
        "the unload removed the module's managed binding, and only it"
    );
    assert_eq!(
        RELEASED.with_borrow_mut(std::mem::take),
        [(module_id, ReleaseReason::Removed)],
        "released once, while the module's hook was still mapped, with its reason"
    );
    assert!(
        hook_after.is_none(),
        "the module's release hook was uninstalled by its unload"
    );
    delegate.broadcast(&());
    assert_eq!(MODULE_CALLS.get(), 0, "no code of the module runs after");
    assert_eq!(ENGINE_CALLS.get(), 1);
    assert!(!delegate.unbind_managed(module_id));
    assert!(delegate.unbind_managed(engine_id));
    assert_eq!(track::count(FAKE.0), 0);
}
/// MB4, R5, R4: a game module's code may listen on a message bus with a managed listener
/// (`listen_managed` is a safe call) whose thunk is an `extern "C" fn` of its own. The
/// listener's callable is the runtime's closure (its vtable is no module's), so its unload
/// must find it by the thunk and remove it (handing it to the host's hook once, as
/// `Removed`) while the library is mapped. Without it, the next send called the thunk in
/// the unmapped library.
#[test]
fn mb4_a_bus_managed_listener_whose_thunk_is_the_modules_goes_before_the_unmap() {
    use crate::script_delegate::{
        ManagedBinding, ReleaseReason, ScriptDelegateBase, set_destroyed_hook,
    };
    use std::ffi::c_void;

    const FAKE: ModuleId = ModuleId(u64::MAX - 79);
    static HIT: TagKey<u32> = TagKey::new("MB4Managed.Hit", false);
    thread_local! {
        static MODULE_CALLS: Cell<usize> = const { Cell::new(0) };
        static ENGINE_CALLS: Cell<usize> = const { Cell::new(0) };
        static RELEASED: std::cell::RefCell<Vec<(u64, ReleaseReason)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    /// The module's thunk.
    extern "C" fn module_thunk(_: *mut c_void, _: *const c_void) {
        MODULE_CALLS.set(MODULE_CALLS.get() + 1);
    }
    /// The engine's (the host's) thunk.
    extern "C" fn engine_thunk(_: *mut c_void, _: *const c_void) {
        ENGINE_CALLS.set(ENGINE_CALLS.get() + 1);
    }
    /// The host's release hook (the engine's code).
    extern "C" fn engine_hook(
        _: *const ScriptDelegateBase,
        bindings: *const ManagedBinding,
        count: usize,
        reason: ReleaseReason,
    ) {
        // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
        let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
        RELEASED.with_borrow_mut(|released| {
            released.extend(bindings.iter().map(|binding| (binding.id, reason)));
        });
    }
    let _game = crate::main_thread::GameThreadScope::enter();
    let _lock = crate::ffi::tests::HOOK_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let previous = set_destroyed_hook(Some(engine_hook));
    // Reified once: the address attributed to the module is the one the bus keeps.
    let module_thunk: crate::script_delegate::ManagedThunk = module_thunk;
    let code = (module_thunk as *const ()).addr();
    track::add_range(FAKE.0, code, code + 1);
    let bus: MessageBus<u64> = MessageBus::new();
    let listen = |thunk| {
        bus.listen_managed(HIT.tag(), true, None, Some(thunk), std::ptr::null_mut())
            .expect("a partial managed listener")
    };
    let module_id = listen(module_thunk);
    let engine_id = listen(engine_thunk);
    assert_eq!(
        track::count(FAKE.0),
        1,
        "the module's managed listener is the module's"
    );
    MODULES.with_borrow_mut(|modules| {
        modules.push(Loaded {
            id: FAKE,
            info: ModuleInfo::new("fake"),
            // No such mapping: the unload leaves the (not really loaded) library alone.
            mapped: PathBuf::from("/nonexistent/mb4-bus-managed-fake.so"),
            modified: None,
            entry: &ENTRY,
            library: libloading::os::unix::Library::this().into(),
            unloading: false,
            ranges: Vec::new(),
        });
    });
    let unloaded = super::unload(FAKE);
    set_destroyed_hook(previous);
    track::remove_range(FAKE.0);
    assert!(unloaded.is_ok(), "{unloaded:?}");
    assert_eq!(
        bus.managed_bindings()
            .iter()
            .map(|binding| binding.id)
            .collect::<Vec<_>>(),
        [engine_id],
        "the unload removed the module's managed listener, and only it"
    );
    assert_eq!(
        RELEASED.with_borrow_mut(std::mem::take),
        [(module_id, ReleaseReason::Removed)],
        "released once, with its reason"
    );
    bus.send(&HIT, 7);
    assert_eq!(MODULE_CALLS.get(), 0, "no code of the module runs after");
    assert_eq!(ENGINE_CALLS.get(), 1);
    assert!(!bus.remove_managed(module_id));
    assert!(bus.remove_managed(engine_id));
    assert_eq!(track::count(FAKE.0), 0);
}
/// MB4, R5: a [`NextBroadcast`](crate::NextBroadcast) polled by a game module's own
/// executor keeps the module's `Waker` inside the subscriber the runtime made (whose vtable
/// is the runtime's, so the delegate's list records no module code for it). The module's
/// unload must drop that waker while the library is mapped; without it the next broadcast
/// woke it in the unmapped library.
#[test]
fn mb4_a_next_broadcast_waker_of_the_module_is_dropped_before_the_unmap() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    const FAKE: ModuleId = ModuleId(u64::MAX - 80);
    /// The waker of the module's executor.
    struct ModuleWake(Arc<AtomicUsize>);
    impl Wake for ModuleWake {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let _game = crate::main_thread::GameThreadScope::enter();
    let delegate: crate::multicast::MulticastDelegate<dyn Fn(u32)> =
        crate::multicast::MulticastDelegate::new();
    let wakes = Arc::new(AtomicUsize::new(0));
    let wake = Arc::new(ModuleWake(Arc::clone(&wakes)));
    let alive = Arc::downgrade(&wake);
    let waker = Waker::from(wake);
    let vtable = std::ptr::from_ref(waker.vtable()).addr();
    track::add_range(FAKE.0, vtable, vtable + 1);
    let mut next = Box::pin(delegate.next());
    assert!(
        next.as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    drop(waker);
    assert_eq!(
        track::count(FAKE.0),
        1,
        "the waker of the module's code is recorded"
    );
    MODULES.with_borrow_mut(|modules| {
        modules.push(Loaded {
            id: FAKE,
            info: ModuleInfo::new("fake"),
            // No such mapping: the unload leaves the (not really loaded) library alone.
            mapped: PathBuf::from("/nonexistent/mb4-next-waker-fake.so"),
            modified: None,
            entry: &ENTRY,
            library: libloading::os::unix::Library::this().into(),
            unloading: false,
            ranges: Vec::new(),
        });
    });
    let unloaded = super::unload(FAKE);
    track::remove_range(FAKE.0);
    assert!(unloaded.is_ok(), "{unloaded:?}");
    assert!(
        alive.upgrade().is_none(),
        "the unload dropped the module's waker"
    );
    delegate.broadcast(7);
    assert_eq!(wakes.load(Ordering::SeqCst), 0, "never woken after");
    assert_eq!(
        next.as_mut().poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(Ok((7,))),
        "the future still resolves when polled again"
    );
    assert_eq!(track::count(FAKE.0), 0);
}
