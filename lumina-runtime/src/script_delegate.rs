//! [`ScriptDelegate`]: a reflected multicast event that Rust and a managed (C#) runtime both bind
//! to (rules SD1-SD5).
//!
//! A script delegate carries one blittable payload `P` (a `#[script_delegate]` struct, or `()` for
//! the void form). Rust code binds *native* listeners with the multicast API and handles; a managed
//! host binds *managed* listeners, `(thunk, context)` pairs, with
//! [`bind_managed`](ScriptDelegateBase::bind_managed) (usually through the C ABI in `ffi`).
//!
//! Both kinds live in ONE invocation list (the one behind every mechanism), so the reentrancy contract M1-M8 holds across them
//! as one list (SD3): [`broadcast`](ScriptDelegate::broadcast) walks the list once for native
//! listeners, rewinds the same locked walk and runs the managed ones. A managed listener added while
//! native listeners run was not present when the broadcast started, so it does not run in it; one
//! removed before it is reached does not run; a `clear()` stops everything that follows.
//!
//! ```
//! use lumina::{ScriptDelegate, script_delegate};
//! use std::cell::Cell;
//! use std::rc::Rc;
//!
//! #[script_delegate]
//! pub struct Hit {
//!     pub damage: f32,
//!     pub other: u64,
//! }
//!
//! let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
//! let taken = Rc::new(Cell::new(0.0));
//! let sink = Rc::clone(&taken);
//! let handle = on_hit.add_lambda(move |hit| sink.set(sink.get() + hit.damage));
//! on_hit.broadcast(&Hit { damage: 2.5, other: 7 });
//! assert_eq!(taken.get(), 2.5);
//!
//! // Copies start unbound (SD4): duplicating an entity does not double-fire its events.
//! assert!(!on_hit.clone().is_bound());
//! assert!(on_hit.remove(handle));
//! ```
//!
//! # Moves, copies and stable addresses
//!
//! In C++ a script delegate's copy and move constructors are inert. In Rust, [`Clone::clone`] is
//! the only way to duplicate one, and it is inert too: the clone starts unbound on both sides. A
//! Rust *move* is different: it is a bitwise relocation of the same object, no code runs, and
//! the old place may not be used again. Listeners therefore travel with a moved delegate (nothing
//! is duplicated, so nothing double-fires), but any raw pointer to the old place is stale.
//!
//! A managed host holds raw pointers, so it must only ever be given the address of a delegate that
//! does not move: a field of a component that the engine keeps in a stable allocation (a `Box`,
//! an `Rc`, a slot of an arena that does not reallocate) for as long as the host may call in. The
//! host finds the delegate as *component address + reflected property offset*
//! ([`PropertyInfo::offset`](crate::reflect::PropertyInfo::offset)); the base is at offset 0 of
//! every `ScriptDelegate<P>`, so that address is also a valid `*const ScriptDelegateBase`.
//! When the component is dropped, the destroyed hook ([`set_destroyed_hook`]) tells the host, so it
//! can release its GC handles and forget the pointer.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::sync::RwLock;

use crate::handle::DelegateHandle;
use crate::invocation::{Block, InvocationList};
use crate::reflect::{PayloadInfo, ScriptPayload};
use crate::subscribe::{Options, Plain, SelfAware, Subscribe, TakesPlainFunction};

mod release;

pub(crate) use release::{Managed, Operation, Removal};

/// A managed listener's entry point: `thunk(context, payload)`. `payload` points at the payload
/// for the duration of the call (null for the void payload). The thunk must not unwind (a managed
/// exception must be caught on the managed side).
pub type ManagedThunk = extern "C" fn(context: *mut c_void, payload: *const c_void);

/// One managed binding, as handed to the destroyed hook.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ManagedBinding {
    /// The id [`bind_managed`](ScriptDelegateBase::bind_managed) returned.
    pub id: u64,
    /// The thunk it was bound with.
    pub thunk: ManagedThunk,
    /// The context it was bound with (for a .NET host, typically a `GCHandle` as a pointer).
    pub context: *mut c_void,
}

/// Why the destroyed hook is called: the bindings it receives are gone either way.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseReason {
    /// The delegate was dropped (its component was destroyed), or the message bus the managed
    /// listener listened on (GB8).
    Destroyed = 0,
    /// The delegate, or the message bus, was cleared by `clear()` on the Rust side.
    Cleared = 1,
    /// The host unloaded the script generation the bindings were made in (SD8, see
    /// `script_generation`). The hook's `delegate` is null then.
    GenerationUnloaded = 2,
    /// A managed listener of the message bus was removed from Rust: by its handle, a guard, or
    /// `forget_entity` (GB8); or a managed binding whose thunk lies in a game module's library
    /// was removed by the module's unload (MB4). The hook's `delegate` is null.
    Removed = 3,
}

/// The host's destroyed hook (the C++ `GOnScriptDelegateDestroyed`), also called the release
/// hook: `hook(delegate, bindings, count, reason)`.
///
/// Called whenever managed bindings disappear without the host unbinding them itself: when a
/// delegate with live managed bindings is dropped ([`ReleaseReason::Destroyed`]), cleared from
/// Rust ([`ReleaseReason::Cleared`]), or its script generation is unloaded
/// ([`ReleaseReason::GenerationUnloaded`]). Every binding reaches it exactly once (rule R4),
/// whichever of these removes it first and wherever its delegate has moved, and never while its
/// thunk runs: a binding whose thunk is running when it is removed (a thunk that clears, or that
/// unloads its own generation) is handed over when that call returns. The operation that removes
/// bindings hands them over before it returns, in one call per delegate and reason.
///
/// `bindings` points at `count` [`ManagedBinding`]s, each with the id, thunk and context the host
/// bound, valid for the duration of the call; the host releases each context's GC handle.
/// `delegate` is the address of the delegate's base, for identification only (during
/// `Destroyed` it is being dropped: do not call into it); it is null for `GenerationUnloaded`,
/// since lumina keeps no delegate's address (R1), and for every managed listener of a message
/// bus (GB8, whose ids are handle ids too, unique in the process). It is called on the delegate's thread, and
/// never for bindings the host removed with `unbind_managed`. The hook may call back into lumina
/// (bind, clear, unload, drop other delegates).
pub type DestroyedHook = extern "C" fn(
    delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
);

static DESTROYED_HOOK: RwLock<Option<DestroyedHook>> = RwLock::new(None);

/// Installs (or, with `None`, removes) the host's destroyed hook; returns the previous one. See
/// [`DestroyedHook`]. Without a hook, dropping managed bindings is reported as an error through
/// `tracing`, naming the leaked contexts. A hook that is a game module's code is uninstalled
/// by that module's unload (it is never called after its library is unmapped, R5).
pub fn set_destroyed_hook(hook: Option<DestroyedHook>) -> Option<DestroyedHook> {
    let mut slot = DESTROYED_HOOK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::mem::replace(&mut *slot, hook)
}

/// Removes the installed destroyed hook if `doomed` says so (a game module's unload, for a hook
/// whose code lies in its library: it must not be called after the unmap, R5); whether it did.
pub(crate) fn remove_destroyed_hook_if(doomed: impl FnOnce(DestroyedHook) -> bool) -> bool {
    let mut slot = DESTROYED_HOOK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let remove = slot.is_some_and(doomed);
    if remove {
        *slot = None;
    }
    remove
}

/// The installed destroyed hook, for the release path and the crate's tests (a host that wants
/// to know it sets and restores: [`set_destroyed_hook`] returns the previous one).
pub(crate) fn destroyed_hook() -> Option<DestroyedHook> {
    *DESTROYED_HOOK
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A native listener with its payload type erased: it downcasts the `&dyn Any` to its `&P`.
type NativeListener = Rc<dyn Fn(&dyn Any)>;

/// A listener of a script delegate: both kinds share one invocation list.
#[derive(Clone)]
enum Listener {
    /// A Rust closure; receives the payload as `&dyn Any` and downcasts it to its `&P`.
    Native(NativeListener),
    /// A managed `(thunk, context)` pair, shared with whatever holds it for a moment (a
    /// merging broadcast's call): released when the last holder lets go (R4, see `release`).
    Managed(Rc<Managed>),
}

// SAFETY: cloning a listener clones an `Rc`: no user code runs.
unsafe impl crate::invocation::Subscriber for Listener {
    fn code(&self) -> Option<crate::track::Code> {
        match self {
            Listener::Native(callable) => crate::track::code_of(&**callable),
            // The thunk's address: a game module's code may bind a managed listener with an
            // `extern "C" fn` of its own, which must go before its library is unmapped (MB4, R5).
            Listener::Managed(managed) => crate::track::code_of(&managed.thunk),
        }
    }

    fn unloading(&self, site: u32) {
        if let Listener::Managed(managed) = self {
            managed.mark(Removal::Released {
                reason: ReleaseReason::Removed,
                delegate: std::ptr::null(),
                site,
            });
        }
    }
}

impl Listener {
    fn is_native(&self) -> bool {
        matches!(self, Listener::Native(_))
    }

    fn is_managed(&self) -> bool {
        matches!(self, Listener::Managed(..))
    }
}

thread_local! {
    /// The heap blocks of the script delegates whose `drop` is running on this thread (weakly:
    /// the block, not the delegate's place, R1). Kept beside the delegate rather than in it, so
    /// it stays 24 bytes.
    static DROPPING: RefCell<Vec<Weak<Block<Listener>>>> = const { RefCell::new(Vec::new()) };
}

/// Why [`ScriptDelegateBase::bind_managed`] refused a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// The thunk was null.
    NullThunk,
    /// The call came from another thread than the delegate's (the game thread).
    NotGameThread,
    /// The delegate is being dropped (a destroyed hook tried to bind to it): the binding could
    /// never be released.
    Destroyed,
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindError::NullThunk => f.write_str("the managed thunk is null"),
            BindError::NotGameThread => f.write_str(
                "bind_managed was called off the game thread (the thread that owns the \
                 delegate); marshal the call to the game thread first",
            ),
            BindError::Destroyed => f.write_str(
                "the script delegate is being dropped; a binding made now could never be released",
            ),
        }
    }
}

impl std::error::Error for BindError {}

/// The payload-independent part of every [`ScriptDelegate`], at offset 0 of it (SD1): the C ABI
/// operates on any script delegate through a `*const ScriptDelegateBase`.
///
/// It owns the one invocation list of native and managed listeners (a managed binding's id is its
/// handle's id in that list), the thread it belongs to (the game thread, for engine components), and its payload's
/// reflection data.
#[repr(C)]
pub struct ScriptDelegateBase {
    list: InvocationList<Listener>,
    /// The number of the thread it belongs to ([`thread_number`]): 4 bytes, so that with
    /// [`kinds`](Self::kinds) the delegate stays 24 bytes (N1).
    thread: u32,
    /// Which kinds of listener were ever bound ([`NATIVE`], [`MANAGED`]): a broadcast runs only
    /// the passes that can find a listener (a delegate only Rust listens to walks its list once).
    /// Never cleared: a flag left by a removed listener only costs the pass it would have saved.
    /// Next to `thread` (the struct is `repr(C)`): the two share a word.
    kinds: Cell<u8>,
    payload: &'static PayloadInfo,
}

/// The calling thread's number, given on its first call (1, 2, ...): a `Cell` without a
/// destructor, so it answers also while the thread's other locals are destroyed.
fn thread_number() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    thread_local! {
        static NUMBER: Cell<u32> = const { Cell::new(0) };
    }
    NUMBER.with(|number| {
        if number.get() == 0 {
            number.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        number.get()
    })
}

/// [`ScriptDelegateBase::kinds`]: a native listener was bound.
const NATIVE: u8 = 1;
/// [`ScriptDelegateBase::kinds`]: a managed listener was bound.
const MANAGED: u8 = 2;

impl fmt::Debug for ScriptDelegateBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let managed = self.managed_len();
        f.debug_struct("ScriptDelegateBase")
            .field("payload", &self.payload.name)
            .field("native", &(self.len() - managed))
            .field("managed", &managed)
            .field("subscriptions", &self.subscriptions())
            .finish()
    }
}

impl ScriptDelegateBase {
    fn new(payload: &'static PayloadInfo) -> Self {
        ScriptDelegateBase {
            list: InvocationList::new(),
            thread: thread_number(),
            payload,
            kinds: Cell::new(0),
        }
    }

    /// The reflection data of the payload this delegate carries.
    pub fn payload(&self) -> &'static PayloadInfo {
        self.payload
    }

    /// Whether the calling thread is the one this delegate belongs to. Only this thread may bind,
    /// unbind, query or broadcast; the C ABI refuses calls from any other.
    pub fn is_owner_thread(&self) -> bool {
        thread_number() == self.thread
    }

    /// Binds a managed listener; returns its id (never 0). Refused when `thunk` is `None` (a null
    /// function pointer over the C ABI) or when called off the delegate's thread (SD2).
    ///
    /// "Game thread only" means, for a script delegate, the thread that owns it: a delegate is
    /// neither `Send` nor `Sync`, so it is only ever used on the thread that made it, and the
    /// engine makes its components on the game thread (see
    /// [`main_thread::designate_game_thread`](crate::main_thread::designate_game_thread)). The
    /// check matters for calls through the C ABI, where a host can pass the delegate's address to
    /// any thread.
    ///
    /// A managed listener bound during a broadcast runs from the next broadcast on (M2).
    #[track_caller]
    pub fn try_bind_managed(
        &self,
        thunk: Option<ManagedThunk>,
        context: *mut c_void,
    ) -> Result<u64, BindError> {
        if !self.is_owner_thread() {
            return Err(BindError::NotGameThread);
        }
        let thunk = thunk.ok_or(BindError::NullThunk)?;
        if self.is_dropping() {
            return Err(BindError::Destroyed);
        }
        let managed = Managed::new(thunk, context, self.payload.name);
        let generation = managed.generation;
        self.kinds.set(self.kinds.get() | MANAGED);
        let id = self.list.add(Listener::Managed(Rc::clone(&managed))).id();
        managed.id.set(id);
        if generation != 0
            && let Some(block) = self.list.weak_block()
        {
            // The generation refers to the delegate's heap block, weakly (R1, SD8).
            crate::script_generation::note_binding(generation, block, id);
        }
        Ok(id)
    }

    /// [`try_bind_managed`](Self::try_bind_managed) with the C convention of SD2: the id, or 0
    /// when refused (the reason is logged through `tracing`).
    #[track_caller]
    pub fn bind_managed(&self, thunk: Option<ManagedThunk>, context: *mut c_void) -> u64 {
        match self.try_bind_managed(thunk, context) {
            Ok(id) => id,
            Err(error) => {
                tracing::error!(
                    payload = self.payload.name,
                    "lumina: bind_managed refused: {error}"
                );
                0
            }
        }
    }

    /// Removes the managed binding `id`; `false` (and no change) for 0, an id already unbound, an
    /// id of another delegate or of a native listener. Safe during a broadcast: a binding removed
    /// before it is reached does not run (M3). The destroyed hook is not called for it: the host
    /// that unbinds releases its own handle.
    pub fn unbind_managed(&self, id: u64) -> bool {
        let handle = DelegateHandle::from_id(id);
        // Marked while the entry is live, before the removal (no user code in between): the
        // host released its own handle, so the hook never hears of it (R4).
        self.list
            .subscriber_matches(handle, |listener| match listener {
                Listener::Managed(managed) => {
                    managed.mark(Removal::Unbound);
                    true
                }
                Listener::Native(_) => false,
            })
            && self.list.remove(handle)
    }

    /// Whether either side has a live listener (SD4, M8).
    pub fn is_bound(&self) -> bool {
        self.list.is_bound()
    }

    /// How many live listeners, native and managed (M8); the native ones are
    /// `len() - managed_len()`.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// `true` when no listener is bound on either side.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every listener present (native and managed), in the order added, with where it was
    /// bound and whether its owner lives (B5).
    pub fn subscriptions(&self) -> Vec<crate::bind_site::Subscription> {
        self.list.subscriptions()
    }

    /// How many live managed bindings.
    pub fn managed_len(&self) -> usize {
        self.list.count_matching(Listener::is_managed)
    }

    /// Whether a broadcast of this delegate is running.
    pub fn is_broadcasting(&self) -> bool {
        self.list.is_broadcasting()
    }

    /// The live managed bindings, in the order they were bound.
    pub fn managed_bindings(&self) -> Vec<ManagedBinding> {
        self.list
            .snapshot()
            .into_iter()
            .filter_map(|(_, listener)| match listener {
                Listener::Managed(managed) => Some(managed.binding()),
                Listener::Native(_) => None,
            })
            .collect()
    }

    /// Removes every listener on both sides (M6). The managed bindings removed are handed to the
    /// destroyed hook with [`ReleaseReason::Cleared`], so the host releases their handles: when
    /// the clear returns, or, during a broadcast (a thunk may be the one that cleared), when
    /// the outermost broadcast ends (M4, R4).
    pub fn clear(&self) {
        let _operation = Operation::begin();
        self.remove_marking(ReleaseReason::Cleared);
    }

    /// Clears the list, marking every live managed binding with `reason` before any listener is
    /// dropped (a drop's code may unbind one: it then finds it gone, M13).
    fn remove_marking(&self, reason: ReleaseReason) {
        let delegate = std::ptr::from_ref(self);
        self.list.clear_with(|_, site, listener| {
            if let Listener::Managed(managed) = listener {
                managed.mark(Removal::Released {
                    reason,
                    delegate,
                    site,
                });
            }
        });
    }

    /// Runs native listeners with `payload`, then managed ones with `raw`, as one list (SD3).
    fn broadcast_raw(&self, payload: &dyn Any, raw: *const c_void) {
        // Read before any listener runs: one bound during this broadcast runs from the next (M2).
        let kinds = self.kinds.get();
        // The trace span (V2) is named by the payload's type, as both sides know it.
        let name = self.payload.name;
        let span = move || crate::trace::broadcast_of(move || name);
        // One kind only (the common case): one pass of the multicast delegates' loop.
        if kinds == NATIVE {
            self.list.broadcast_traced(
                payload,
                |listener, payload| {
                    if let Listener::Native(callable) = listener {
                        callable(payload);
                    }
                },
                span,
            );
            return;
        }
        if kinds == MANAGED {
            self.list.broadcast_traced(
                raw,
                |listener, raw| {
                    if let Listener::Managed(managed) = listener {
                        (managed.thunk)(managed.context, raw);
                    }
                },
                span,
            );
            return;
        }
        let Some(mut broadcast) = self.list.begin() else {
            return;
        };
        // Both passes under one span; it ends before the broadcast does.
        let _span = span();
        if kinds & NATIVE != 0 {
            broadcast.for_each_matching(Listener::is_native, |listener| {
                if let Listener::Native(callable) = listener {
                    callable(payload);
                }
            });
            if kinds & MANAGED == 0 {
                return;
            }
            broadcast.rewind();
        }
        broadcast.for_each_matching(Listener::is_managed, |listener| {
            if let Listener::Managed(managed) = listener {
                (managed.thunk)(managed.context, raw);
            }
        });
    }
}

impl ScriptDelegateBase {
    /// The list, for binding a native listener: notes that one was, so broadcasts run the
    /// native pass ([`kinds`](Self::kinds)).
    fn for_native(&self) -> &InvocationList<Listener> {
        self.kinds.set(self.kinds.get() | NATIVE);
        &self.list
    }

    /// Whether this delegate's `drop` is running (then the destroyed hook cannot bind a listener
    /// that would leak).
    fn is_dropping(&self) -> bool {
        let Some(block) = self.list.block() else {
            return false;
        };
        let block = std::ptr::from_ref(block);
        // `try_with`: while the thread's locals are torn down, no drop of ours runs any more.
        DROPPING
            .try_with(|dropping| {
                dropping
                    .borrow()
                    .iter()
                    .any(|weak| std::ptr::eq(weak.as_ptr(), block))
            })
            .unwrap_or(false)
    }
}

impl Drop for ScriptDelegateBase {
    fn drop(&mut self) {
        // A delegate that never had a listener has nothing to release and runs no user code.
        let Some(block) = self.list.weak_block() else {
            return;
        };
        /// Unmarks the delegate when its drop ends, also by a panic: declared before the
        /// operation, so the hook its end calls still finds the delegate dropping.
        struct Dropped(Weak<Block<Listener>>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                let _ = DROPPING.try_with(|dropping| {
                    dropping
                        .borrow_mut()
                        .retain(|weak| !Weak::ptr_eq(weak, &self.0));
                });
            }
        }
        let _ = DROPPING.try_with(|dropping| dropping.borrow_mut().push(block.clone()));
        let _dropped = Dropped(block);
        let _operation = Operation::begin();
        self.remove_marking(ReleaseReason::Destroyed);
    }
}

// ---- script generation hook (SD8), see `crate::script_generation`.
impl crate::script_generation::Member for Block<Listener> {
    /// Removes the managed bindings of `generation` that are still bound (a running broadcast
    /// does not reach them, M3; during a broadcast they are released when the outermost one
    /// ends, M4) and hands them to the host's release hook once, with
    /// [`ReleaseReason::GenerationUnloaded`]. Returns how many.
    fn release_bindings(&self, generation: u64, ids: &[u64]) -> usize {
        let _operation = Operation::begin();
        ids.iter()
            .filter(|&&id| {
                self.remove_one_selected(
                    id,
                    |listener| {
                        matches!(listener, Listener::Managed(m) if m.generation == generation)
                    },
                    |_, site, listener| {
                        if let Listener::Managed(managed) = listener {
                            managed.mark(Removal::Released {
                                reason: ReleaseReason::GenerationUnloaded,
                                delegate: std::ptr::null(),
                                site,
                            });
                        }
                    },
                )
            })
            .count()
    }

    fn holds(&self, id: u64) -> bool {
        crate::invocation::RemoveByHandle::contains_handle(self, DelegateHandle::from_id(id))
    }
}
// ---- end of script generation hook

/// A reflected multicast event carrying a blittable payload `P`, bindable from Rust and from a
/// managed host; see the [module documentation](self).
///
/// `#[repr(C)]` with [`ScriptDelegateBase`] at offset 0 (checked at compile time for every `P`),
/// so `&delegate as *const _ as *const ScriptDelegateBase` is valid (SD1). It derefs to its base,
/// which has the managed-side API.
///
/// (`P: ScriptPayload` is required by every method rather than by the type, so a non-payload `P`
/// is reported once, where the delegate is made.)
#[repr(C)]
pub struct ScriptDelegate<P: 'static> {
    base: ScriptDelegateBase,
    _payload: PhantomData<fn(&P)>,
}

/// A removal key names its native subscriptions (`.key(&rc)`, then `remove_all(&rc)`).
impl<P: ScriptPayload> crate::subscribe::TakesKey for ScriptDelegate<P> {}
impl<P: ScriptPayload> crate::subscribe::TakesPriority for ScriptDelegate<P> {}

impl<P: ScriptPayload> ScriptDelegate<P> {
    /// Fails to compile (at monomorphization) if the base were not at offset 0.
    const BASE_AT_OFFSET_ZERO: () = assert!(
        std::mem::offset_of!(ScriptDelegate<P>, base) == 0,
        "ScriptDelegateBase must be at offset 0 of ScriptDelegate<P> (SD1)"
    );

    /// An unbound delegate, belonging to the calling thread. Allocates nothing.
    pub fn new() -> Self {
        let () = Self::BASE_AT_OFFSET_ZERO;
        ScriptDelegate {
            base: ScriptDelegateBase::new(P::PAYLOAD),
            _payload: PhantomData,
        }
    }

    /// The base, for the payload-independent API and for handing to a host: its address
    /// (`std::ptr::from_ref(delegate.base())`) is also this delegate's address (SD1), what a host
    /// receives.
    pub fn base(&self) -> &ScriptDelegateBase {
        &self.base
    }

    /// Adds a closure; the returned handle removes it.
    #[track_caller]
    pub fn add_lambda(&self, f: impl Fn(&P) + 'static) -> DelegateHandle {
        self.subscribe().add_lambda(f)
    }

    /// Adds a plain function; the returned handle removes it, and so does
    /// [`remove_static`](Self::remove_static) with the same function.
    #[track_caller]
    pub fn add_static(&self, f: fn(&P)) -> DelegateHandle {
        self.subscribe().add_static(f)
    }

    /// Removes every native listener made by [`add_static`](Self::add_static) with this
    /// function; returns how many (X7). Identity is the function pointer's value, as for
    /// [`MulticastDelegate::remove_static`](crate::MulticastDelegate::remove_static) (which says
    /// what folding identical code does to it): a closure, a member binding or a managed binding
    /// never matches.
    ///
    /// ```
    /// use lumina::{ScriptDelegate, script_delegate};
    ///
    /// #[script_delegate]
    /// #[derive(Clone)]
    /// struct Hit {
    ///     damage: f32,
    /// }
    ///
    /// fn log_hit(hit: &Hit) {
    ///     println!("hit for {}", hit.damage);
    /// }
    ///
    /// let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    /// let _ = on_hit.add_static(log_hit);
    /// let _ = on_hit.add_lambda(log_hit); // a closure: never matched
    /// assert_eq!(on_hit.remove_static(log_hit), 1);
    /// assert_eq!(on_hit.len(), 1);
    /// ```
    pub fn remove_static(&self, f: fn(&P)) -> usize {
        self.base
            .list
            .remove_keyed(crate::__private::fn_address(f as *const ()), None)
    }

    /// The future of the next broadcast, native side (X5): resolves with a clone of its payload,
    /// or [`Gone`](crate::Gone) if the delegate is dropped or cleared first. Subscribed now as a
    /// native listener that ends after one call; dropping the future unsubscribes. See
    /// [`NextBroadcast`](crate::NextBroadcast).
    #[track_caller]
    pub fn next(&self) -> crate::next_broadcast::NextBroadcast<P>
    where
        P: Clone,
    {
        crate::next_broadcast::subscribe(self.base.for_native(), |sender| {
            Listener::Native(native(move |payload: &P| sender.send(payload.clone())))
        })
    }

    /// Adds a method of `owner`, held weakly (M9): it never runs once `owner` is dropped.
    #[track_caller]
    pub fn add_member<T: Any>(
        &self,
        owner: &Rc<T>,
        method: impl Fn(&T, &P) + 'static,
    ) -> DelegateHandle {
        let weak = Rc::downgrade(owner);
        let listener = native(move |payload: &P| {
            crate::__private::call_member(&weak, payload, &method);
        });
        self.base
            .for_native()
            .add_owned(owner, Listener::Native(listener))
    }

    /// A native subscription with options (A1): priority, one-shot (X3: removed right before
    /// its call starts, so no broadcast, nested or through the C ABI from a managed thunk, runs
    /// it twice), muted, self-aware (X6), one method each, then `add_lambda`, `add_static` or
    /// `add_member`. See [`Subscribe`]. Cost: as the plain forms (N4).
    ///
    /// ```
    /// use lumina::{ScriptDelegate, script_delegate};
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// #[script_delegate]
    /// #[derive(Clone)]
    /// struct Hit {
    ///     damage: f32,
    /// }
    ///
    /// let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    /// let hits = Rc::new(Cell::new(0));
    /// let sink = Rc::clone(&hits);
    /// let _ = on_hit.subscribe().priority(5).self_aware().add_lambda(move |this, _hit| {
    ///     sink.set(sink.get() + 1);
    ///     this.remove(); // the first hit only
    /// });
    /// on_hit.broadcast(&Hit { damage: 1.0 });
    /// on_hit.broadcast(&Hit { damage: 2.0 });
    /// assert_eq!(hits.get(), 1);
    /// ```
    #[inline]
    pub fn subscribe(&self) -> Subscribe<'_, Self> {
        Subscribe::new(self)
    }

    /// What every finish of the builder does: one native insertion, then the mute.
    #[track_caller]
    fn insert_built(
        &self,
        options: Options<'_>,
        owner: Option<Weak<dyn Any>>,
        key: Option<usize>,
        listener: Listener,
    ) -> DelegateHandle {
        let list = self.base.for_native();
        let handle = list.insert_spec(options.spec(owner, key), listener);
        if options.muted {
            list.set_blocked(handle, true);
        }
        handle
    }

    /// [`insert_built`](Self::insert_built) for a listener `make` builds from its own
    /// subscription (X6).
    #[track_caller]
    fn insert_built_self_aware(
        &self,
        options: Options<'_>,
        owner: Option<Weak<dyn Any>>,
        make: impl FnOnce(crate::scoped::ThisSubscription) -> Listener,
    ) -> DelegateHandle {
        let list = self.base.for_native();
        let handle = list.insert_with(options.spec_self_aware(owner), |handle, list| {
            make(crate::scoped::ThisSubscription::new(handle, list))
        });
        if options.muted {
            list.set_blocked(handle, true);
        }
        handle
    }

    /// Blocks the native listener of `handle` (X4): it keeps its place and is skipped until
    /// [`unblock`](Self::unblock). `false` for an invalid, foreign or removed handle, and for a
    /// managed binding's id.
    pub fn block(&self, handle: DelegateHandle) -> bool {
        self.base
            .list
            .subscriber_matches(handle, Listener::is_native)
            && self.base.list.set_blocked(handle, true)
    }

    /// Lifts one block of the native listener of `handle` (X4, A2: blocks are counted).
    pub fn unblock(&self, handle: DelegateHandle) -> bool {
        self.base
            .list
            .subscriber_matches(handle, Listener::is_native)
            && self.base.list.set_blocked(handle, false)
    }

    /// Whether the native listener of `handle` is present and blocked (X4).
    pub fn is_blocked(&self, handle: DelegateHandle) -> bool {
        self.base.list.is_blocked(handle)
    }

    /// Mutes the whole delegate while the returned guard lives (A2): no broadcast, from Rust or through the C ABI, calls a native listener or a managed binding meanwhile; subscribers keep
    /// their place, blocks and handles, and one-shots are not used up. Counted: guards nest and
    /// drop in any order. See [`ScopedMute`](crate::ScopedMute). O(1).
    pub fn mute(&self) -> crate::scoped::ScopedMute {
        crate::scoped::ScopedMute::new(self.base.list.mute())
    }

    /// Whether a [`mute`](Self::mute) guard of this delegate lives. O(1).
    pub fn is_muted(&self) -> bool {
        self.base.list.is_muted()
    }

    /// `handle` if it names a native listener of this delegate, else the invalid handle: what a
    /// guard may act on (a managed binding's id only goes through `unbind_managed`).
    fn native_handle(&self, handle: DelegateHandle) -> DelegateHandle {
        if self
            .base
            .list
            .subscriber_matches(handle, Listener::is_native)
        {
            handle
        } else {
            DelegateHandle::default()
        }
    }

    /// Blocks the native listener of `handle` while the returned guard lives (X4).
    pub fn block_scoped(&self, handle: DelegateHandle) -> crate::scoped::ScopedBlock {
        crate::scoped::ScopedBlock::new(self.native_handle(handle), self.base.list.weak_remover())
    }

    /// Removes the native listener of `handle`; `false` (no change) for an invalid, foreign or
    /// already removed handle, and for a managed binding's id (those only go through
    /// [`unbind_managed`](ScriptDelegateBase::unbind_managed), so the host's handle never leaks).
    pub fn remove(&self, handle: DelegateHandle) -> bool {
        self.base
            .list
            .subscriber_matches(handle, Listener::is_native)
            && self.base.list.remove(handle)
    }

    /// Turns `handle` (a native listener of this delegate) into a guard that removes it when it
    /// is dropped (B1); see [`ScopedSubscription`](crate::ScopedSubscription). A managed binding's
    /// id is not a native handle: such a guard removes nothing.
    pub fn scoped(&self, handle: DelegateHandle) -> crate::scoped::ScopedSubscription {
        crate::scoped::ScopedSubscription::new(
            self.native_handle(handle),
            self.base.list.weak_remover(),
        )
    }

    /// Removes every native member binding of `owner`; returns how many (M9).
    pub fn remove_all<T: ?Sized>(&self, owner: &Rc<T>) -> usize {
        self.base.list.remove_owner(owner)
    }

    /// Whether a live native member binding of `owner` exists (M9).
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        self.base.list.is_bound_to(owner)
    }

    /// Calls every native listener, then every managed one, with `payload` (SD3). Listeners
    /// present when the broadcast starts run, in the order they were added within each side;
    /// M1-M8 hold across both sides as one list. Managed thunks receive a pointer to `payload`
    /// (null when `P` is zero-sized, as for `()`).
    pub fn broadcast(&self, payload: &P) {
        let raw: *const c_void = if size_of::<P>() == 0 {
            std::ptr::null()
        } else {
            std::ptr::from_ref(payload).cast()
        };
        self.base.broadcast_raw(payload, raw);
    }
}

/// Wraps a typed listener so it can share the list: the payload arrives as `&dyn Any`.
fn native<P: 'static>(f: impl Fn(&P) + 'static) -> NativeListener {
    Rc::new(move |payload: &dyn Any| {
        if let Some(payload) = payload.downcast_ref::<P>() {
            f(payload);
        }
    })
}

// A script delegate can be a reflected `#[property]` (`reflect` stands below this module: N3).
/// The weak owner a member finish holds (M9).
fn weak_owner<T: Any>(owner: &Rc<T>) -> Option<Weak<dyn Any>> {
    Some(Rc::downgrade(owner) as Weak<dyn Any>)
}

impl<P: ScriptPayload, M> Subscribe<'_, ScriptDelegate<P>, M> {
    /// Finishes with a plain function: [`ScriptDelegate::add_static`] with the options;
    /// [`remove_static`](ScriptDelegate::remove_static) finds it. Not after `.self_aware()`.
    #[track_caller]
    pub fn add_static(self, f: fn(&P)) -> DelegateHandle
    where
        M: TakesPlainFunction,
    {
        let (delegate, options) = self.parts();
        let key = Some(crate::__private::fn_address(f as *const ()));
        delegate.insert_built(options, None, key, Listener::Native(native(f)))
    }
}

impl<P: ScriptPayload> Subscribe<'_, ScriptDelegate<P>, Plain> {
    /// Finishes with a closure: [`ScriptDelegate::add_lambda`] with the options.
    #[track_caller]
    pub fn add_lambda(self, f: impl Fn(&P) + 'static) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built(options, None, None, Listener::Native(native(f)))
    }

    /// Finishes with a method of `owner`, held weakly (M9): [`ScriptDelegate::add_member`]
    /// with the options.
    #[track_caller]
    pub fn add_member<T: Any>(
        self,
        owner: &Rc<T>,
        method: impl Fn(&T, &P) + 'static,
    ) -> DelegateHandle {
        let weak = Rc::downgrade(owner);
        let listener = native(move |payload: &P| {
            crate::__private::call_member(&weak, payload, &method);
        });
        let (delegate, options) = self.parts();
        delegate.insert_built(options, weak_owner(owner), None, Listener::Native(listener))
    }
}

impl<P: ScriptPayload> Subscribe<'_, ScriptDelegate<P>, SelfAware> {
    /// Finishes with a closure that receives its own subscription first (X6).
    #[track_caller]
    pub fn add_lambda(
        self,
        f: impl Fn(&crate::scoped::ThisSubscription, &P) + 'static,
    ) -> DelegateHandle {
        let (delegate, options) = self.parts();
        delegate.insert_built_self_aware(options, None, |this| {
            Listener::Native(native(move |payload: &P| f(&this, payload)))
        })
    }

    /// Finishes with a method of `owner` (held weakly, M9) that receives its own subscription
    /// after the owner (X6).
    #[track_caller]
    pub fn add_member<T: Any>(
        self,
        owner: &Rc<T>,
        method: impl Fn(&T, &crate::scoped::ThisSubscription, &P) + 'static,
    ) -> DelegateHandle {
        let weak = Rc::downgrade(owner);
        let (delegate, options) = self.parts();
        delegate.insert_built_self_aware(options, weak_owner(owner), |this| {
            Listener::Native(native(move |payload: &P| {
                crate::__private::call_member(&weak, payload, |owner: &T, payload: &P| {
                    method(owner, &this, payload);
                });
            }))
        })
    }
}

impl<P: ScriptPayload> crate::reflect::DelegateProperty for ScriptDelegate<P> {
    const PAYLOAD: &'static PayloadInfo = P::PAYLOAD;
}

impl<P: ScriptPayload> std::ops::Deref for ScriptDelegate<P> {
    type Target = ScriptDelegateBase;

    fn deref(&self) -> &ScriptDelegateBase {
        &self.base
    }
}

impl<P: ScriptPayload> Default for ScriptDelegate<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// Inert copy (SD4): the clone starts unbound on both sides, so a duplicated component does not
/// fire its original's listeners, and a managed context is never shared by two delegates.
impl<P: ScriptPayload> Clone for ScriptDelegate<P> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<P: ScriptPayload> fmt::Debug for ScriptDelegate<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.base.fmt(f)
    }
}

#[cfg(test)]
mod size_tests {
    /// N1: a script delegate is three words (its list, its thread and listener kinds, its
    /// payload's reflection data).
    #[test]
    fn n1_a_script_delegate_is_three_words() {
        assert_eq!(
            size_of::<super::ScriptDelegateBase>(),
            3 * size_of::<usize>()
        );
    }
}
