//! The lumina runtime as one Rust `dylib` (rule MB1).
//!
//! Nothing to use directly: enable the `dynamic_linking` feature of the `lumina` facade, which
//! links this crate, and build with `-C prefer-dynamic` (see the guide's "Game modules
//! and hot reload"). Every engine-wide static of the runtime (core delegates, game thread, main-thread
//! queue, handle counter, reflection registry) then lives once, in this shared library, for the
//! engine and for every game module it loads.

// Re-exported so that the runtime's code is linked into this library (the same pattern as bevy's
// `bevy_dylib`).
#[allow(unused_imports)]
pub use lumina_runtime::*;
