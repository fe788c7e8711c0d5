//! The invocation list: the one piece of machinery behind multicast delegates, script delegates
//! and the event processor.
//!
//! An [`InvocationList`] holds subscribers (any cheaply clonable callable `C`, typically an
//! `Rc<dyn Fn(..)>`) in dispatch order, each with its [`DelegateHandle`], an optional weak owner
//! and a priority. It implements the whole reentrancy contract of the rules (`lumina::rules`) once:
//!
//! - M1: subscribers run in order (priority first, highest first; then the order they were added),
//!   once each per broadcast.
//! - M2: a broadcast runs only the subscribers present when it started. While any broadcast
//!   runs, the main list is frozen in shape: subscribers added go to a *pending* list, merged
//!   into the main one when the outermost broadcast ends. A `Broadcast` remembers
//!   [`DelegateHandle::next_id`] when it starts, so a nested broadcast runs the pending
//!   subscribers added before it started (merged in order) and skips those added after.
//! - M3/M4: removal and clearing while a broadcast runs mark the entry removed (a *tombstone*),
//!   so nothing not yet reached runs, and leave its callable in its slot until the outermost
//!   broadcast ends (M4's "no later than"), which drops every callable removed during it. So a
//!   running subscriber that removes itself finishes safely, a removal during a broadcast runs no
//!   user code, and the loops record nothing per call. Outside a broadcast a removed callable is
//!   dropped at once.
//! - M5: the lock count nests; the list is compacted once, when the outermost broadcast ends.
//! - M7: the lock is a guard, released (and the list compacted) even when a subscriber panics.
//! - M9: an entry with a weak owner whose owner died is never returned again and is pruned (by
//!   a broadcast reaching it, or by the sweep an add with an owner makes, outside broadcasts,
//!   once the owners table has doubled since the last one: N4, a list never broadcast stays
//!   bounded).
//! - X3: a one-shot entry is *claimed* (marked removed, like M3) by the last check before its
//!   call, after the argument's clone: no nested or later broadcast runs it again, and its callable
//!   goes when the outermost broadcast ends (M4). A pass that filters (script delegates' native and managed passes)
//!   claims it only if its filter takes it.
//! - X4: a blocked entry keeps its place; a state bit the loops' one test (`state() != 0`) already
//!   covers, so lists with nothing blocked pay nothing. Blocked entries count as live (`len`) and as
//!   candidates for the last call (M11), but never run.
//! - X6: a subscriber may be built from its own handle and a weak reference to the list
//!   (`insert_with`); a change of priority during a broadcast waits in `moves` until the settle.
//! - N4: nothing shifts the main list. Outside broadcasts an add above the lowest priority in
//!   use and a change of priority wait in `deferred` (by key; a change leaves a tombstone marked
//!   moved away); the next broadcast or walk (or a deferred list half the list's size) merges
//!   them in place from the back, into room reserved when they came, so the merge allocates
//!   nothing; the settle applies the moves asked during broadcasts the same way.
//! - X7: `broadcast_until_with` stops the walk when its callback says so; subscriptions made from
//!   a plain function carry its address in `keys`, compared only, for removal by function.
//! - M12: an empty list is one pointer and allocates nothing (its state lives in a block
//!   allocated by the first add); beginning and walking a broadcast never allocates; removal by
//!   handle is a binary search (an index by id gives its priority run, or its key among the
//!   pending subscribers).
//!
//! Files by concern: `entry.rs` (one subscriber: an id-and-state word and its callable),
//! `list.rs` (the list, its block's fields, and the operations the crate calls), `block.rs` (one
//! subscription: liveness, lookup by id, adding, changes of priority, the counts), `remove.rs`
//! (removal by handle, by owner, by selector, the first phase of a clear), `walk.rs` (the
//! broadcast and dispatch loops, the `Broadcast` iterator), `settle.rs` (dropping what was
//! removed, merging and compacting, and R2's guard `Guarded`, whose three `unsafe` blocks take a
//! value out of its `ManuallyDrop` or drop it there), and `raw.rs`, every other `unsafe` block of the module,
//! among them `Shared`, the `Rc` that multicast delegates and the bus keep as their value's pointer
//! so that a call through it costs what a call through a `Box` costs.
//!
//! Every method takes `&self`: subscribers re-enter the list through a shared reference. The main
//! list is borrowed mutably only while no broadcast runs, and never across user code (removed
//! callables are dropped after the borrow ends); while a broadcast runs it is only read, and the
//! pending list is only borrowed briefly. So re-entrancy cannot hit a borrow panic, and
//! [`broadcast_with`](InvocationList::broadcast_with) walks the list on the strength of its lock
//! alone: no `RefCell` borrow, no clone of a subscriber, nothing stored per call, and one test of
//! the entry's state word per subscriber. Beginning and ending a broadcast is one state word
//! (lock count, "needs settling" and "stop" flags) read and written (see BENCHMARKS.md for what
//! each of these bought).
//!
//! The list is an implementation detail of the crate (game code reaches it through the delegate
//! types, the processor and script delegates), so the filters, predicates and subscriber types
//! `C` it is used with are the crate's own: `Rc<dyn Fn>`, `Weak<dyn EventHandler>` and script
//! listeners, whose `Clone` runs no user code.
//!
//! # Where user code runs (M13)
//!
//! Every place below runs code of the game inside one of the list's operations. That code may
//! re-enter the list (add, remove, clear, remove by owner, broadcast, panic), and every rule holds
//! as if it ran exactly there:
//!
//! | operation | user code it runs | what makes it safe |
//! |---|---|---|
//! | broadcast | the subscriber's call | no slot is emptied while the list is locked (M4); the next entry's state is read after the call (M3) |
//! | broadcast | a one-shot subscriber's call (X3) | claimed (marked removed) before the call, after the argument's clone: a nested broadcast skips it, its handle removes nothing |
//! | broadcast (`broadcast_fold`, `broadcast_until`) | the combiner, after each result (X7) | part of that subscriber's call; a stop returns through the same lock guards as a panic |
//! | settle | nothing new: deferred changes of priority (X6) are moved with no user code | |
//! | broadcast | `Clone` of an owned argument | made *before* the entry it is for is checked, and that entry is checked again after it: a subscriber removed (or whose owner died) in the clone does not run; the clone then waits for the next subscriber (M11 still holds); a tuple of arguments is cloned element by element, each finished element guarded until the tuple is made, and arguments with drop glue travel each under its own guard, so the originals held for the last subscriber drop one by one if an earlier call panics (R2) |
//! | broadcast | `Drop` of an argument clone left over | after the loop, while the list is still locked |
//! | broadcast, dispatch | `Drop` of a callable whose owner died (prune, M9) | none in the loop: the entry is marked removed, and its callable dropped when the outermost broadcast ends (settle) |
//! | broadcast, dispatch | `Drop` of an owner (the last strong reference a call held) | after the call, before the next entry is read |
//! | add with an owner (outside a broadcast), when it sweeps dead owners | `Drop` of every swept callable, before the add makes its own | every swept entry is marked removed, the indexes and the list consistent and unlocked, before the first drop; the add's id is made after the drops, so what they add keeps ids in order; a panic is resumed after every drop, and the add then adds nothing |
//! | remove (outside a broadcast) | `Drop` of the removed callable | after the entry is marked removed and every borrow is released |
//! | clear, remove by owner (outside a broadcast) | `Drop` of every removed callable | every entry is marked removed *before* the first drop runs: no drop sees half a clear |
//! | end of the outermost broadcast (settle) | `Drop` of every callable removed during the broadcasts (by remove, clear, prune, a one-shot's claim) | no loop runs any more; the list counts as broadcasting meanwhile (adds wait in `pending`, removals are marked only), nothing is borrowed across a drop, and the settle runs again until nothing is left |
//! | drop of the list | `Drop` of every callable | one at a time, no borrow held |
//! | script delegates: broadcast | a managed thunk (the host's code, through the C ABI) | the call, as above; it may bind, unbind, clear and broadcast through the C ABI |
//! | script delegates: clear, drop, generation unload | the host's release hook | a managed binding is released when its last holder (its entry, or a merging walk's clone) lets go, so a running thunk's context stays valid until it returns (M4); the operation hands what it released to the hook when it ends, and a broadcast's settle when it ends (R4) |
//! | processor: dispatch | a handler's `Drop` (the last strong reference was the one held for its call) | after its call, before the next entry is read (the list holds handlers weakly) |
//!
//! Single-cast delegates run no user code inside their own operations but the call: binding
//! and unbinding take `&mut self`, which a running callable cannot have.
//!
//! An operation that drops several callables drops them all even when one `Drop` panics, and then
//! resumes the first panic, so a clear still clears (M13); a panic that comes while the thread is
//! already unwinding is logged and dropped instead, so the process never aborts (`Drops`). A user
//! value the library holds in a frame while user code runs (an argument and its clones, the
//! results `broadcast_collect` gathers, the event `dispatch` holds, the strong reference a call
//! holds, a queued delivery's object) is held in a `Guarded`: dropped through `Drops` if the frame
//! unwinds, and taken out by a move (or dropped in place) otherwise, so the guard costs the path
//! that does not panic nothing (R2; BENCHMARKS.md has the instruction counts). The
//! internal filters and predicates (script delegates' native or managed test) and the subscribers'
//! own `Clone` run no user code; they are called without any borrow of the lists held anyway.

mod block;
mod entry;
mod list;
mod raw;
mod remove;
mod settle;
mod walk;

#[cfg(test)]
mod tests;

pub(crate) use entry::Subscriber;
pub(crate) use list::{Block, Cleared, InvocationList, RemoveByHandle, Spec};
pub(crate) use raw::{Shared, WeakShared};
