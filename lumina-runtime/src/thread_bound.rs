//! Why a delegate cannot go to another thread, said where the compiler says it (rules M10, T1).
//!
//! Delegates, script delegates and the event processor hold `Rc`s, so they are neither `Send` nor
//! `Sync`. Left to the compiler's auto traits, sending one to another thread is an error about
//! whichever private field it meets first (`Weak<dyn Any>`, the invocation list's entries), several
//! times over, and never names the way out. Instead each of these types implements `Send` and
//! `Sync` explicitly, under a bound that never holds: [`GameThreadOnly`], which no type
//! implements. The compiler then reports that one unmet bound, once, in our words, naming the
//! delegate's type and `main_thread::enqueue`.
//!
//! The impls below are `unsafe impl`s only because `Send` and `Sync` are unsafe traits. They are
//! vacuous: their bound is a sealed trait whose only implementor is an uninhabited private type,
//! so they never apply and the types stay exactly as `!Send` and `!Sync` as their fields make
//! them. No code runs, nothing is asserted about any value.

use crate::delegate::Delegate;
use crate::event::EventProcessor;
use crate::multicast::MulticastDelegate;
use crate::script_delegate::{ScriptDelegate, ScriptDelegateBase};

mod sealed {
    /// Keeps [`GameThreadOnly`](super::GameThreadOnly) from being implemented outside lumina.
    pub trait Sealed {}

    /// No value of it exists: the only implementor of `GameThreadOnly`, so the trait has one.
    #[allow(dead_code)] // only named in the impl below
    pub enum Never {}

    impl Sealed for Never {}
}

/// Not public API; used in the `Send` and `Sync` bounds of lumina's single-threaded types. No
/// type of a program implements it (only an uninhabited private type does), so its unmet bound is
/// how the compiler explains that a delegate belongs to its thread.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent to or shared with another thread: lumina's delegates and event processors belong to the thread that made them",
    label = "this closure takes `{Self}` to another thread",
    note = "to signal from another thread, send the data, not the delegate: `lumina::main_thread::enqueue(move || ..)` runs the closure on the game thread at its next `main_thread::process_queue()`, where it can broadcast"
)]
pub trait GameThreadOnly: sealed::Sealed {}

#[diagnostic::do_not_recommend]
impl GameThreadOnly for sealed::Never {}

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
