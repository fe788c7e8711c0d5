//! # lumina
//!
//! The Lumina game engine's notification system. Three mechanisms, not interchangeable:
//!
//! 1. **Delegates**: single-cast [`Delegate`] and multicast [`MulticastDelegate`] callbacks with
//!    [`DelegateHandle`]s, whose broadcast stays correct while subscribers add, remove, clear and
//!    re-broadcast from inside it.
//! 2. **Script delegates**: reflected events that Rust and a managed C# runtime both bind to.
//! 3. **Input events**: event types dispatched through a prioritized handler chain.
//!
//! Game code depends on this crate only; every macro works through it.
//!
//! ```
//! use lumina::MulticastDelegate;
//!
//! let on_tick: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
//! let handle = on_tick.add_lambda(|dt| println!("tick {dt}"));
//! on_tick.broadcast(0.016);
//! on_tick.remove(handle);
//! ```

pub use lumina_runtime::*;

pub use lumina_macros::{ScriptComponent, script_delegate};

#[doc(hidden)]
pub use lumina_runtime::__private;
