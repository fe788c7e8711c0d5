//! [`ByReference`]: the typed API of the generic [`MulticastDelegate`] for a signature whose one
//! argument is a reference, such as `dyn Fn(&str)`.

use std::any::Any;
use std::rc::Rc;

use super::MulticastDelegate;
use crate::handle::DelegateHandle;

/// The typed API of `MulticastDelegate<dyn Fn(&A) -> R>`: one argument passed by reference, so
/// the generic type also serves signatures like `dyn Fn(&str)`. A trait rather than inherent
/// methods because Rust's coherence rules take `dyn Fn(&A)` and the owned `dyn Fn(A)` for
/// overlapping types; bring it into scope with `use lumina::multicast::ByReference` (the compiler
/// suggests it when it is missing). For several arguments with references, and to give the
/// delegate a name, use [`declare_multicast_delegate!`](lumina_macros::declare_multicast_delegate).
///
/// ```
/// use lumina::MulticastDelegate;
/// use lumina::multicast::ByReference;
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// let on_chat: MulticastDelegate<dyn Fn(&str)> = MulticastDelegate::new();
/// let lines = Rc::new(RefCell::new(Vec::new()));
/// let sink = Rc::clone(&lines);
/// let _log = on_chat.add_lambda(move |line: &str| sink.borrow_mut().push(line.to_owned()));
/// on_chat.broadcast("hello");
/// assert_eq!(*lines.borrow(), ["hello"]);
/// ```
pub trait ByReference<A: ?Sized, R> {
    /// Adds a closure; the returned handle removes it.
    #[track_caller]
    fn add_lambda(&self, f: impl Fn(&A) -> R + 'static) -> DelegateHandle;

    /// Adds a plain function.
    #[track_caller]
    fn add_static(&self, f: fn(&A) -> R) -> DelegateHandle;

    /// Adds a method of `owner`, held weakly (M9): it never runs once `owner` is dropped.
    #[track_caller]
    fn add_member<T: Any>(
        &self,
        owner: &Rc<T>,
        method: impl Fn(&T, &A) -> R + 'static,
    ) -> DelegateHandle;

    /// Calls every subscriber present when the broadcast starts, in order, with `a` (passed
    /// through, never cloned: M11); never allocates (M12).
    fn broadcast(&self, a: &A);

    /// The future of the next broadcast (X5): resolves with an owned copy of its argument
    /// (`ToOwned`: a `String` for `&str`), or [`Gone`](crate::Gone) if the delegate is dropped or
    /// cleared first; its subscriber returns `R::default()`. See
    /// [`NextBroadcast`](crate::NextBroadcast).
    #[track_caller]
    fn next(&self) -> crate::next_broadcast::NextBroadcast<A::Owned>
    where
        A: ToOwned,
        R: Default;

    /// [`broadcast`](Self::broadcast), then `clear`: for one-shot signals.
    fn broadcast_and_clear(&self, a: &A);

    /// Calls every subscriber like [`broadcast`](Self::broadcast) and returns their results in
    /// call order.
    fn broadcast_collect(&self, a: &A) -> Vec<R>;
}

impl<A: ?Sized + 'static, R: 'static> ByReference<A, R> for MulticastDelegate<dyn Fn(&A) -> R> {
    #[track_caller]
    fn add_lambda(&self, f: impl Fn(&A) -> R + 'static) -> DelegateHandle {
        self.add_shared(Rc::new(f))
    }

    #[track_caller]
    fn add_static(&self, f: fn(&A) -> R) -> DelegateHandle {
        self.add_shared(Rc::new(f))
    }

    #[track_caller]
    fn add_member<T: Any>(
        &self,
        owner: &Rc<T>,
        method: impl Fn(&T, &A) -> R + 'static,
    ) -> DelegateHandle {
        let weak = Rc::downgrade(owner);
        self.add_shared_member(
            owner,
            Rc::new(move |a: &A| crate::__private::call_member(&weak, a, &method)),
        )
    }

    fn broadcast(&self, a: &A) {
        self.list().broadcast_with((), |f, ()| {
            f(a);
        });
    }

    #[track_caller]
    fn next(&self) -> crate::next_broadcast::NextBroadcast<A::Owned>
    where
        A: ToOwned,
        R: Default,
    {
        crate::next_broadcast::subscribe(self.list(), |sender| {
            let subscriber: Rc<dyn Fn(&A) -> R> = Rc::new(move |a: &A| {
                sender.send(a.to_owned());
                R::default()
            });
            crate::invocation::Shared::new(subscriber)
        })
    }

    fn broadcast_and_clear(&self, a: &A) {
        ByReference::broadcast(self, a);
        self.clear();
    }

    fn broadcast_collect(&self, a: &A) -> Vec<R> {
        self.collect_with((), |f, ()| f(a))
    }
}
