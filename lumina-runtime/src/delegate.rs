//! [`Delegate`]: a single-cast delegate holding at most one callable (rules S1-S3).
//!
//! Game code usually declares a named type with [`declare_delegate!`](lumina_macros::declare_delegate);
//! the generic type is for quick use with owned argument types, e.g. `Delegate<dyn Fn(i32) -> bool>`.

use std::any::Any;
use std::fmt;
use std::rc::{Rc, Weak};

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

struct Binding<F: ?Sized> {
    callable: Rc<F>,
    owner: Option<Weak<dyn Any>>,
}

impl<F: ?Sized> Binding<F> {
    fn is_live(&self) -> bool {
        self.owner
            .as_ref()
            .is_none_or(|owner| owner.strong_count() > 0)
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
        crate::invocation::drop_user(self.binding.take());
    }
}

impl<F: ?Sized + 'static> Delegate<F> {
    /// An unbound delegate.
    pub const fn new() -> Self {
        Delegate { binding: None }
    }

    /// A delegate bound to an already shared callable; the building block of `create_*`.
    pub fn from_shared(callable: Rc<F>) -> Self {
        Delegate {
            binding: Some(Rc::new(Binding {
                callable,
                owner: None,
            })),
        }
    }

    /// A delegate bound to a callable of `owner`, held weakly: once `owner` is dropped the
    /// delegate is unbound. The building block of `create_member`.
    pub fn from_shared_member<T: Any>(owner: &Rc<T>, callable: Rc<F>) -> Self {
        Delegate {
            binding: Some(Rc::new(Binding {
                callable,
                owner: Some(Rc::downgrade(owner) as Weak<dyn Any>),
            })),
        }
    }

    /// Whether a callable is bound and, for a member binding, its object is alive.
    pub fn is_bound(&self) -> bool {
        self.binding.as_deref().is_some_and(Binding::is_live)
    }

    /// Whether this is a live member binding of `owner`.
    pub fn is_bound_to<T: ?Sized>(&self, owner: &Rc<T>) -> bool {
        let owner = Rc::as_ptr(owner).cast::<()>();
        self.binding.as_ref().is_some_and(|binding| {
            binding.is_live()
                && binding
                    .owner
                    .as_ref()
                    .is_some_and(|weak| Weak::as_ptr(weak).cast::<()>() == owner)
        })
    }

    /// Drops the bound callable, if any. Afterwards [`is_bound`](Self::is_bound) is false.
    pub fn unbind(&mut self) {
        // The callable and its captures: guarded if this runs while the thread unwinds (R2).
        crate::invocation::drop_user(self.binding.take());
    }

    /// The bound callable, if bound and alive. `execute` and `execute_if_bound` go through
    /// this: the shared borrow of the delegate keeps the callable in place for the duration of
    /// its own call (unbinding takes `&mut self`), so no reference count is touched per call.
    pub fn callable_ref(&self) -> Option<&F> {
        self.binding
            .as_ref()
            .filter(|binding| binding.is_live())
            .map(|binding| &*binding.callable)
    }

    /// A shared handle to the bound callable, if bound and alive: for calling it after releasing
    /// a borrow of the delegate (for instance one held in a `RefCell` that the callable itself
    /// rebinds), since the returned `Rc` keeps the callable alive for its own call.
    pub fn callable(&self) -> Option<Rc<F>> {
        self.binding
            .as_ref()
            .filter(|binding| binding.is_live())
            .map(|binding| Rc::clone(&binding.callable))
    }

    /// The bound callable, or the S2 panic naming `delegate_name`.
    #[track_caller]
    pub fn callable_or_panic(&self, delegate_name: &str) -> &F {
        match self.callable_ref() {
            Some(callable) => callable,
            None => crate::__private::unbound_execute(delegate_name),
        }
    }
}

/// Implements the typed API for `Delegate<dyn Fn(A..) -> R>` with owned arguments.
macro_rules! impl_delegate_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: 'static,)* R: 'static> Delegate<dyn Fn($($Arg),*) -> R> {
            /// A delegate bound to a closure.
            pub fn create_lambda(f: impl Fn($($Arg),*) -> R + 'static) -> Self {
                Self::from_shared(Rc::new(f))
            }

            /// A delegate bound to a plain function.
            pub fn create_static(f: fn($($Arg),*) -> R) -> Self {
                Self::from_shared(Rc::new(f))
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
                // Each argument in its own guard meanwhile (see `callable_for`).
                $(let $arg = crate::invocation::Guarded::new($arg);)*
                let callable = crate::__private::callable_for(self, ::core::any::type_name::<Self>());
                callable($($arg.into_inner()),*)
            }

            /// Calls the bound callable if there is one: `Some(result)`, or `None` when unbound (S3).
            pub fn execute_if_bound(&self, $($arg: $Arg),*) -> Option<R> {
                crate::__private::callable_if_bound(
                    self,
                    ($(crate::invocation::Guarded::new($arg),)*),
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
