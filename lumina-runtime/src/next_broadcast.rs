//! [`NextBroadcast`]: the future of a delegate's next broadcast (rule X5).
//!
//! Every multicast delegate (generic, declared, their registration views, the core delegates)
//! and the native side of script delegates has a `next()` that subscribes a one-shot subscriber
//! and returns this future. It resolves with a clone of the next broadcast's arguments, or with
//! [`Gone`] when the subscription ends first (the delegate dropped or cleared). It is a plain
//! `std::future::Future`: any single-threaded executor polls it, and
//! [`coroutine::spawn_local`](crate::coroutine::spawn_local) runs it on the game thread.
//!
//! # How it is built
//!
//! The future and its subscriber share one `Rc` block (a slot): the subscriber stores the
//! arguments there and wakes the waker the future left; the future takes them on its next poll.
//! The subscriber removes its own subscription when it fires (its call finishes, M4), and the
//! future removes it when dropped (M3: it never runs after that). When the delegate drops or
//! clears the subscriber before it fired, the subscriber's `Drop` marks the slot gone and wakes
//! the future. The slot keeps no address of the delegate: it holds the list's block weakly, as
//! [`ScopedSubscription`](crate::ScopedSubscription) does.
//!
//! # Where user code runs, and why it is safe
//!
//! - the `Clone` of the arguments: made by the broadcast (M11) or by the subscriber, before the
//!   slot is touched, so a clone that broadcasts again resolves the future at the nested
//!   broadcast (the first to reach the subscriber wins; the other value is dropped);
//! - the waker's `clone`, `wake` and `drop`: never while the slot is borrowed, and `wake` only
//!   after the slot holds its final state and the subscription is removed, so a waker that
//!   re-enters the delegate (broadcasts, subscribes, drops the future) sees a consistent state;
//! - `Drop` of the arguments and of the waker when the future or the subscriber is dropped:
//!   guarded, so a panicking `Drop` while the thread unwinds is logged, not an abort.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use crate::drops::{Drops, drop_user};
use crate::handle::DelegateHandle;
use crate::invocation::{InvocationList, RemoveByHandle, Subscriber};
use crate::track::TrackedWaker;

/// The subscription ended before a broadcast reached it: its delegate was dropped or cleared, or
/// its message bus dropped (godot-rust's `TrySignalFuture` resolving to an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Gone;

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the delegate (or message bus) was dropped or cleared before its next broadcast \
             reached this future",
        )
    }
}

impl std::error::Error for Gone {}

enum State<T> {
    /// Subscribed; the waker of the last poll, if any, is in the slot's `waker`.
    Waiting,
    /// The broadcast came: its arguments.
    Ready(T),
    /// The subscription ended without a broadcast.
    Gone,
    /// Taken by the future, or the future was dropped.
    Done,
}

/// What the future and its subscriber share.
struct Slot<T> {
    state: RefCell<State<T>>,
    /// The waker of the last poll while waiting. Its own cell, not generic: a waker of a game
    /// module's code is recorded with the module loader, and the module's unload drops it
    /// before the unmap (R5, see `TrackedWaker`).
    waker: TrackedWaker,
    /// The subscription, set right after it is added; and the list it is in, held weakly.
    subscription: Cell<DelegateHandle>,
    list: RefCell<Option<Weak<dyn RemoveByHandle>>>,
}

impl<T> Slot<T> {
    /// Moves a waiting slot to its final state `last` and returns the waker to wake; a slot
    /// that is final already keeps its state, and `last` is handed back. No user code runs.
    fn settle(&self, last: State<T>) -> Result<Option<Waker>, State<T>> {
        let mut state = self.state.borrow_mut();
        match &*state {
            State::Waiting => {
                *state = last;
                drop(state);
                Ok(self.waker.take())
            }
            _ => Err(last),
        }
    }

    /// Removes the subscription (a no-op once it is gone). Its subscriber is dropped now, or
    /// when the outermost broadcast of its list ends if one runs (M4); its `Drop` finds the
    /// state final and does nothing.
    fn unsubscribe(&self) {
        let list = self.list.borrow_mut().take();
        if let Some(list) = list.and_then(|list| list.upgrade()) {
            list.remove_handle(self.subscription.get());
        }
    }
}

/// The subscriber's side of a [`NextBroadcast`]. Not public API: the closures `next()` subscribes
/// (in the runtime and in `declare_multicast_delegate!` expansions) own one.
#[doc(hidden)]
pub struct NextSender<T> {
    slot: Rc<Slot<T>>,
}

impl<T> NextSender<T> {
    /// Resolves the future with `value` (the first broadcast to get here wins; a later value is
    /// dropped), ends the subscription, then wakes the future's waker.
    #[doc(hidden)]
    pub fn send(&self, value: T) {
        // User code from here on, with nothing borrowed.
        match self.slot.settle(State::Ready(value)) {
            Ok(waker) => {
                self.slot.unsubscribe();
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            Err(State::Ready(late)) => Drops::drop_one(late),
            Err(_) => {}
        }
    }
}

impl<T> Drop for NextSender<T> {
    fn drop(&mut self) {
        let waker = self.slot.settle(State::Gone).ok().flatten();
        if let Some(waker) = waker {
            // Inside a list's teardown (drop, clear), maybe while the thread unwinds: guarded.
            Drops::drop_one(WakeOnDrop(waker));
        }
    }
}

/// Wakes its waker when dropped: lets [`Drops`] guard `wake` and the waker's own drop at once.
struct WakeOnDrop(Waker);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.0.wake_by_ref();
    }
}

/// The future of a delegate's next broadcast, made by `next()` (rule X5): resolves to
/// `Ok(arguments)`, cloned (owned arguments as the broadcast clones them for every subscriber,
/// M11; referenced ones with `ToOwned`), or to `Err(`[`Gone`]`)` if the delegate is dropped or
/// cleared first.
///
/// - It is subscribed when `next()` returns, not when first polled: a broadcast between the two
///   resolves it. Made during a broadcast, it resolves at the next one (M2).
/// - Dropping it unsubscribes at once: a broadcast running meanwhile does not reach it (M3).
/// - Its subscriber returns `Default::default()` to a delegate with a return type.
/// - It is `!Send` (delegates are single-threaded) and needs no runtime: any single-threaded
///   executor polls it, and [`coroutine::spawn_local`](crate::coroutine::spawn_local) runs it on
///   the game thread.
///
/// # Panics
///
/// Polled again after it returned `Ready`, it panics (a misuse of the future). While the thread
/// already unwinds a panic (the poll is made from a `Drop`), it returns `Pending` instead: a
/// second panic there would abort the process (R2).
///
/// ```
/// use lumina::MulticastDelegate;
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// let on_hit: MulticastDelegate<dyn Fn(u32, String)> = MulticastDelegate::new();
/// let mut next = pin!(on_hit.next());
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(next.as_mut().poll(&mut cx).is_pending());
/// on_hit.broadcast(7, "sword".to_owned());
/// assert_eq!(next.poll(&mut cx), Poll::Ready(Ok((7, "sword".to_owned()))));
/// assert!(on_hit.is_empty(), "one-shot: unsubscribed when it fired");
/// ```
#[must_use = "futures do nothing unless polled; dropping it unsubscribes"]
pub struct NextBroadcast<T> {
    slot: Rc<Slot<T>>,
}

impl<T> NextBroadcast<T> {
    /// Whether the broadcast (or the end of the delegate) already came: the next poll is ready.
    pub fn is_ready(&self) -> bool {
        matches!(&*self.slot.state.borrow(), State::Ready(_) | State::Gone)
    }
}

impl<T> fmt::Debug for NextBroadcast<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.slot.state.borrow() {
            State::Waiting => "waiting",
            State::Ready(_) => "ready",
            State::Gone => "gone",
            State::Done => "done",
        };
        f.debug_struct("NextBroadcast")
            .field("state", &state)
            .field("subscription", &self.slot.subscription.get())
            .finish()
    }
}

impl<T> Future for NextBroadcast<T> {
    type Output = Result<T, Gone>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let slot = &self.slot;
        {
            let state = slot.state.borrow();
            match &*state {
                State::Waiting if slot.waker.will_wake(cx.waker()) => {
                    return Poll::Pending;
                }
                State::Waiting => {}
                State::Done => {
                    drop(state);
                    // Never a second panic while one unwinds: that would abort (R2).
                    if std::thread::panicking() {
                        return Poll::Pending;
                    }
                    panic!("lumina: a `NextBroadcast` future was polled after it completed")
                }
                State::Ready(_) | State::Gone => {
                    drop(state);
                    return Poll::Ready(take(slot));
                }
            }
        }
        // The waker's clone and the old waker's drop are user code: nothing is borrowed.
        let new = cx.waker().clone();
        let old = {
            let state = slot.state.borrow();
            match &*state {
                State::Waiting => slot.waker.replace(new),
                _ => {
                    drop(state);
                    drop_user(new);
                    return Poll::Ready(take(slot));
                }
            }
        };
        // A poll from a `Drop` while the thread unwinds: the waker's drop is guarded (R2).
        drop_user(old);
        Poll::Pending
    }
}

/// Takes a final state out of the slot.
fn take<T>(slot: &Slot<T>) -> Result<T, Gone> {
    match std::mem::replace(&mut *slot.state.borrow_mut(), State::Done) {
        State::Ready(value) => Ok(value),
        _ => Err(Gone),
    }
}

impl<T> Drop for NextBroadcast<T> {
    fn drop(&mut self) {
        let state = std::mem::replace(&mut *self.slot.state.borrow_mut(), State::Done);
        let waker = self.slot.waker.take();
        // Unsubscribe first: the subscriber's drop then finds `Done` and wakes nobody.
        self.slot.unsubscribe();
        // The waker and an untaken value are user values dropped in our frame, guarded.
        let mut drops = Drops::default();
        drops.drop(state);
        drops.drop(waker);
        drops.finish();
    }
}

/// Subscribes the subscriber `make` builds around a [`NextSender`] to `list` and returns the
/// future it resolves. Its bind site is the caller's (`next()`).
#[track_caller]
pub(crate) fn subscribe<C: Subscriber + 'static, T>(
    list: &InvocationList<C>,
    make: impl FnOnce(NextSender<T>) -> C,
) -> NextBroadcast<T> {
    let (sender, future) = pair();
    let subscriber = make(sender);
    // Adding runs no user code, so the subscriber cannot fire before its handle is known.
    let handle = list.add(subscriber);
    future.slot.subscription.set(handle);
    *future.slot.list.borrow_mut() = list.weak_remover();
    future
}

/// A future and its sender, not subscribed yet: for a mechanism that adds the subscriber its
/// own way (the message bus, whose listeners are made once their handle is known) and then
/// tells the sender its subscription with [`NextSender::attach`].
pub(crate) fn pair<T>() -> (NextSender<T>, NextBroadcast<T>) {
    let slot = Rc::new(Slot {
        state: RefCell::new(State::Waiting),
        waker: TrackedWaker::default(),
        subscription: Cell::new(DelegateHandle::INVALID),
        list: RefCell::new(None),
    });
    (
        NextSender {
            slot: Rc::clone(&slot),
        },
        NextBroadcast { slot },
    )
}

impl<T> NextSender<T> {
    /// Tells the slot its subscription and the list it is in (held weakly), so that firing or
    /// dropping the future removes it. Runs no user code.
    pub(crate) fn attach(&self, handle: DelegateHandle, list: Weak<dyn RemoveByHandle>) {
        self.slot.subscription.set(handle);
        *self.slot.list.borrow_mut() = Some(list);
    }
}
