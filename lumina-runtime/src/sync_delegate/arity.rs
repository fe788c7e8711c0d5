//! The signature-specific methods of [`SyncMulticastDelegate`] and its builder, per arity.

use std::any::Any;

use super::sync::{Arc, AtomicU32, Ordering};

use super::handles::Making;
use super::{SyncMulticastDelegate, SyncRegistration, SyncThisSubscription};
use crate::handle::DelegateHandle;
use crate::subscribe::{Plain, PlainFinish, SelfAware, Subscribe, TakesPlainFunction};

macro_rules! impl_sync_arity {
    ($($arg:ident: $Arg:ident),*) => {
        impl<$($Arg: 'static),*> SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync> {
            /// Adds a closure; returns its handle. With options (priority, one-shot, muted,
            /// self-aware) through [`subscribe`](Self::subscribe). O(n).
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                self.subscribe().add_lambda(f)
            }

            /// Adds a plain function. O(n).
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*)) -> DelegateHandle {
                self.subscribe().add_static(f)
            }

            /// Adds a method of `owner`, held weakly (M9): once the owner is dropped it is not
            /// called, the listing shows it [`Dropped`](crate::bind_site::OwnerState::Dropped), and it goes at the
            /// delegate's next change. O(n).
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                &self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                self.subscribe().add_member(owner, method)
            }

            /// A queued subscription (TS4, Qt's queued connection): each broadcast, from any
            /// thread, clones its arguments into a task that calls `f` on the game thread at the
            /// next [`process_queue`](crate::main_thread::process_queue). Removed before that
            /// drain, the subscription's queued calls do not run (TS2). `f` need only be `Send`.
            #[track_caller]
            pub fn add_queued(&self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
            {
                self.subscribe().add_queued(f)
            }

            /// Calls every subscriber present when the broadcast starts, in priority order,
            /// each with its own clone of the arguments. From any thread, also from inside a
            /// subscriber; never allocates (a one-shot's removal aside); holds no lock while
            /// a subscriber runs (TS3).
            pub fn broadcast(&self, $($arg: $Arg),*)
            where
                $($Arg: Clone,)*
            {
                self.broadcast_traced(
                    ($($arg,)*),
                    |f, ($($arg,)*)| f($($arg.clone()),*),
                    crate::trace::broadcast::<dyn Fn($($Arg),*) + Send + Sync>,
                );
            }
        }

        impl<'a, $($Arg: 'static),*> SyncRegistration<'a, dyn Fn($($Arg),*) + Send + Sync> {
            /// [`SyncMulticastDelegate::add_lambda`].
            #[track_caller]
            pub fn add_lambda(&self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                self.0.add_lambda(f)
            }

            /// [`SyncMulticastDelegate::add_static`].
            #[track_caller]
            pub fn add_static(&self, f: fn($($Arg),*)) -> DelegateHandle {
                self.0.add_static(f)
            }

            /// [`SyncMulticastDelegate::add_member`].
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                &self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                self.0.add_member(owner, method)
            }

            /// [`SyncMulticastDelegate::add_queued`].
            #[track_caller]
            pub fn add_queued(&self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
            {
                self.0.add_queued(f)
            }
        }

        impl<$($Arg: 'static),*> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, Plain> {
            /// Finishes with a closure: [`add_lambda`](SyncMulticastDelegate#method.add_lambda)
            /// with the options. O(n).
            #[track_caller]
            pub fn add_lambda(self, f: impl Fn($($Arg),*) + Send + Sync + 'static) -> DelegateHandle {
                let (delegate, options) = self.parts();
                delegate.insert(options, Making::default(), Box::new(f))
            }

            /// Finishes with a method of `owner`, held weakly (M9):
            /// [`add_member`](SyncMulticastDelegate#method.add_member) with the options.
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, $($Arg),*),
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                let weak = std::sync::Arc::downgrade(owner);
                let probe: std::sync::Weak<dyn Any + Send + Sync> = weak.clone();
                let making = Making { owner: Some(probe), ..Making::default() };
                delegate.insert(options, making, Box::new(move |$($arg: $Arg),*| {
                    if let Some(owner) = weak.upgrade() {
                        method(&owner, $($arg),*);
                    }
                }))
            }

        }

        impl<$($Arg: 'static,)* M> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, M> {
            /// Finishes with a queued subscription (TS4):
            /// [`add_queued`](SyncMulticastDelegate#method.add_queued) with the options (a
            /// one-shot queues one call; a muted one queues nothing until unblocked).
            #[track_caller]
            pub fn add_queued(self, f: impl Fn($($Arg),*) + Send + 'static) -> DelegateHandle
            where
                $($Arg: Send,)*
                M: PlainFinish,
            {
                let (delegate, options) = self.parts();
                let f = std::sync::Arc::new(std::sync::Mutex::new(f));
                let live = Arc::new(AtomicU32::new(1));
                let making = Making { queued: Some(Arc::clone(&live)), ..Making::default() };
                delegate.insert(options, making, Box::new(move |$($arg: $Arg),*| {
                    let f = std::sync::Arc::clone(&f);
                    let live = Arc::clone(&live);
                    crate::main_thread::enqueue(move || {
                        if live.load(Ordering::Acquire) != 0 {
                            let f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            f($($arg),*);
                        }
                    });
                }))
            }

            /// Finishes with a plain function:
            /// [`add_static`](SyncMulticastDelegate#method.add_static) with the options. Not
            /// after `.self_aware()` (a `fn` cannot take its subscription).
            #[track_caller]
            pub fn add_static(self, f: fn($($Arg),*)) -> DelegateHandle
            where
                M: TakesPlainFunction,
            {
                let (delegate, options) = self.parts();
                delegate.insert(options, Making::default(), Box::new(f))
            }
        }

        impl<$($Arg: 'static),*> Subscribe<'_, SyncMulticastDelegate<dyn Fn($($Arg),*) + Send + Sync>, SelfAware> {
            /// Finishes with a closure that receives its own subscription first (X6).
            #[track_caller]
            pub fn add_lambda(
                self,
                f: impl Fn(&SyncThisSubscription, $($Arg),*) + Send + Sync + 'static,
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                delegate.insert_self_aware(options, Making::default(), |this| Box::new(move |$($arg: $Arg),*| f(&this, $($arg),*)))
            }

            /// Finishes with a method of `owner` (held weakly, M9) that receives its own
            /// subscription after the owner (X6).
            #[track_caller]
            pub fn add_member<T: Send + Sync + 'static>(
                self,
                owner: &std::sync::Arc<T>,
                method: fn(&T, &SyncThisSubscription, $($Arg),*),
            ) -> DelegateHandle {
                let (delegate, options) = self.parts();
                let weak = std::sync::Arc::downgrade(owner);
                let probe: std::sync::Weak<dyn Any + Send + Sync> = weak.clone();
                let making = Making { owner: Some(probe), ..Making::default() };
                delegate.insert_self_aware(options, making, |this| Box::new(move |$($arg: $Arg),*| {
                    if let Some(owner) = weak.upgrade() {
                        method(&owner, &this, $($arg),*);
                    }
                }))
            }
        }
    };
}

impl_sync_arity!();
impl_sync_arity!(a: A);
impl_sync_arity!(a: A, b: B);
impl_sync_arity!(a: A, b: B, c: C);
impl_sync_arity!(a: A, b: B, c: C, d: D);
