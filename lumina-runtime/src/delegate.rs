//! [`Delegate`]: a single-cast delegate holding at most one callable (rules S1-S3).
//!
//! Game code usually declares a named type with [`declare_delegate!`](lumina_macros::declare_delegate);
//! the generic type is for quick use with owned argument types, e.g. `Delegate<dyn Fn(i32) -> bool>`.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::rc::{Rc, Weak};

use crate::invocation::Shared;
use crate::track;

/// A single-cast delegate: one callable or nothing.
///
/// Create it bound with `create_lambda`, `create_static` or `create_member` (which holds its
/// object weakly: once the object is dropped the delegate counts as unbound, rule S1), or unbound
/// with [`Delegate::new`] / `Default`. [`execute`](Self::execute) panics when nothing is bound
/// (S2); `execute_if_bound` returns `None` instead, for every return type (S3).
///
/// ```
/// use lumina::Delegate;
///
/// let is_positive = Delegate::<dyn Fn(i32) -> bool>::create_lambda(|x| x > 0);
/// assert!(is_positive.is_bound());
/// assert!(is_positive.execute(5));
///
/// let mut unbound = is_positive.clone();
/// unbound.unbind();
/// assert_eq!(unbound.execute_if_bound(5), None);
/// ```
pub struct Delegate<F: ?Sized + 'static> {
    /// One pointer: the callable and its owner live together in one shared block, so a
    /// delegate is 8 bytes whether bound or not (DESIGN's single-cast size, at most 16).
    binding: Option<Rc<Binding<F>>>,
}

/// The shared block of a binding. Its address is what the module loader's record of a game
/// module's callable points at (it stays put however the delegates that share it move, R1).
struct Binding<F: ?Sized> {
    /// The callable (an `Rc` kept as its value's address, so a call does not compute `Rc`'s
    /// offset to it): `None` only once the module loader dropped it (R5), which only happens to
    /// a binding with a record, and only while no borrow of it is alive.
    callable: Cell<Option<Shared<F>>>,
    owner: Option<Weak<dyn Any>>,
    /// The id of its record with the module loader (its callable's code lies in a loaded game
    /// module), or 0. Set once when the binding is made; cleared when the record is taken.
    record: Cell<u64>,
    /// How many borrows of its callable ([`CallableRef`], [`BoundCallable`]) are alive:
    /// meanwhile the loader does not drop the callable.
    calls: Cell<usize>,
}

impl<F: ?Sized> Binding<F> {
    fn is_live(&self) -> bool {
        self.owner
            .as_ref()
            .is_none_or(|owner| owner.strong_count() > 0)
    }

    /// The callable, if the loader has not dropped it. The reference is only ever handed out
    /// counted in `calls` ([`CallableRef`], [`BoundCallable`]).
    #[inline(always)]
    fn peek(&self) -> Option<&F> {
        // SAFETY: `callable` is written only by `take_recorded` (the loader's removal of
        // a recorded binding, while `calls` is 0) and by the block's drop. No reference into the
        // cell lives across either: this one is turned into a reference to the callable (in its
        // own `Rc` allocation, whose strong reference the `Shared` owns) at once. That reference
        // is handed out only counted in `calls`, so the `Shared` it comes from is not dropped
        // while it lives.
        unsafe { (*self.callable.as_ptr()).as_deref() }
    }

    /// Counts a borrow of the callable; the count the borrow undoes. Counted whether or not the
    /// binding has a record: one increment is cheaper than the test.
    #[inline(always)]
    fn count_call(&self) -> &Cell<usize> {
        self.calls.set(self.calls.get() + 1);
        &self.calls
    }

    /// Records the binding with the module loader when its callable's code lies in a loaded
    /// game module (rule R5): the record points at this block.
    #[cold]
    #[inline(never)]
    fn record_with_loader(self: &Rc<Self>, code: Option<track::Code>)
    where
        F: 'static,
    {
        let handle = crate::handle::DelegateHandle::new_unique();
        if track::track(track::ListAccess::of(self), handle, code) {
            self.record.set(handle.id());
        }
    }
}

/// A block dropped (every delegate sharing it dropped, unbound or rebound) forgets its record:
/// no record outlives the block it points at (R1).
impl<F: ?Sized> Drop for Binding<F> {
    fn drop(&mut self) {
        let record = self.record.get();
        if record != 0 && track::recording() {
            track::forget(std::iter::once(record));
        }
    }
}

/// The module loader's access to a binding's record (R5, MB4): its removal takes the callable out
/// of the binding, for the loader to drop while the module's library is still mapped; every
/// delegate sharing the binding is unbound from then on. Refused (`false`) while a borrow of the
/// callable is alive (its call runs, `in_call`): the unload is refused meanwhile (MB6), so that
/// a retry takes the callable back.
// SAFETY: `Binding`'s `Drop` forgets its record (above), and the loader's take clears it.
unsafe impl<F: ?Sized + 'static> track::ModuleRecorded for Binding<F> {
    /// The callable. Its `Drop` is the module's code, and may drop the last delegate of the
    /// block: the loader drops it after its last use of the block (and after its own strong
    /// reference, so the block goes with its last delegate, as it would without the loader).
    type Taken = Option<Shared<F>>;

    fn busy(&self) -> bool {
        self.calls.get() > 0
    }

    fn in_call(&self) -> bool {
        self.calls.get() > 0
    }

    fn take_recorded(&self, handle: crate::handle::DelegateHandle) -> (bool, Self::Taken) {
        if self.calls.get() > 0 || self.record.get() != handle.id() {
            return (false, None);
        }
        self.record.set(0);
        (true, self.callable.take())
    }
}

/// The bound callable of a [`Delegate`], borrowed for a call: dereferences to the callable.
///
/// While it lives, the callable is not dropped, not even by the unload of the game module whose
/// code it is (the unload is refused meanwhile, as during a broadcast of a delegate the module
/// subscribed to). Made by [`Delegate::callable_ref`].
pub struct CallableRef<'a, F: ?Sized + 'static> {
    callable: &'a F,
    /// The binding's count of borrows.
    calls: &'a Cell<usize>,
}

impl<F: ?Sized + 'static> std::ops::Deref for CallableRef<'_, F> {
    type Target = F;

    #[inline(always)]
    fn deref(&self) -> &F {
        self.callable
    }
}

impl<F: ?Sized + 'static> Drop for CallableRef<'_, F> {
    #[inline(always)]
    fn drop(&mut self) {
        self.calls.set(self.calls.get() - 1);
    }
}

/// The bound callable of a [`Delegate`], held past a borrow of the delegate (it shares the
/// binding): dereferences to the callable. Made by [`Delegate::callable`].
///
/// While it lives, the callable is not dropped, not even by the unload of the game module whose
/// code it is: that unload is refused meanwhile. Drop it once its call returned.
pub struct BoundCallable<F: ?Sized + 'static> {
    binding: Rc<Binding<F>>,
}

impl<F: ?Sized + 'static> std::ops::Deref for BoundCallable<F> {
    type Target = F;

    fn deref(&self) -> &F {
        match self.binding.peek() {
            Some(callable) => callable,
            // Counted in `calls` since it was made with the callable there (or unrecorded): the
            // loader has not taken it.
            None => unreachable!("a held callable is never taken"),
        }
    }
}

impl<F: ?Sized + 'static> Drop for BoundCallable<F> {
    fn drop(&mut self) {
        self.binding.calls.set(self.binding.calls.get() - 1);
    }
}

impl<F: ?Sized + 'static> Clone for Delegate<F> {
    fn clone(&self) -> Self {
        Delegate {
            binding: self.binding.clone(),
        }
    }
}

impl<F: ?Sized + 'static> Default for Delegate<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: ?Sized + 'static> fmt::Debug for Delegate<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delegate")
            .field("bound", &self.is_bound())
            .finish()
    }
}

/// The callable and its captures are user values: a delegate dropped while the thread unwinds
/// (a local or a field of what a panic drops) drops them under the guard, as
/// [`unbind`](Delegate::unbind) does (R2).
impl<F: ?Sized + 'static> Drop for Delegate<F> {
    fn drop(&mut self) {
        crate::drops::drop_user(self.binding.take());
    }
}

/// A delegate bound to an already shared callable (the building block of `create_*`):
/// `Delegate::from(Rc::clone(&callable))`, or `.into()`.
///
/// ```
/// use lumina::Delegate;
/// use std::rc::Rc;
///
/// let double: Rc<dyn Fn(i32) -> i32> = Rc::new(|x| x * 2);
/// let on_query: Delegate<dyn Fn(i32) -> i32> = Delegate::from(Rc::clone(&double));
/// assert_eq!(on_query.execute(21), 42);
/// ```
impl<F: ?Sized + 'static> From<Rc<F>> for Delegate<F> {
    fn from(callable: Rc<F>) -> Self {
        Self::bind(callable, None)
    }
}

impl<F: ?Sized + 'static> Delegate<F> {
    /// An unbound delegate.
    pub const fn new() -> Self {
        Delegate { binding: None }
    }

    /// A delegate bound to a callable of `owner`, held weakly: once `owner` is dropped the
    /// delegate is unbound. The building block of `create_member`.
    pub fn from_shared_member<T: Any>(owner: &Rc<T>, callable: Rc<F>) -> Self {
        Self::bind(callable, Some(Rc::downgrade(owner) as Weak<dyn Any>))
    }

    /// A bound delegate; a callable whose code lies in a loaded game module is recorded with the
    /// module loader, which drops it (and so unbinds the delegate) when it unloads the module
    /// (R5, MB4). While no module is loaded that check is one atomic load.
    fn bind(callable: Rc<F>, owner: Option<Weak<dyn Any>>) -> Self {
        let code = track::code_of(&*callable);
        let binding = Rc::new(Binding {
            callable: Cell::new(Some(Shared::new(callable))),
            owner,
            record: Cell::new(0),
            calls: Cell::new(0),
        });
        if code.is_some() {
            binding.record_with_loader(code);
        }
        Delegate {
            binding: Some(binding),
        }
    }

    /// Whether a callable is bound and, for a member binding, its object is alive. A callable of
    /// a game module that was unloaded since is not (its unload dropped it).
    pub fn is_bound(&self) -> bool {
        self.binding
            .as_deref()
            .is_some_and(|binding| binding.is_live() && binding.peek().is_some())
    }

    /// Whether this is a live member binding of `owner`.
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.is_bound()
            && self.binding.as_ref().is_some_and(|binding| {
                binding
                    .owner
                    .as_ref()
                    .is_some_and(|weak| Weak::as_ptr(weak).cast::<()>() == owner)
            })
    }

    /// Drops the bound callable, if any. Afterwards [`is_bound`](Self::is_bound) is false.
    pub fn unbind(&mut self) {
        // The callable and its captures: guarded if this runs while the thread unwinds (R2).
        crate::drops::drop_user(self.binding.take());
    }

    /// The bound callable, if bound and alive. `execute` and `execute_if_bound` go through
    /// this: the shared borrow of the delegate keeps the callable in place for the duration of
    /// its own call (unbinding takes `&mut self`), so no reference count is touched per call.
    /// While the returned borrow lives, the unload of the game module whose code the callable is
    /// is refused (it would drop the callable).
    #[inline]
    pub fn callable_ref(&self) -> Option<CallableRef<'_, F>> {
        let binding = self.binding.as_deref()?;
        if !binding.is_live() {
            return None;
        }
        let callable = binding.peek()?;
        Some(CallableRef {
            callable,
            calls: binding.count_call(),
        })
    }

    /// The bound callable, if bound and alive, held past the borrow of the delegate: for calling
    /// it after releasing a borrow of the delegate (for instance one held in a `RefCell` that the
    /// callable itself rebinds), since the returned handle keeps the callable alive for its own
    /// call. Drop it once the call returned: while it lives, the unload of the game module whose
    /// code the callable is is refused.
    pub fn callable(&self) -> Option<BoundCallable<F>> {
        let binding = self.binding.as_ref()?;
        if !binding.is_live() || binding.peek().is_none() {
            return None;
        }
        binding.calls.set(binding.calls.get() + 1);
        Some(BoundCallable {
            binding: Rc::clone(binding),
        })
    }

    /// The bound callable, or the S2 panic naming `delegate_name`: what `execute` of single-cast
    /// delegates (generic and declared) goes through. The caller holds each of its arguments in
    /// its own `Guarded` meanwhile and takes them out for the call: if this panics they are
    /// dropped under the guard each on its own, so arguments whose `Drop` panics too do not abort
    /// the process (R2; as plain parameters, or as one `Guarded` of their tuple, the later ones
    /// would be dropped plainly while the first one's panic unwinds). Free when a callable is
    /// bound.
    #[track_caller]
    #[inline(always)]
    pub fn callable_or_panic(&self, delegate_name: &str) -> CallableRef<'_, F> {
        match self.callable_ref() {
            Some(callable) => callable,
            None => unbound_execute(delegate_name),
        }
    }
}

/// The panic of `execute` on an unbound delegate (S2).
#[cold]
#[track_caller]
fn unbound_execute(delegate_name: &str) -> ! {
    panic!(
        "`{delegate_name}::execute` called with nothing bound (or its object was dropped): \
         check `is_bound()` first, or call `execute_if_bound()`, which returns None instead"
    )
}

/// Implements the typed API for `Delegate<dyn Fn(A..) -> R>` with owned arguments.
macro_rules! impl_delegate_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: 'static,)* R: 'static> Delegate<dyn Fn($($Arg),*) -> R> {
            /// A delegate bound to a closure.
            pub fn create_lambda(f: impl Fn($($Arg),*) -> R + 'static) -> Self {
                Self::from(Rc::new(f) as Rc<dyn Fn($($Arg),*) -> R>)
            }

            /// A delegate bound to a plain function.
            pub fn create_static(f: fn($($Arg),*) -> R) -> Self {
                Self::from(Rc::new(f) as Rc<dyn Fn($($Arg),*) -> R>)
            }

            /// A delegate bound to a method of `owner`, held weakly: once `owner` is dropped the
            /// delegate is unbound and never calls it (S1).
            pub fn create_member<T: Any>(
                owner: &Rc<T>,
                method: impl Fn(&T, $($Arg),*) -> R + 'static,
            ) -> Self {
                let weak = Rc::downgrade(owner);
                Self::from_shared_member(
                    owner,
                    Rc::new(move |$($arg: $Arg),*| crate::__private::call_member(&weak, ($($arg,)*), |owner, ($($arg,)*)| method(owner, $($arg),*))),
                )
            }

            /// Calls the bound callable.
            ///
            /// # Panics
            /// When nothing is bound, or the bound object was dropped (S2). Check
            /// [`is_bound`](Self::is_bound) first, or use
            /// [`execute_if_bound`](Self::execute_if_bound).
            #[track_caller]
            pub fn execute(&self, $($arg: $Arg),*) -> R {
                // Each argument in its own guard meanwhile (see `callable_or_panic`).
                $(let $arg = crate::drops::Guarded::new($arg);)*
                let callable = self.callable_or_panic(::core::any::type_name::<Self>());
                callable($($arg.into_inner()),*)
            }

            /// Calls the bound callable if there is one: `Some(result)`, or `None` when unbound (S3).
            pub fn execute_if_bound(&self, $($arg: $Arg),*) -> Option<R> {
                crate::__private::callable_if_bound(
                    self,
                    ($(crate::drops::Guarded::new($arg),)*),
                )
                .map(|(callable, ($($arg,)*))| callable($($arg.into_inner()),*))
            }
        }
    };
}

impl_delegate_arity!();
impl_delegate_arity!(a: A);
impl_delegate_arity!(a: A, b: B);
impl_delegate_arity!(a: A, b: B, c: C);
impl_delegate_arity!(a: A, b: B, c: C, d: D);
impl_delegate_arity!(a: A, b: B, c: C, d: D, e: E);
impl_delegate_arity!(a: A, b: B, c: C, d: D, e: E, g: G);

#[cfg(test)]
mod tests {
    //! The module loader's functions for a single-cast binding's record, called as the loader
    //! calls them (a loaded module's library cannot be had under Miri): R5, MB4.

    use super::*;
    use crate::handle::DelegateHandle;
    use crate::module::{ModuleId, release_values};

    /// A capture that counts its drops.
    struct Counted(Rc<Cell<usize>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    /// The loader's access to the delegate's block, as its record holds it.
    fn access_of<F: ?Sized>(delegate: &Delegate<F>) -> track::ListAccess {
        track::ListAccess::of(delegate.binding.as_ref().expect("bound"))
    }

    #[test]
    fn r5_a_bindings_module_record_drops_its_callable_unless_a_call_runs() {
        let drops = Rc::new(Cell::new(0));
        let capture = Counted(Rc::clone(&drops));
        let asked: Rc<Cell<Option<(bool, bool)>>> = Rc::default();
        let seen = Rc::clone(&asked);
        let access: Rc<std::cell::OnceCell<track::ListAccess>> = Rc::default();
        let at = Rc::clone(&access);
        let delegate = Delegate::<dyn Fn(i32) -> i32>::create_lambda(move |x| {
            let _ = &capture;
            let handle = DelegateHandle::from_id(7);
            // SAFETY: the delegate's live block, on its thread.
            seen.set(Some(unsafe {
                (at.get().unwrap().busy(), at.get().unwrap().remove(handle))
            }));
            x + 1
        });
        let _ = access.set(access_of(&delegate));
        // As if recorded with the loader under id 7.
        delegate.binding.as_ref().unwrap().record.set(7);
        let shared = delegate.clone();
        // SAFETY: as above.
        assert!(!unsafe { access.get().unwrap().busy() });
        assert_eq!(delegate.execute(1), 2);
        assert_eq!(
            asked.get(),
            Some((true, false)),
            "busy while it runs, and the removal refused"
        );
        assert_eq!(drops.get(), 0);
        let held = delegate.callable().expect("bound");
        // SAFETY: as above.
        unsafe {
            assert!(access.get().unwrap().busy());
            assert!(!access.get().unwrap().remove(DelegateHandle::from_id(7)));
        }
        drop(held);
        // SAFETY: as above.
        unsafe {
            assert!(!access.get().unwrap().busy());
            assert!(
                !access.get().unwrap().remove(DelegateHandle::from_id(8)),
                "another record's id"
            );
            assert!(access.get().unwrap().remove(DelegateHandle::from_id(7)));
        }
        assert_eq!(drops.get(), 1, "the callable was dropped");
        for delegate in [&delegate, &shared] {
            assert!(!delegate.is_bound());
            assert_eq!(delegate.execute_if_bound(1), None);
            assert!(delegate.callable().is_none());
        }
        let unbound =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| delegate.execute(1)));
        assert!(unbound.is_err(), "execute panics as unbound");
        // SAFETY: as above; taken once.
        assert!(!unsafe { access.get().unwrap().remove(DelegateHandle::from_id(7)) });
        drop((delegate, shared));
        assert_eq!(drops.get(), 1);
    }

    /// Where a delegate is kept, for a capture of its callable to drop it.
    type Slot = Rc<std::cell::RefCell<Option<Delegate<dyn Fn()>>>>;

    /// A capture whose `Drop` drops the delegate that owns it: the last one sharing the block.
    struct DropsItsDelegate(Slot);

    impl Drop for DropsItsDelegate {
        fn drop(&mut self) {
            drop(self.0.borrow_mut().take());
        }
    }

    #[test]
    fn r5_a_bindings_module_record_survives_a_callable_whose_drop_frees_the_block() {
        let slot: Slot = Rc::default();
        let capture = DropsItsDelegate(Rc::clone(&slot));
        let delegate = Delegate::<dyn Fn()>::create_lambda(move || {
            let _ = &capture;
        });
        let access = access_of(&delegate);
        // No `Weak` of the block is kept: it would keep the allocation for Miri to miss a use.
        assert_eq!(Rc::strong_count(delegate.binding.as_ref().unwrap()), 1);
        delegate.binding.as_ref().unwrap().record.set(9);
        *slot.borrow_mut() = Some(delegate);
        // SAFETY: the block is live (the slot holds its only delegate), on its thread. The
        // removal frees it (the callable's `Drop` drops that delegate) and does not touch it
        // after: Miri fails a use after the free.
        assert!(unsafe { access.remove(DelegateHandle::from_id(9)) });
        assert!(
            slot.borrow().is_none(),
            "the block was freed by the callable's drop"
        );
    }

    #[test]
    fn r5_a_bindings_record_is_made_for_module_code_taken_by_the_unload_and_forgotten_by_its_drop()
    {
        const FAKE: u64 = u64::MAX - 57;
        let drops = Rc::new(Cell::new(0));
        let make = |drops: &Rc<Cell<usize>>| -> Rc<dyn Fn(i32) -> i32> {
            let capture = Counted(Rc::clone(drops));
            Rc::new(move |x| {
                let _ = &capture;
                x * 2
            })
        };
        let first = make(&drops);
        let second = make(&drops);
        // As in track's tests: a placeholder range that no code word falls in, then the
        // closure type's vtable attributed to a fake module.
        #[cfg(not(miri))]
        track::add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        track::add_range(FAKE, 0, 1);
        // Each one's vtable: Miri may give each unsizing a vtable of its own.
        for callable in [&first, &second] {
            let vtable = track::code_of(&**callable)
                .expect("a module is loaded")
                .vtable();
            track::add_range(FAKE, vtable, vtable + 1);
        }
        let replaced = Delegate::from(first);
        assert_eq!(track::count(FAKE), 1, "recorded");
        let mut delegate = replaced.clone();
        drop(replaced);
        assert_eq!(track::count(FAKE), 1, "the block lives on in the clone");
        assert_eq!(delegate.execute(2), 4);
        delegate = Delegate::from(second);
        assert_eq!(drops.get(), 1, "the first callable went with its block");
        assert_eq!(
            track::count(FAKE),
            1,
            "its record forgotten, the new one made"
        );
        let _ = release_values(ModuleId::fake(FAKE));
        track::remove_range(FAKE);
        assert_eq!(drops.get(), 2, "the unload dropped the second callable");
        assert_eq!(track::count(FAKE), 0);
        assert!(!delegate.is_bound());
        assert_eq!(delegate.execute_if_bound(3), None);
    }
}
