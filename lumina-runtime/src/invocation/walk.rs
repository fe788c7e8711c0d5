//! The broadcast loops: [`InvocationList::broadcast_with`] and the event processor's
//! [`InvocationList::dispatch_until`] (hot, over the main list read without a borrow), the
//! merging walk for a nested broadcast while added subscribers wait, and the [`Broadcast`]
//! iterator the cold paths and script delegates use.

use std::cell::Ref;
use std::fmt;

use super::entry::{Entry, OWNED, Pending, Subscriber};
use super::list::{Block, HAS_PENDING, InvocationList, NEEDS_SETTLE, STOP};
use super::raw::locked_entries;
use crate::drops::Guarded;
use crate::drops::drop_user;
use crate::handle::DelegateHandle;

/// The lock a hot loop holds, with the main list it reads without a `RefCell` borrow. Dropping
/// it (also while unwinding, M7) lowers the lock count, and the outermost broadcast's end
/// settles the list.
struct Locked<'a, C: Subscriber> {
    block: &'a Block<C>,
    entries: &'a [Entry<C>],
}

impl<'a, C: Subscriber> Locked<'a, C> {
    /// Locks `block` for a hot loop, or `None` if subscribers added during an enclosing
    /// broadcast wait, or an enclosing loop's call asked for a stop (rare: then the loop merges
    /// them through the [`Broadcast`] iterator, or sets the stop aside first).
    #[inline(always)]
    fn new(block: &'a Block<C>) -> Option<Self> {
        if block.lock() & (HAS_PENDING | STOP) != 0 {
            block.unlock();
            return None;
        }
        // SAFETY: the lock taken above is held until this guard drops, which ends the borrow
        // `entries` lends.
        let entries = unsafe { locked_entries(&block.entries) };
        Some(Locked { block, entries })
    }
}

impl<C: Subscriber> Drop for Locked<'_, C> {
    #[inline(always)]
    fn drop(&mut self) {
        self.block.unlock();
    }
}

/// How [`Block::call_each`] ended.
enum Each<'e, C, A> {
    /// Every subscriber it had was passed.
    Done,
    /// A call asked to stop the broadcast.
    Stopped,
    /// A subscriber was removed during its argument's clone: the clone, for the next one, and
    /// the entries after the removed one.
    Spare(&'e [Entry<C>], Guarded<A>),
}

/// A stop that the call of an enclosing loop asked for ([`STOP`]) before a loop nested in that
/// call began: it is the enclosing loop's, so it is set aside while the nested loop runs (which
/// may call the same subscriber) and put back when it ends, also while unwinding. A stop asked
/// for meanwhile and not taken by the nested loop (the merging walk takes none) ends with it.
struct StopAside<'a, C: Subscriber> {
    block: &'a Block<C>,
    outer: bool,
}

impl<'a, C: Subscriber> StopAside<'a, C> {
    fn new(block: &'a Block<C>) -> Self {
        let outer = block.take_stop();
        StopAside { block, outer }
    }
}

impl<C: Subscriber> Drop for StopAside<'_, C> {
    fn drop(&mut self) {
        let state = self.block.state.get() & !STOP;
        self.block.state.set(if self.outer {
            state | STOP | NEEDS_SETTLE
        } else {
            state
        });
    }
}

/// Clears a stop request when the call that asked for it unwinds: the loop that would have
/// taken it began with none (see [`call_live`]).
struct ClearStopOnUnwind<'a, C: Subscriber>(&'a Block<C>);

impl<C: Subscriber> Drop for ClearStopOnUnwind<'_, C> {
    fn drop(&mut self) {
        self.0.take_stop();
    }
}

impl<C: Subscriber> InvocationList<C> {
    /// Broadcasts `args` to every subscriber: `call(subscriber, args)` runs for each live
    /// subscriber present when the broadcast starts, in order, through a reference (no clone of
    /// the subscriber). An owned argument is cloned only for subscribers that have a live
    /// subscriber after them, so the last one gets the original: at most N - 1 clones for N
    /// subscribers (M11). Never allocates (M12). An empty list is one load and one branch.
    ///
    /// Always inlined, and the loop never is (`Block::walk_outlined`): so the caller tests for
    /// an empty list before any register is saved (an empty broadcast is a load, a test and a
    /// branch), and a non-empty broadcast pays one call. The loop is compiled for each `A` and
    /// `call`, so it still inlines both (declared delegates' owned arguments carry their clone
    /// as a closure type for this, `__private::ClonedBy`).
    #[inline(always)]
    pub fn broadcast_with<A: Clone>(&self, args: A, call: impl FnMut(&C, A)) {
        self.broadcast_traced(args, call, crate::trace::broadcast::<C>);
    }

    /// [`broadcast_with`](Self::broadcast_with) whose trace span (V2) `span` makes, when there
    /// is a subscriber: a declared delegate's names the declared type. Without the feature
    /// `trace` the span is zero-sized and `span` an inlined empty function.
    #[inline(always)]
    pub(crate) fn broadcast_traced<A: Clone>(
        &self,
        args: A,
        mut call: impl FnMut(&C, A),
        span: impl FnOnce() -> crate::trace::Span,
    ) {
        match self.unmuted() {
            Some(block) => {
                let _span = span();
                block.walk_outlined(args, move |subscriber, args| {
                    call(subscriber, args);
                    false
                });
            }
            // No subscriber, or the list is muted (A2): the argument is the caller's, dropped
            // here (R2: guarded if this broadcast runs while the thread unwinds).
            None => drop_user(args),
        }
    }

    /// [`broadcast_with`](Self::broadcast_with) with an early stop: once `call` returns `true`
    /// no further subscriber runs, and this returns `true` (X7: combiners that stop at the first
    /// result they want), or once a call asks for a stop
    /// ([`stop_after_call`](Self::stop_after_call)). Never allocates. Whatever `call` does after
    /// the subscriber returned (combining the result) is part of that subscriber's call for the
    /// rules (M4, M13).
    ///
    /// Always inlined: with the empty list's guarded drop of the argument, `#[inline]` no longer
    /// was, and the bus's send paid 12 to 17 instructions for the call (callgrind).
    #[inline(always)]
    pub fn broadcast_until_with<A: Clone>(&self, args: A, call: impl FnMut(&C, A) -> bool) -> bool {
        self.broadcast_until_traced(args, call, crate::trace::none)
    }

    /// [`broadcast_until_with`](Self::broadcast_until_with) whose trace span (V2) `span` makes,
    /// when there is a subscriber: the combining forms of multicast delegates (`broadcast_fold`,
    /// `broadcast_until`) are broadcasts of their own; the bus's channel walk, whose span is the
    /// send's, passes none. Without the feature `trace` the span is zero-sized and `span` an
    /// inlined empty function.
    #[inline(always)]
    pub(crate) fn broadcast_until_traced<A: Clone>(
        &self,
        args: A,
        call: impl FnMut(&C, A) -> bool,
        span: impl FnOnce() -> crate::trace::Span,
    ) -> bool {
        match self.unmuted() {
            Some(block) => {
                let _span = span();
                block.walk::<A, true>(args, call)
            }
            None => {
                drop_user(args);
                false
            }
        }
    }

    /// The event processor's dispatch: runs subscribers in order until one `call` returns `true`
    /// (then returns `true`), for a list whose subscribers hold their owner weakly themselves
    /// (P3). `upgrade` turns a subscriber into a strong reference (`None`: its owner is dead,
    /// and the entry is pruned, M9); `call` runs on that reference, so no reference into the list
    /// is held while handler code runs, and a handler removed meanwhile is dropped once its
    /// call returns (the list's own reference is weak, and goes when the dispatch ends).
    ///
    /// `upgrade` must not run user code (the loop reads the slot without a borrow meanwhile);
    /// the processor passes `Weak::upgrade`.
    pub(crate) fn dispatch_until<T>(
        &self,
        mut upgrade: impl FnMut(&C) -> Option<T>,
        mut call: impl FnMut(T) -> bool,
    ) -> bool {
        let Some(block) = self.unmuted() else {
            return false;
        };
        let _span = crate::trace::broadcast::<C>();
        let Some(locked) = Locked::new(block) else {
            return block.walk_merging((), |subscriber, ()| {
                upgrade(subscriber).is_some_and(&mut call)
            });
        };
        for entry in locked.entries {
            // Removed, owned, blocked or one-shot: the slow path (owners:
            // `upgrade` checks), so the common path tests the state once.
            if entry.state() & !OWNED != 0 {
                if dispatch_slow(block, entry, &mut upgrade, &mut call) {
                    return true;
                }
                continue;
            }
            // SAFETY: `locked` is held and the entry is live (checked above, no user code ran
            // since); the reference is only used by `upgrade`, which runs no user code.
            let callable = unsafe { entry.live_callable() };
            let Some(strong) = upgrade(callable) else {
                block.prune(entry);
                continue;
            };
            let _call = crate::trace::subscriber(entry.site());
            if call(strong) {
                return true;
            }
        }
        false
    }

    /// Asks the [`broadcast_until_with`](Self::broadcast_until_with) loop that is calling a
    /// subscriber of this list right now to stop once that call returns, as if `call` had
    /// returned `true`: how a subscriber stops the broadcast it runs in from inside its call
    /// (the message bus's `consume`, GB3) with one test of the list's state word after each
    /// call. Whether the request was recorded: `false` when no broadcast of this list runs. The
    /// merging walk (a nested broadcast while added subscribers wait) does not stop for it (it
    /// calls the rest; the caller makes sure they do nothing) and drops it when it ends. Runs
    /// no user code.
    ///
    /// Ask only from the call to be stopped, of a `broadcast_until_with` loop: the innermost
    /// loop of this list takes the request when its current call returns, whoever asked.
    pub(crate) fn stop_after_call(&self) -> bool {
        self.block().is_some_and(Block::stop_after_call)
    }

    /// Starts a broadcast: locks the list until the returned [`Broadcast`] is dropped and yields
    /// the live subscribers that were present at this moment, in order (M1, M2). `None` for a
    /// list that never had a subscriber, and for a muted one (A2).
    pub fn begin(&self) -> Option<Broadcast<'_, C>> {
        self.unmuted().map(Block::begin)
    }

    /// The block, if a subscriber was ever added and no mute of the list is in force (A2): what
    /// every broadcast starts from. One load and test more than [`block`](Self::block), per
    /// broadcast (not per subscriber).
    #[inline(always)]
    fn unmuted(&self) -> Option<&Block<C>> {
        self.block().filter(|block| block.mutes.get() == 0)
    }
}

impl<C: Subscriber> Block<C> {
    /// See [`InvocationList::stop_after_call`]: sets [`STOP`] (with [`NEEDS_SETTLE`], so the
    /// outermost broadcast's end clears a request that no loop took).
    pub(super) fn stop_after_call(&self) -> bool {
        if !self.is_broadcasting() {
            return false;
        }
        self.state.set(self.state.get() | STOP | NEEDS_SETTLE);
        true
    }

    /// Clears [`STOP`]; whether it was set.
    #[inline(always)]
    pub(super) fn take_stop(&self) -> bool {
        let state = self.state.get();
        self.state.set(state & !STOP);
        state & STOP != 0
    }

    /// Starts a broadcast over this block (see [`InvocationList::begin`]).
    #[inline]
    pub(super) fn begin(&self) -> Broadcast<'_, C> {
        // Outside broadcasts, subscribers deferred by a change of priority or an add above the
        // lowest priority are merged first (`HAS_PENDING` flags them).
        if self.state.get() & HAS_PENDING != 0 {
            self.merge_deferred();
        }
        self.begin_in_place()
    }

    /// [`begin`](Self::begin) without the merge of deferred subscribers: the lock of an
    /// operation that holds places in the main list (it must not move under it).
    pub(super) fn begin_in_place(&self) -> Broadcast<'_, C> {
        // Pending subscribers present now were added before this (nested) broadcast began: they
        // run in it, merged in order. Later ones never do (their ids reach `limit`).
        let merge_pending = self.lock() & HAS_PENDING != 0;
        Broadcast {
            block: self,
            entries: Some(self.entries.borrow()),
            limit: if merge_pending {
                DelegateHandle::next_id()
            } else {
                0
            },
            merge_pending,
            index: 0,
            last_key: None,
        }
    }

    /// [`walk`](Self::walk) out of line, for [`InvocationList::broadcast_with`].
    #[inline(never)]
    fn walk_outlined<A: Clone>(&self, args: A, visit: impl FnMut(&C, A) -> bool) {
        self.walk::<A, false>(args, visit);
    }

    /// The broadcast loop: `visit(subscriber, args)` for each live subscriber present when it
    /// began, until `visit` returns `true` (then returns `true`), or, if `STOPS`, until a call
    /// asks for a stop ([`stop_after_call`](Self::stop_after_call)). `args` is cloned for every
    /// subscriber but the last live one, which gets the original (M11; the last is found at the
    /// start: a later removal can only make fewer clones). The clone is made before the entry it
    /// is for is checked (M13): see [`visit_cloned`].
    ///
    /// The common case is inlined here and kept small (every instruction of it runs per
    /// broadcast or per subscriber, BENCHMARKS.md): nothing waits to be merged, no enclosing
    /// loop's stop is pending, and the last entry is live. Then each subscriber costs one test of
    /// its state word before its call (and, if `STOPS`, one of the list's after it): a removal
    /// during the broadcast leaves the callable in its slot until the outermost broadcast ends,
    /// so nothing is recorded per call (M4). A dead or blocked last entry and a clone that
    /// removed its subscriber take the outlined paths.
    #[inline(always)]
    fn walk<A: Clone, const STOPS: bool>(
        &self,
        args: A,
        mut visit: impl FnMut(&C, A) -> bool,
    ) -> bool {
        // The argument and its clones are guarded until they are handed to a subscriber: a
        // panic meanwhile (a subscriber's, an argument's `Clone`) drops them under the guard
        // (R2). Free when nothing panics: each is taken out of its guard by a move.
        let args = Guarded::new(args);
        // Declared after the argument, so it ends first: before the argument is dropped.
        let Some(locked) = Locked::new(self) else {
            return self.walk_aside::<A, STOPS>(args.into_inner(), visit);
        };
        let entries = locked.entries;
        if let [only] = entries
            && only.state() == 0
        {
            return call_live::<C, STOPS>(self, only, |current| visit(current, args.into_inner()));
        }
        let (before, last) = match entries.split_last() {
            Some((last, before)) if last.state() == 0 => (before, last),
            _ => return self.walk_general::<A, STOPS>(entries, args, visit),
        };
        match self.call_each::<A, STOPS>(before, &*args, &mut visit) {
            Each::Done => {
                visit_entry::<C, STOPS>(self, last, |current| visit(current, args.into_inner()))
            }
            Each::Stopped => true,
            Each::Spare(rest, cloned) => {
                self.walk_with_spare::<A, STOPS>(rest, last, &[], args, cloned, visit)
            }
        }
    }

    /// [`walk`](Self::walk) when [`Locked::new`] declined: subscribers added during an
    /// enclosing broadcast wait (the merging walk), or the call of an enclosing loop asked for
    /// a stop, which is set aside until this loop ends ([`StopAside`]).
    #[cold]
    #[inline(never)]
    fn walk_aside<A: Clone, const STOPS: bool>(
        &self,
        args: A,
        visit: impl FnMut(&C, A) -> bool,
    ) -> bool {
        if self.state.get() & HAS_PENDING != 0 {
            return self.walk_merging(args, visit);
        }
        let _aside = StopAside::new(self);
        // No stop is pending now, nor anything to merge: the common loop.
        self.walk::<A, STOPS>(args, visit)
    }

    /// The loop of [`walk`](Self::walk) over the subscribers before the last live one: each
    /// gets a clone of `args`, made before it is checked (M13). Stops at a subscriber that asks
    /// to, or at one removed during its own argument's clone (the clone is handed back for the
    /// next subscriber, with the entries after that one).
    #[inline(always)]
    fn call_each<'e, A: Clone, const STOPS: bool>(
        &self,
        before: &'e [Entry<C>],
        args: &A,
        visit: &mut impl FnMut(&C, A) -> bool,
    ) -> Each<'e, C, A> {
        for entry in before {
            if entry.state() != 0 && !live_slow(self, entry) {
                continue;
            }
            // The argument's clone is user code (M13): this entry is checked again after it, as
            // the clone may have removed it or dropped its owner (M3, M9).
            let cloned = Guarded::new(args.clone());
            if entry.state() != 0 && !live_slow_claim(self, entry) {
                // Rare: the clone waits for the next subscriber.
                return Each::Spare(rest_after(before, entry), cloned);
            }
            if call_live::<C, STOPS>(self, entry, |current| visit(current, cloned.into_inner())) {
                return Each::Stopped;
            }
        }
        Each::Done
    }

    /// [`walk`](Self::walk) for a last entry that is not plainly live (removed, owned, blocked,
    /// one-shot).
    #[cold]
    #[inline(never)]
    fn walk_general<A: Clone, const STOPS: bool>(
        &self,
        entries: &[Entry<C>],
        args: Guarded<A>,
        mut visit: impl FnMut(&C, A) -> bool,
    ) -> bool {
        // The last live subscriber, found once: later ones cannot appear (M2); if it is removed
        // before it runs, no call is told it is the last (M11 then clones for fewer than N).
        let (before, last, after) = match entries.split_last() {
            Some((last, before)) if last.state() == 0 => (before, last, &[][..]),
            _ => match entries.iter().rposition(|entry| self.is_live(entry)) {
                Some(index) => (&entries[..index], &entries[index], &entries[index + 1..]),
                None => {
                    prune_passed(self, entries);
                    return false;
                }
            },
        };
        match self.call_each::<A, STOPS>(before, &*args, &mut visit) {
            Each::Done => self.walk_last::<A, STOPS>(last, after, args, visit),
            Each::Stopped => true,
            Each::Spare(rest, cloned) => {
                self.walk_with_spare::<A, STOPS>(rest, last, after, args, cloned, visit)
            }
        }
    }

    /// The end of [`walk`](Self::walk): the last live subscriber gets the original argument,
    /// then the entries after it are passed (those whose owner died are pruned).
    #[inline(always)]
    fn walk_last<A, const STOPS: bool>(
        &self,
        last: &Entry<C>,
        after: &[Entry<C>],
        args: Guarded<A>,
        mut visit: impl FnMut(&C, A) -> bool,
    ) -> bool {
        if visit_entry::<C, STOPS>(self, last, |current| visit(current, args.into_inner())) {
            return true;
        }
        prune_passed(self, after);
        false
    }

    /// The rest of [`walk`](Self::walk) once a clone was made for a subscriber removed during
    /// that clone: it is kept for the next subscriber (M11: no extra clone), and dropped (user
    /// code) after the loop if no subscriber is left for it.
    #[cold]
    #[inline(never)]
    fn walk_with_spare<A: Clone, const STOPS: bool>(
        &self,
        before: &[Entry<C>],
        last: &Entry<C>,
        after: &[Entry<C>],
        args: Guarded<A>,
        spare: Guarded<A>,
        mut visit: impl FnMut(&C, A) -> bool,
    ) -> bool {
        let mut spare = Guarded::new(Some(spare.into_inner()));
        for entry in before {
            if visit_cloned::<C, A, STOPS>(self, entry, &*args, &mut *spare, &mut visit) {
                return true;
            }
        }
        self.walk_last::<A, STOPS>(last, after, args, visit)
    }

    /// [`walk`](Self::walk) while subscribers added during an enclosing broadcast wait (rare: a
    /// nested broadcast after an add): merges them in order through the [`Broadcast`] iterator,
    /// which calls clones of the subscribers. Same order of checks as `walk`: the argument is
    /// cloned before the subscriber it is for is taken, and a subscriber removed in that clone
    /// does not run. It does not stop for [`stop_after_call`](Self::stop_after_call) (an
    /// enclosing loop's request is set aside meanwhile, and one made here ends with it).
    #[cold]
    #[inline(never)]
    fn walk_merging<A: Clone>(&self, args: A, mut visit: impl FnMut(&C, A) -> bool) -> bool {
        let mut broadcast = self.begin();
        // Declared after `broadcast`: put back before it unlocks.
        let _aside = StopAside::new(self);
        let Some(last) = broadcast.last_id() else {
            while broadcast.next_entry().is_some() {}
            return false;
        };
        let mut args = Guarded::new(Some(args));
        let mut spare = Guarded::new(None);
        while let Some(id) = broadcast.peek_id() {
            let args = if id == last {
                args.take()
            } else if let Some(spare) = spare.take() {
                Some(spare)
            } else {
                let cloned = Guarded::new((*args).clone());
                // The clone ran user code: take the subscriber only if it is still the next one.
                if broadcast.peek_id() != Some(id) {
                    *spare = cloned.into_inner();
                    continue;
                }
                cloned.into_inner()
            };
            // None only if a subscriber followed the one that was the last (cannot happen).
            let Some(args) = args else { break };
            let Some((_, site, current)) = broadcast.next_call() else {
                break;
            };
            let _call = crate::trace::subscriber(site);
            // Dropped under the guard if the call unwinds (R2).
            if Guarded::hold(current, |current| visit(current, args)) {
                return true;
            }
        }
        false
    }
}

/// One step of the broadcast loop for a subscriber that is not the last: clones the argument
/// (unless a clone made for a subscriber removed meanwhile is left in `spare`), then checks the
/// entry, then calls it. The clone is user code (M13): it may remove this subscriber or drop its
/// owner, which must then not run (M3, M9); the clone then waits in `spare` for the next one.
#[inline(always)]
fn visit_cloned<C: Subscriber, A: Clone, const STOPS: bool>(
    block: &Block<C>,
    entry: &Entry<C>,
    args: &A,
    spare: &mut Option<A>,
    visit: &mut impl FnMut(&C, A) -> bool,
) -> bool {
    if entry.state() != 0 && !live_slow(block, entry) {
        return false;
    }
    let args = match spare.take() {
        Some(args) => {
            // No user code since the check: a one-shot entry is claimed now (X3).
            if entry.state() != 0 {
                live_slow_claim(block, entry);
            }
            args
        }
        None => {
            // Guarded until it is handed over (R2).
            let cloned = Guarded::new(args.clone());
            if entry.state() != 0 && !live_slow_claim(block, entry) {
                *spare = Some(cloned.into_inner());
                return false;
            }
            cloned.into_inner()
        }
    };
    call_live::<C, STOPS>(block, entry, |current| visit(current, args))
}

/// The entries of `entries` after `entry`, one of them (a cold path's way back from the pointer
/// the hot loop iterates with to a slice).
fn rest_after<'a, C>(entries: &'a [Entry<C>], entry: &Entry<C>) -> &'a [Entry<C>] {
    let index = (entry.addr() - entries.as_ptr().addr()) / std::mem::size_of::<Entry<C>>();
    &entries[index + 1..]
}

/// Passes entries that no call is made for (after the last live one): those whose owner died
/// are pruned (M9), as the loop would have on its way.
#[inline(always)]
fn prune_passed<C: Subscriber>(block: &Block<C>, entries: &[Entry<C>]) {
    for entry in entries {
        if entry.state() & OWNED != 0 {
            live_slow(block, entry);
        }
    }
}

/// One step of the broadcast loop: `visit` on the entry's callable if the entry is live; whether
/// the broadcast stops. `entry` must be in the main list of `block`, read by a running
/// broadcast loop that holds the list's lock.
#[inline(always)]
fn visit_entry<C: Subscriber, const STOPS: bool>(
    block: &Block<C>,
    entry: &Entry<C>,
    visit: impl FnOnce(&C) -> bool,
) -> bool {
    // Live without owner is the common case: one load and one test. The state is read right
    // before the call, as an earlier call may have removed this entry (M3), or blocked it (X4).
    if entry.state() != 0 && !live_slow_claim(block, entry) {
        return false;
    }
    call_live::<C, STOPS>(block, entry, visit)
}

/// Calls `visit` on the callable of `entry`, checked live by the caller with no user code run
/// since; whether the broadcast stops: `visit` returned `true`, or (if `STOPS`) the call asked
/// for a stop ([`Block::stop_after_call`]), which this takes. Same requirements as
/// [`visit_entry`].
#[inline(always)]
fn call_live<C: Subscriber, const STOPS: bool>(
    block: &Block<C>,
    entry: &Entry<C>,
    visit: impl FnOnce(&C) -> bool,
) -> bool {
    let _span = crate::trace::subscriber(entry.site());
    call_live_untraced::<C, STOPS>(block, entry, visit)
}

/// [`call_live`] without the subscriber's trace span (V2): for a pass whose `visit` may call
/// nothing (script delegates' filtered passes make the span themselves, around a call).
#[inline(always)]
fn call_live_untraced<C: Subscriber, const STOPS: bool>(
    block: &Block<C>,
    entry: &Entry<C>,
    visit: impl FnOnce(&C) -> bool,
) -> bool {
    // SAFETY: the caller's loop holds the list's lock for the whole call, and the entry is live
    // (checked by the caller, and no user code ran since), so its slot holds the callable; no
    // slot is emptied while a lock is held but by the settle and by operations that hold the
    // only lock (a removal during a broadcast leaves the callable in place until the outermost
    // broadcast ends, M4), so the reference stays valid for the call.
    let callable = unsafe { entry.live_callable() };
    if !STOPS {
        return visit(callable);
    }
    // This loop began with no stop pending (`Locked::new`, `StopAside`): one the call asked
    // for is its own, and goes with the call if the call unwinds. Forgotten on return.
    let unwinding = ClearStopOnUnwind(block);
    let stop = visit(callable);
    std::mem::forget(unwinding);
    if block.state.get() & STOP != 0 {
        block.take_stop();
        return true;
    }
    stop
}

/// The loops' path for entries that are removed, have an owner, or are blocked or one-shot
/// (pruning a dead owner's entry, which runs no user code during a broadcast: its callable is
/// dropped when the outermost one ends).
#[cold]
#[inline(never)]
fn live_slow<C: Subscriber>(block: &Block<C>, entry: &Entry<C>) -> bool {
    block.live_or_prune(entry)
}

/// One step of [`InvocationList::dispatch_until`] for an entry whose state is not plain
/// (removed, owned, blocked, one-shot): whether its handler consumed the
/// event. Same requirements as that loop's common step.
#[cold]
#[inline(never)]
fn dispatch_slow<C: Subscriber, T>(
    block: &Block<C>,
    entry: &Entry<C>,
    upgrade: &mut impl FnMut(&C) -> Option<T>,
    call: &mut impl FnMut(T) -> bool,
) -> bool {
    if !live_slow(block, entry) {
        return false;
    }
    // SAFETY: the dispatch loop holds the list's lock and the entry is live (checked just
    // above, no user code ran since); the reference is only used by `upgrade`, which runs no
    // user code.
    let callable = unsafe { entry.live_callable() };
    let Some(strong) = upgrade(callable) else {
        block.prune(entry);
        return false;
    };
    if entry.is_once() {
        // Removed before its call (X3); `strong` keeps the handler for it.
        block.claim(entry);
    }
    let _call = crate::trace::subscriber(entry.site());
    call(strong)
}

/// Claims `entry` if it is one-shot and still present (X3); whether it may run. For a pass that
/// filters (script delegates' native and managed passes): only the pass that calls it claims it.
fn claim_if_once<C: Subscriber>(block: &Block<C>, entry: &Entry<C>) -> bool {
    if !entry.is_once() {
        return true;
    }
    if entry.is_removed() {
        return false;
    }
    block.claim(entry);
    true
}

/// [`live_slow`] right before a call, with no user code between it and the call: a one-shot
/// entry that will run is claimed (removed first, X3). Blocked entries (X4) are skipped here,
/// on the path every entry with a non-zero state takes anyway.
#[cold]
#[inline(never)]
fn live_slow_claim<C: Subscriber>(block: &Block<C>, entry: &Entry<C>) -> bool {
    if !block.live_or_prune(entry) {
        return false;
    }
    if entry.is_once() {
        block.claim(entry);
    }
    true
}

/// A running broadcast: holds the list's lock count up and yields its subscribers.
///
/// Created by [`InvocationList::begin`]. It yields clones of the live subscribers that were
/// present when it began. Subscribers may add, remove, clear and start nested broadcasts while it
/// runs. Dropping it (also during a panic) releases the lock; the outermost one settles the list
/// (M5, M7).
///
/// Drop each yielded subscriber before asking for the next one: if it removed itself, that clone
/// is its last reference, and dropping it may run user code that removes later subscribers or
/// drops their owners, which the next call must see (M3, M9).
pub(crate) struct Broadcast<'a, C: Subscriber> {
    block: &'a Block<C>,
    /// The main list, held for the whole broadcast (it keeps its shape meanwhile). Released
    /// first on drop, so the outermost broadcast can compact.
    pub(super) entries: Option<Ref<'a, Vec<Entry<C>>>>,
    /// Pending entries with an id at least this large were added after the broadcast began (M2).
    limit: u64,
    /// Whether pending entries existed at begin (only then can any of them run in it).
    merge_pending: bool,
    /// Next index to look at in the main list.
    index: usize,
    /// Key of the last entry passed, main or pending: pending ones after it come next.
    last_key: Option<(i64, u64)>,
}

impl<C: Subscriber> fmt::Debug for Broadcast<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<C: Subscriber> Broadcast<'_, C> {
    /// The id of the next live, unblocked subscriber, without taking it. Entries passed on the
    /// way are passed for good: those whose owner died are pruned (M9), which may run user code
    /// (their callables' `Drop`), and blocked ones (X4), main or pending, are not looked at again
    /// by this broadcast even if user code unblocks them before it moves on (a walk never goes
    /// back, as the hot loops' never do). No user code runs after the returned subscriber was
    /// checked.
    fn peek_id(&mut self) -> Option<u64> {
        let block = self.block;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        loop {
            // The next pending entry this broadcast may run, if pending ones can run in it: it
            // comes first if it is earlier in dispatch order than the next main-list entry, and
            // then that entry is not passed yet (nor pruned).
            let pending = if self.merge_pending {
                let pending = block.pending.borrow();
                self.next_pending(&pending)
                    .map(|p| (p.key(), p.entry.id(), p.entry.is_blocked()))
            } else {
                None
            };
            let main = entries.get(self.index);
            if let Some((key, id, blocked)) = pending
                && main.is_none_or(|_| key < block.key_at(entries, self.index))
            {
                if !blocked {
                    return Some(id);
                }
                // Reached while blocked: passed, as the main list's blocked entries are.
                self.last_key = Some(key);
                continue;
            }
            let entry = main?;
            // Pruning runs user code: the pending list is looked at again after it.
            if block.live_or_prune(entry) {
                return Some(entry.id());
            }
            self.index += 1;
        }
    }

    /// The id of the last subscriber this broadcast would run if nothing changed. Runs no user
    /// code.
    fn last_id(&self) -> Option<u64> {
        let block = self.block;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        let main = (self.index.min(entries.len())..entries.len())
            .rev()
            .find(|&index| block.is_live(&entries[index]));
        let pending = block.pending.borrow();
        let last_pending = if self.merge_pending {
            let start = self
                .last_key
                .map_or(0, |last| pending.partition_point(|p| p.key() <= last));
            pending[start..]
                .iter()
                .rev()
                .find(|p| p.entry.id() < self.limit && p.is_live())
        } else {
            None
        };
        match (main, last_pending) {
            (Some(index), Some(p)) => Some(if p.key() > block.key_at(entries, index) {
                p.entry.id()
            } else {
                entries[index].id()
            }),
            (Some(index), None) => Some(entries[index].id()),
            (None, p) => p.map(|p| p.entry.id()),
        }
    }

    /// The first live pending entry after `last_key` that was added before this broadcast
    /// began, blocked or not ([`peek_id`](Self::peek_id) passes a blocked one).
    fn next_pending<'p>(&self, pending: &'p [Pending<C>]) -> Option<&'p Pending<C>> {
        let start = self
            .last_key
            .map_or(0, |last| pending.partition_point(|p| p.key() <= last));
        pending[start..]
            .iter()
            .find(|p| p.entry.id() < self.limit && p.is_live())
    }

    /// Starts over from the first subscriber, keeping the same set of subscribers (those present
    /// when the broadcast began) and the same lock. Script delegates use this for their second,
    /// managed pass.
    pub fn rewind(&mut self) {
        self.index = 0;
        self.last_key = None;
    }

    /// The next live subscriber with its handle's id, advancing past it: a clone of the callable,
    /// taken for a moment (no borrow of the lists is held when this returns).
    pub fn next_entry(&mut self) -> Option<(u64, C)> {
        self.next_sited().map(|(id, _, callable)| (id, callable))
    }

    /// [`next_entry`](Self::next_entry) with the subscriber's bind site (its number, for the
    /// trace of its call, V2).
    fn next_sited(&mut self) -> Option<(u64, u32, C)> {
        let id = self.peek_id()?;
        let block = self.block;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        let (key, site, callable) = match entries.get(self.index).filter(|entry| entry.id() == id) {
            Some(entry) => {
                let key = block.key_at(entries, self.index);
                self.index += 1;
                (key, entry.site(), entry.clone_callable())
            }
            None => {
                let pending = block.pending.borrow();
                // `peek_id` passed what came before it: the next pending entry is `id`.
                let found = self.next_pending(&pending).filter(|p| p.entry.id() == id)?;
                (
                    found.key(),
                    found.entry.site(),
                    found.entry.clone_callable(),
                )
            }
        };
        self.last_key = Some(key);
        // Live entries hold their callable.
        Some((id, site, callable?))
    }

    /// [`next_entry`](Self::next_entry) for a call about to be made, with the subscriber's bind
    /// site: a one-shot subscriber is claimed (removed before its call, X3). No user code runs
    /// between the check and the claim.
    pub fn next_call(&mut self) -> Option<(u64, u32, C)> {
        let (id, site, callable) = self.next_sited()?;
        self.claim_passed(id);
        Some((id, site, callable))
    }

    /// Claims the subscriber `id` just passed by [`next_entry`](Self::next_entry) if it is
    /// one-shot (X3); whether it is still present.
    fn claim_passed(&self, id: u64) -> bool {
        let block = self.block;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        let main = self
            .index
            .checked_sub(1)
            .and_then(|index| entries.get(index))
            .filter(|entry| entry.id() == id && !entry.is_moved_away());
        // The caller holds a clone of the callable for the call; the slot's goes when the
        // outermost broadcast ends, as for any subscriber removed during a broadcast (M4).
        match main {
            Some(entry) if entry.is_removed() => false,
            Some(entry) if entry.is_once() => {
                block.claim(entry);
                true
            }
            Some(_) => true,
            None => {
                let pending = block.pending.borrow();
                match block
                    .pending_index(&pending, id)
                    .map(|index| &pending[index])
                {
                    Some(p) if p.entry.is_removed() => false,
                    Some(p) => {
                        if p.entry.is_once() {
                            // Merged (and its tombstone dropped) when the outermost one ends.
                            p.entry.mark_removed();
                        }
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// The next live subscriber for which `filter` returns true, skipping others, claimed if it
    /// is one-shot (X3). `filter` runs with no borrow of the lists held; a subscriber it removed
    /// is skipped.
    #[cfg(test)]
    pub fn next_matching(&mut self, filter: impl FnMut(&C) -> bool) -> Option<C> {
        self.next_matching_sited(filter)
            .map(|(_, callable)| callable)
    }

    /// [`next_matching`](Self::next_matching) with the subscriber's bind site (its number, for
    /// the trace of its call, V2).
    fn next_matching_sited(&mut self, mut filter: impl FnMut(&C) -> bool) -> Option<(u32, C)> {
        loop {
            let (id, site, callable) = self.next_sited()?;
            if filter(&callable) && self.claim_passed(id) {
                return Some((site, callable));
            }
        }
    }

    /// Calls `call` on every remaining live subscriber for which `filter` returns true, in
    /// order, through a reference (no clone), and advances past them: what a `while let` loop
    /// over [`next_matching`](Self::next_matching) does, faster. Script delegates use it for
    /// their native pass, then [`rewind`](Self::rewind) and their managed pass.
    pub fn for_each_matching(
        &mut self,
        mut filter: impl FnMut(&C) -> bool,
        mut call: impl FnMut(&C),
    ) {
        if self.merge_pending {
            // Rare: a nested broadcast while subscribers added during the outer one wait.
            while let Some((site, subscriber)) = self.next_matching_sited(&mut filter) {
                let _call = crate::trace::subscriber(site);
                // Dropped under the guard if the call unwinds (R2).
                Guarded::hold(subscriber, &mut call);
            }
            return;
        }
        let block = self.block;
        let entries: &[Entry<C>] = self.entries.as_deref().map_or(&[], Vec::as_slice);
        for entry in &entries[self.index.min(entries.len())..] {
            if entry.state() != 0 && !live_slow(block, entry) {
                continue;
            }
            call_live_untraced::<C, false>(block, entry, |subscriber| {
                // A one-shot entry is claimed only by the pass whose filter takes it (X3).
                if filter(subscriber) && claim_if_once(block, entry) {
                    // A span for the call only: the other pass's listeners are passed here.
                    let _call = crate::trace::subscriber(entry.site());
                    call(subscriber);
                }
                false
            });
        }
        self.index = entries.len();
    }
}

impl<C: Subscriber> Iterator for Broadcast<'_, C> {
    type Item = C;

    fn next(&mut self) -> Option<C> {
        self.next_entry().map(|(_, callable)| callable)
    }
}

impl<C: Subscriber> Drop for Broadcast<'_, C> {
    #[inline]
    fn drop(&mut self) {
        // Release the shared borrow first: the outermost broadcast compacts the list.
        self.entries = None;
        self.block.unlock();
    }
}
