//! Why a delegate cannot go to another thread, said where the compiler says it (rules M10, T1).
//!
//! Delegates, script delegates and the event processor hold `Rc`s, so they are neither `Send` nor
//! `Sync`. Left to the compiler's auto traits, sending one to another thread is an error about
//! whichever private field it meets first (`Weak<dyn Any>`, the invocation list's entries), several
//! times over, and never names the way out. Instead each of these types implements `Send` and
//! `Sync` explicitly, under a bound that never holds: [`StaysOnItsThread`], which no type
//! implements. The compiler then reports that one unmet bound, once, in our words, naming the
//! delegate's type, `main_thread::QueuedSender` and `main_thread::enqueue`. The core delegates
//! do the same; the gameplay message bus has its own never-holding bound,
//! [`BusStaysOnItsThread`], whose error names the bus's way out, `MessageBus::poster()`.
//!
//! [`BusStaysOnItsThread`]: crate::main_thread::BusStaysOnItsThread
//!
//! [`StaysOnItsThread`]: crate::main_thread::StaysOnItsThread
//!
//! The impls below are `unsafe impl`s only because `Send` and `Sync` are unsafe traits. They are
//! vacuous: their bound is a sealed trait whose only implementor is an uninhabited private type,
//! so they never apply and the types stay exactly as `!Send` and `!Sync` as their fields make
//! them. No code runs, nothing is asserted about any value.

use crate::delegate::Delegate;
use crate::event::EventProcessor;
use crate::multicast::MulticastDelegate;
use crate::script_delegate::{ScriptDelegate, ScriptDelegateBase};

use crate::main_thread::StaysOnItsThread as GameThreadOnly;

// SAFETY: vacuous, as above (the core delegates belong to the game thread; other threads reach
// them through `main_thread::enqueue`, which the error names).
unsafe impl Send for crate::core_delegates::CoreDelegates where
    for<'a> crate::core_delegates::CoreDelegates: GameThreadOnly
{
}
// SAFETY: vacuous, as above.
unsafe impl Sync for crate::core_delegates::CoreDelegates where
    for<'a> crate::core_delegates::CoreDelegates: GameThreadOnly
{
}

use crate::bus::{EntityId, MessageBus};
use crate::main_thread::BusStaysOnItsThread as BusThreadOnly;

// SAFETY: vacuous (module documentation): `MessageBus<E>: BusThreadOnly` never holds. Its own
// trait, so that the one error names `poster()`, the bus's way to other threads.
unsafe impl<E: EntityId> Send for MessageBus<E> where MessageBus<E>: BusThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl<E: EntityId> Sync for MessageBus<E> where MessageBus<E>: BusThreadOnly {}

// SAFETY: vacuous (module documentation): `MulticastDelegate<F>: GameThreadOnly` never holds.
unsafe impl<F: ?Sized + 'static> Send for MulticastDelegate<F> where
    MulticastDelegate<F>: GameThreadOnly
{
}
// SAFETY: vacuous, as above.
unsafe impl<F: ?Sized + 'static> Sync for MulticastDelegate<F> where
    MulticastDelegate<F>: GameThreadOnly
{
}
// SAFETY: vacuous, as above.
unsafe impl<F: ?Sized + 'static> Send for Delegate<F> where Delegate<F>: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl<F: ?Sized + 'static> Sync for Delegate<F> where Delegate<F>: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl<P: 'static> Send for ScriptDelegate<P> where ScriptDelegate<P>: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl<P: 'static> Sync for ScriptDelegate<P> where ScriptDelegate<P>: GameThreadOnly {}
// SAFETY: vacuous, as above (the higher-ranked bound keeps it from being checked eagerly).
unsafe impl Send for ScriptDelegateBase where for<'a> ScriptDelegateBase: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl Sync for ScriptDelegateBase where for<'a> ScriptDelegateBase: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl Send for EventProcessor where for<'a> EventProcessor: GameThreadOnly {}
// SAFETY: vacuous, as above.
unsafe impl Sync for EventProcessor where for<'a> EventProcessor: GameThreadOnly {}
// SAFETY: vacuous, as above (a scoped subscription belongs to its delegate's thread, B1).
unsafe impl Send for crate::scoped::ScopedSubscription where
    for<'a> crate::scoped::ScopedSubscription: GameThreadOnly
{
}
// SAFETY: vacuous, as above.
unsafe impl Sync for crate::scoped::ScopedSubscription where
    for<'a> crate::scoped::ScopedSubscription: GameThreadOnly
{
}
