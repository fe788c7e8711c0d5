//! Which subscriptions belong to which loaded game module (rule MB4).
//!
//! A subscription belongs to a module when its code lies in the module's mapped library: the
//! callable's vtable (a closure, a handler object), or, for a callable of one pointer-sized word
//! (a plain `fn` bound with `add_static`), that word. While no module is loaded, the check at add
//! time is one atomic load. While one is, the add records `(list, handle, how to remove it)`;
//! unloading the module removes every recorded subscription through the list's own `remove`, so
//! each callable is dropped before the library is unmapped.
//!
//! # Hooks in the invocation list
//!
//! The one invocation list behind every mechanism (multicast and script delegates, the event
//! processor) asks each subscriber it adds for its code (`Subscriber::code`, which calls
//! [`code_of`]) and calls [`track`] with it; the drop of a list's block calls [`forget`] with
//! the ids of its subscribers, and so does the drop of each entry (a subscription that left its
//! list by a removal or a clear), so a dropped list is never touched again.
//!
//! The stores outside the invocation list that hold a module's code do the same with a
//! [`ListAccess`] of their own block: a single-cast delegate's binding (`delegate.rs`: the
//! loader's removal drops its callable, `busy` says a call of it runs), a message bus's retained
//! and posted values and its parent relation, a registry's viewports.
//!
//! Every such block implements [`ModuleRecorded`] (safe code: whether it is busy, and what a
//! removal takes out of it) and is recorded with [`ListAccess::of`], whose generic functions are
//! the one place that turns a recorded address back into its block. The removal holds a strong
//! reference of its own while the block's `take_recorded` runs (the `Drop`s of what it removes,
//! user code, may drop the block's other references), and drops what `take_recorded` returned
//! only after that borrow of the block ended: the returned value is module code whose `Drop` may
//! free the block (the last delegate sharing a binding), and a reference a method received must
//! stay valid for the whole call (Miri checks it, under Stacked and Tree Borrows).
//!
//! # What a record points at
//!
//! A record holds the address of the list's block: the heap allocation a list makes on its first
//! add, which stays where it is however the delegate that owns it moves, until the delegate is
//! dropped (and then the record is forgotten). Subscriptions are removed on the thread that owns
//! the list; a module whose subscriptions live on another thread is unloaded without unmapping its
//! library.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use crate::handle::DelegateHandle;

/// What the coroutine executor (`crate::coroutine`, a layer above this one: this module does not
/// import it: no import circle) lets an unloading module do to its tasks: drop, unpolled, those
/// whose code `doomed` says is the module's (returning how many). Set by the executor's first
/// spawn.
pub(crate) struct TaskHooks {
    pub(crate) drop_tasks: fn(&dyn Fn(Origin) -> bool) -> usize,
}

/// The executor's hooks, once it has spawned a task.
pub(crate) static TASK_HOOKS: std::sync::OnceLock<TaskHooks> = std::sync::OnceLock::new();

/// How many module libraries are mapped: 0 makes every check one load.
static LOADED: AtomicUsize = AtomicUsize::new(0);
/// How many subscriptions are recorded: 0 makes `forget` one load.
static RECORDS: AtomicUsize = AtomicUsize::new(0);

static STATE: Mutex<Tracker> = Mutex::new(Tracker {
    ranges: Vec::new(),
    records: None,
});

fn state() -> MutexGuard<'static, Tracker> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Tracker {
    /// `(module, start, end)`: the address ranges of every loaded module's library.
    ranges: Vec<(u64, usize, usize)>,
    /// Handle id -> record.
    records: Option<HashMap<u64, Record>>,
}

/// One subscription a module made.
pub(crate) struct Record {
    pub(crate) module: u64,
    pub(crate) id: u64,
    list: *const (),
    remove: unsafe fn(*const (), DelegateHandle) -> bool,
    busy: unsafe fn(*const ()) -> bool,
    in_call: unsafe fn(*const ()) -> bool,
    pub(crate) thread: ThreadId,
    /// Left by its module's unload (MB6): on another thread's list, or in a block that was busy
    /// then (a list broadcasting, a binding being called, a value lent out). Never removed by a
    /// later round of that unload; forgotten like any record when its value goes, so while it
    /// stays, something still refers to the unloaded module's code.
    left: bool,
}

// SAFETY: `list` is only dereferenced on `thread`, the thread that owns the list (checked by the
// loader before `remove` or `busy` is called); elsewhere a record is plain data.
unsafe impl Send for Record {}

impl Record {
    /// Removes the subscription (an invocation list also compacts, dropping the callable and its
    /// weak owner now); what the block's [`ModuleRecorded::take_recorded`] returned is dropped before
    /// this returns.
    ///
    /// # Safety
    ///
    /// On `self.thread`, with the list still at its recorded address (see the module docs).
    pub(crate) unsafe fn remove(&self) -> bool {
        // SAFETY: forwarded contract.
        unsafe { (self.remove)(self.list, DelegateHandle::from_id(self.id)) }
    }

    /// Whether the subscription's block is busy ([`ModuleRecorded::busy`]: its list is
    /// broadcasting, its callable is being called, its value is lent out).
    ///
    /// # Safety
    ///
    /// As [`Record::remove`].
    pub(crate) unsafe fn busy(&self) -> bool {
        // SAFETY: forwarded contract.
        unsafe { (self.busy)(self.list) }
    }
}

/// The code addresses of a callable: its vtable, and its one word when it is that small.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Code([usize; 2]);

#[cfg(test)]
impl Code {
    /// The vtable word (tests attribute it to a fake module).
    pub(crate) fn vtable(self) -> usize {
        self.0[0]
    }
}

/// The code addresses of `callable` (the object behind an `Rc<dyn Fn(..)>`, a handler), or
/// `None` at once while no module is loaded.
#[inline]
pub(crate) fn code_of<T: ?Sized>(callable: &T) -> Option<Code> {
    if LOADED.load(Ordering::Acquire) == 0 {
        return None;
    }
    Some(code_of_slow(callable))
}

#[cold]
#[inline(never)]
fn code_of_slow<T: ?Sized>(callable: &T) -> Code {
    let pointer: *const T = callable;
    let data = pointer.cast::<()>().addr();
    let vtable = if size_of::<*const T>() == 2 * size_of::<usize>() {
        // SAFETY: a wide pointer to a trait object is two initialized words, the data pointer and
        // the vtable (whichever order), read as integers only.
        let words: [usize; 2] = unsafe { std::mem::transmute_copy(&pointer) };
        if words[0] == data { words[1] } else { words[0] }
    } else {
        0
    };
    let word = if size_of_val(callable) == size_of::<usize>()
        && align_of_val(callable) == align_of::<usize>()
    {
        // SAFETY: the object is one word with a word's alignment, so it has no padding: its
        // bytes are initialized. Read as an integer only (a `fn` pointer, typically).
        unsafe { pointer.cast::<usize>().read() }
    } else {
        0
    };
    Code([vtable, word])
}

/// The code of a `Waker`: its vtable, which lies where its `Wake` impl (or raw vtable) was
/// instantiated (a game module's library for a waker of its own type); `None` at once while no
/// module is loaded.
#[inline]
pub(crate) fn code_of_waker(waker: &std::task::Waker) -> Option<Code> {
    if LOADED.load(Ordering::Acquire) == 0 {
        return None;
    }
    let vtable = std::ptr::from_ref(waker.vtable()).addr();
    Some(Code([vtable, vtable]))
}

/// Whether `code` lies in `module`'s library.
pub(crate) fn belongs_to(module: u64, code: Option<Code>) -> bool {
    let Some(Code(words)) = code else {
        return false;
    };
    state().ranges.iter().any(|&(owner, start, end)| {
        owner == module && words.iter().any(|&word| word >= start && word < end)
    })
}

/// A block the module loader keeps records of (MB4, R5): an invocation list's block, a
/// single-cast delegate's binding, a message bus's channel, parent relation or managed
/// listeners, a viewport registry's viewports, a kept waker ([`TrackedWaker`]). A
/// [`ListAccess`] records its address; what the loader calls on it is safe code, and the one
/// cast from the recorded address back to the block is [`ListAccess::of`]'s.
///
/// (No `'static` bound: an invocation list's subscriber type need not be `'static`.)
///
/// # Safety
///
/// The implementor's `Drop` forgets every record made of it ([`forget`]), and so does whatever
/// else ends one of its recorded values (a removal, a replacement): the loader then only ever
/// reaches a live block through a record, which is what [`ListAccess`]'s cast relies on.
pub(crate) unsafe trait ModuleRecorded {
    /// What a removal takes out of the block, for the loader to drop once it no longer borrows
    /// the block: the module's value, whose `Drop` is the module's code and may drop the last
    /// reference to the block (the last delegate sharing a binding). `()` for a removal that
    /// drops its values itself (under the strong reference the loader holds meanwhile).
    type Taken;

    /// Whether the record's value is in use now (a broadcast of the list, a call of the
    /// callable, a value lent out): a removal then may not take it back at once (a list only
    /// marks it removed until its broadcast ends), so the loader keeps its record as left, still
    /// referring to the module (MB6). Runs no user code.
    fn busy(&self) -> bool;

    /// Whether the record's value is being called now and a removal could not take it back at
    /// all (a single-cast binding's callable, borrowed for a call: taking it would drop what the
    /// call uses, and nothing ends the binding later): the unload is refused meanwhile, so that
    /// the engine's retry takes it back. Runs no user code.
    fn in_call(&self) -> bool {
        false
    }

    /// Removes the value the record `record` names (refused while it is in use); whether it was
    /// there, and what the loader drops after the borrow of the block ended.
    fn take_recorded(&self, record: DelegateHandle) -> (bool, Self::Taken);
}

/// How the module loader reaches one recorded block: its address, and the two functions that
/// turn the address back into the block (the only place that does) and call its
/// [`ModuleRecorded`] methods. Made by [`ListAccess::of`], so this module names no block type
/// (N3: no import circle).
#[derive(Clone, Copy)]
pub(crate) struct ListAccess {
    /// The block (a heap allocation that stays put until the block is dropped, which calls
    /// [`forget`]).
    list: *const (),
    /// [`ModuleRecorded::take_recorded`], then the drop of what it took. Safety: as
    /// [`remove_from`].
    remove: unsafe fn(*const (), DelegateHandle) -> bool,
    /// [`ModuleRecorded::busy`]. Safety: as `remove`.
    busy: unsafe fn(*const ()) -> bool,
    /// [`ModuleRecorded::in_call`]. Safety: as `remove`.
    in_call: unsafe fn(*const ()) -> bool,
}

impl ListAccess {
    /// The access to `block`: its `Rc` allocation's address, which stays put until the last
    /// reference is dropped.
    pub(crate) fn of<T: ModuleRecorded>(block: &Rc<T>) -> ListAccess {
        ListAccess {
            // `Rc::as_ptr`: the address keeps the allocation's provenance, so `remove_from` may
            // take a strong reference of its own from it.
            list: Rc::as_ptr(block).cast(),
            remove: remove_from::<T>,
            busy: busy_of::<T>,
            in_call: in_call_of::<T>,
        }
    }

    /// The access to a [`TrackedWaker`] cell, a field of its owner's heap block (no `Rc` of its
    /// own): it takes out only a waker, running no user code, so no strong reference is needed.
    fn of_cell(cell: &TrackedWaker) -> ListAccess {
        ListAccess {
            list: std::ptr::from_ref(cell).cast(),
            remove: remove_from_cell,
            busy: busy_of::<TrackedWaker>,
            in_call: in_call_of::<TrackedWaker>,
        }
    }

    /// Calls the loader's removal for `handle`, as an unload does (unit tests of R1 and R5).
    ///
    /// # Safety
    ///
    /// As [`remove_from`].
    #[cfg(test)]
    pub(crate) unsafe fn remove(self, handle: DelegateHandle) -> bool {
        // SAFETY: forwarded contract.
        unsafe { (self.remove)(self.list, handle) }
    }

    /// Calls the loader's busy check, as an unload does (unit tests).
    ///
    /// # Safety
    ///
    /// As [`remove_from`].
    #[cfg(test)]
    pub(crate) unsafe fn busy(self) -> bool {
        // SAFETY: forwarded contract.
        unsafe { (self.busy)(self.list) }
    }
}

/// The loader's removal of a record of a `T` block: [`ModuleRecorded::take_recorded`] under a
/// strong reference of the removal's own, then the drop of that reference and of what was taken,
/// each guarded (R2, R3). The reference keeps the block alive while `take_recorded` runs user
/// code (the `Drop`s of what it removes, which may drop the block's other references: a
/// subscriber that held its own delegate); what was taken is dropped after it, when nothing
/// borrows the block (its `Drop` may free the block).
///
/// # Safety
///
/// `block` is `Rc::as_ptr` of a live `Rc<T>` owned by the calling thread (a record's block on its
/// own thread: a dropped block forgets its records, so the loader never calls this for one).
unsafe fn remove_from<T: ModuleRecorded>(block: *const (), record: DelegateHandle) -> bool {
    let block = block.cast::<T>();
    // SAFETY: contract: `block` comes from `Rc::as_ptr` of a live `Rc<T>` of this thread, so a
    // strong reference of our own may be made from it (the count it increments is given back
    // by that `Rc`'s drop).
    let block = unsafe {
        Rc::increment_strong_count(block);
        Rc::from_raw(block)
    };
    let (removed, taken) = block.take_recorded(record);
    let mut drops = crate::drops::Drops::default();
    // Possibly the last reference now: the block's `Drop` runs user `Drop`s.
    drops.drop(block);
    drops.drop(taken);
    drops.finish();
    removed
}

/// The loader's removal of a [`TrackedWaker`]'s record: [`ModuleRecorded::take_recorded`], then
/// the drop of the waker, after the reference to the cell ended (the waker's `Drop`, user code,
/// may free the cell's block).
///
/// # Safety
///
/// `cell` is the address of a live `TrackedWaker` of the calling thread (a dropped cell forgets
/// its record, and so does one whose waker is taken or replaced).
unsafe fn remove_from_cell(cell: *const (), record: DelegateHandle) -> bool {
    let (had, waker) = {
        // SAFETY: contract. The reference ends before the waker's drop runs.
        let cell = unsafe { &*cell.cast::<TrackedWaker>() };
        cell.take_recorded(record)
    };
    crate::drops::Drops::drop_one(waker);
    had
}

/// The loader's busy check of a record of a `T` block: [`ModuleRecorded::busy`].
///
/// # Safety
///
/// As [`remove_from`] (or [`remove_from_cell`] for a [`TrackedWaker`]).
unsafe fn busy_of<T: ModuleRecorded>(block: *const ()) -> bool {
    // SAFETY: contract: a live `T` of this thread; `busy` runs no user code, so nothing frees
    // the block while the reference lives.
    unsafe { &*block.cast::<T>() }.busy()
}

/// The loader's in-call check of a record of a `T` block: [`ModuleRecorded::in_call`].
///
/// # Safety
///
/// As [`busy_of`].
unsafe fn in_call_of<T: ModuleRecorded>(block: *const ()) -> bool {
    // SAFETY: forwarded contract.
    unsafe { (*block.cast::<T>()).in_call() }
}

/// Records the subscription `handle` of `list` when `code` lies in a loaded module; whether it
/// did.
pub(crate) fn track(list: ListAccess, handle: DelegateHandle, code: Option<Code>) -> bool {
    let Some(Code(words)) = code else {
        return false;
    };
    let mut state = state();
    let module = words
        .iter()
        .find_map(|&word| {
            state
                .ranges
                .iter()
                .find(|&&(_, start, end)| word >= start && word < end)
                .map(|&(module, ..)| module)
        })
        .or_else(running_module);
    let Some(module) = module else {
        return false;
    };
    insert(&mut state, module, &list, handle);
    true
}

/// Adds the record of `handle` of `list` for `module`.
fn insert(state: &mut Tracker, module: u64, list: &ListAccess, handle: DelegateHandle) {
    let record = Record {
        module,
        id: handle.id(),
        list: list.list,
        remove: list.remove,
        busy: list.busy,
        in_call: list.in_call,
        thread: std::thread::current().id(),
        left: false,
    };
    if state
        .records
        .get_or_insert_with(HashMap::new)
        .insert(handle.id(), record)
        .is_none()
    {
        RECORDS.fetch_add(1, Ordering::Release);
    }
}

/// Records `handle` of `list` for the module whose code lumina runs innermost on this thread
/// ([`running_module`]), whatever the value's own code (MB6); whether it did.
pub(crate) fn track_running(list: ListAccess, handle: DelegateHandle) -> bool {
    let Some(module) = running_module() else {
        return false;
    };
    insert(&mut state(), module, &list, handle);
    true
}

/// The module whose record the subscription `id` has, if any: what the inspector lists as a
/// subscriber's module (V1). One atomic load while nothing is recorded, else one lookup under the
/// tracker's lock.
pub(crate) fn module_of(id: u64) -> Option<u64> {
    if !recording() {
        return None;
    }
    state()
        .records
        .as_ref()?
        .get(&id)
        .map(|record| record.module)
}

/// Whether the record `id` (0: none) is `module`'s.
pub(crate) fn is_recorded_for(id: u64, module: u64) -> bool {
    id != 0
        && state()
            .records
            .as_ref()
            .and_then(|records| records.get(&id))
            .is_some_and(|record| record.module == module)
}

// ---- Wakers kept inside the runtime's own subscribers (rule R5) ----

/// The waker a runtime future left in a subscriber the runtime made (a
/// [`NextBroadcast`](crate::NextBroadcast)'s slot: the delegate's subscriber is the runtime's
/// closure, so its list records no module code for it). A waker whose vtable lies in a game
/// module's library (a `Waker` of the module's own executor) is recorded with the loader under
/// an id of its own, and the module's unload drops it, unwoken, while the library is mapped: the
/// next broadcast would otherwise wake it in the unmapped library. The record names this cell,
/// which lives in its owner's heap block (an `Rc`), and is forgotten when the cell is dropped or
/// its waker taken or replaced (R1).
#[derive(Default)]
pub(crate) struct TrackedWaker {
    waker: RefCell<Option<std::task::Waker>>,
    /// The id of its record; 0 when none.
    record: std::cell::Cell<u64>,
}

impl TrackedWaker {
    /// Whether the waker kept would wake the same task as `other`.
    pub(crate) fn will_wake(&self, other: &std::task::Waker) -> bool {
        self.waker
            .borrow()
            .as_ref()
            .is_some_and(|waker| waker.will_wake(other))
    }

    /// Keeps `waker` and returns the one it replaces (user values: the caller drops it with
    /// nothing borrowed). Records it when its code lies in a loaded module; one atomic load
    /// while none is loaded.
    pub(crate) fn replace(&self, waker: std::task::Waker) -> Option<std::task::Waker> {
        let code = code_of_waker(&waker);
        let old = self.waker.borrow_mut().replace(waker);
        self.forget();
        if code.is_some() {
            let record = DelegateHandle::new_unique();
            self.record.set(record.id());
            track(ListAccess::of_cell(self), record, code);
        }
        old
    }

    /// Takes the waker out (to wake or drop it), forgetting its record.
    pub(crate) fn take(&self) -> Option<std::task::Waker> {
        let waker = self.waker.borrow_mut().take();
        self.forget();
        waker
    }

    fn forget(&self) {
        let record = self.record.replace(0);
        if record != 0 {
            forget(std::iter::once(record));
        }
    }
}

impl Drop for TrackedWaker {
    fn drop(&mut self) {
        self.forget();
    }
}

/// The loader's access to a [`TrackedWaker`]'s record (through [`ListAccess::of_cell`]).
// SAFETY: its `Drop` forgets its record (`TrackedWaker::forget`), and so does a take or a
// replacement of its waker.
unsafe impl ModuleRecorded for TrackedWaker {
    /// The waker, dropped unwoken (its owner's future stays pending until polled again).
    type Taken = Option<std::task::Waker>;

    /// A kept waker is never running.
    fn busy(&self) -> bool {
        false
    }

    /// Takes the waker out; whether there was one.
    fn take_recorded(&self, _record: DelegateHandle) -> (bool, Self::Taken) {
        // The loader took the record already.
        self.record.set(0);
        let waker = self
            .waker
            .try_borrow_mut()
            .ok()
            .and_then(|mut waker| waker.take());
        (waker.is_some(), waker)
    }
}

// ---- Holders of values other threads made (rule R5) ----

/// A holder of values that any thread may hand it and that the game thread consumes later (a
/// message bus's inbox of posted messages): values whose code (`Drop`, vtable) may lie in a
/// module's library. Registered weakly with [`add_sweeper`]; an unload asks each live one to
/// drop, now, what belongs to the unloading module, so none of it is dropped or called after the
/// unmapping. Defined here and implemented above (the bus), so this module names no holder type
/// (N3).
pub(crate) trait Sweep: Send + Sync {
    /// Drops every held value that is `module`'s (its code lies in the module's library, or it
    /// was stored while the module's code ran: [`Origin::is_of`]); returns how many. Called on
    /// the unloading (game) thread. A holder whose values another thread moves
    /// out (into that thread's own, recorded, storage) waits for a move in progress before it
    /// looks, so a value is never between the two places, missed by both the sweep and the
    /// count of records the unload takes after it.
    fn sweep(&self, module: u64) -> usize;
}

/// The holders, weakly: a holder that is dropped is skipped, and pruned at the next add.
static SWEEPERS: Mutex<Vec<std::sync::Weak<dyn Sweep>>> = Mutex::new(Vec::new());

/// Registers a holder for [`sweep`].
pub(crate) fn add_sweeper(holder: std::sync::Weak<dyn Sweep>) {
    let mut sweepers = SWEEPERS.lock().unwrap_or_else(PoisonError::into_inner);
    sweepers.retain(|weak| weak.strong_count() > 0);
    sweepers.push(holder);
}

/// Asks every live holder to drop what belongs to `module` (its code lies in the module's
/// library); returns how many values were dropped. The registry is not locked meanwhile. Every
/// holder is swept even when a `Drop` panics; the first panic resumes at the end (R3).
pub(crate) fn sweep(module: u64) -> usize {
    let live: Vec<std::sync::Arc<dyn Sweep>> = SWEEPERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .collect();
    let mut drops = crate::drops::Drops::default();
    let mut swept = 0;
    for holder in &live {
        drops.run(|| swept += holder.sweep(module));
    }
    drop(live);
    drops.finish();
    swept
}

/// Whether any subscription is recorded: the one load a list block's drop makes.
#[inline]
pub(crate) fn recording() -> bool {
    RECORDS.load(Ordering::Acquire) != 0
}

/// Forgets the records of these handle ids: their list is being dropped.
#[cold]
pub(crate) fn forget(ids: impl Iterator<Item = u64>) {
    let mut state = state();
    let Some(records) = state.records.as_mut() else {
        return;
    };
    for id in ids {
        if records.remove(&id).is_some() {
            RECORDS.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Starts attributing code in `start..end` to `module`.
pub(crate) fn add_range(module: u64, start: usize, end: usize) {
    state().ranges.push((module, start, end));
    LOADED.fetch_add(1, Ordering::AcqRel);
}

/// Stops attributing code to `module`.
pub(crate) fn remove_range(module: u64) {
    let mut state = state();
    let before = state.ranges.len();
    state.ranges.retain(|&(owner, ..)| owner != module);
    LOADED.fetch_sub(before - state.ranges.len(), Ordering::AcqRel);
}

/// The ids of `module`'s records made on this thread, in the order they were made.
pub(crate) fn record_ids_here(module: u64) -> Vec<u64> {
    let me = std::thread::current().id();
    let state = state();
    let mut ids: Vec<u64> = state
        .records
        .iter()
        .flat_map(|records| records.values())
        .filter(|record| record.module == module && record.thread == me && !record.left)
        .map(|record| record.id)
        .collect();
    ids.sort_unstable();
    ids
}

/// Puts back a record that its module's unload took but could not end (its block was busy): it
/// stays, marked left (MB6), until its value goes (its list's settle, its binding's unbind).
pub(crate) fn keep_left(mut record: Record) {
    record.left = true;
    let mut state = state();
    if state
        .records
        .get_or_insert_with(HashMap::new)
        .insert(record.id, record)
        .is_none()
    {
        RECORDS.fetch_add(1, Ordering::Release);
    }
}

/// Takes the record of `id` out of the registry, if it is still there: a list dropped since
/// (by a `Drop` an earlier removal ran) forgot its records, and its address must not be used.
pub(crate) fn take_record(id: u64) -> Option<Record> {
    let mut state = state();
    let taken = state.records.as_mut()?.remove(&id);
    if taken.is_some() {
        RECORDS.fetch_sub(1, Ordering::Release);
    }
    taken
}

/// Calls `visit` with every record of `module` (the registry is locked meanwhile: `visit` must
/// not subscribe).
pub(crate) fn with_records(module: u64, mut visit: impl FnMut(&Record)) {
    let state = state();
    for record in state.records.iter().flat_map(|records| records.values()) {
        if record.module == module {
            visit(record);
        }
    }
}

/// Whether a recorded value of `module` on this thread is being called and cannot be taken
/// back before the call returns ([`ModuleRecorded::in_call`]).
pub(crate) fn any_in_call(module: u64) -> bool {
    let me = std::thread::current().id();
    let mut found = false;
    with_records(module, |record| {
        // SAFETY: on the block's own thread, and the block is where it was recorded (a dropped
        // block forgets its records, module docs). Runs no user code under the lock.
        found |= record.thread == me && unsafe { (record.in_call)(record.list) };
    });
    found
}

/// How many subscriptions of `module` are recorded.
pub(crate) fn count(module: u64) -> usize {
    let mut count = 0;
    with_records(module, |_| count += 1);
    count
}

/// The module whose library holds `address`, if a loaded one does.
pub(crate) fn module_at(address: usize) -> Option<u64> {
    if LOADED.load(Ordering::Acquire) == 0 {
        return None;
    }
    state()
        .ranges
        .iter()
        .find(|&&(_, start, end)| address >= start && address < end)
        .map(|&(module, ..)| module)
}

// ---- Which module's code is running on this thread (rules R5, MB6) ----

/// What code of a module lumina is running on this thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Running {
    /// Its start-up.
    StartUp,
    /// Its shut-down.
    ShutDown,
    /// A task it queued with `main_thread::enqueue`.
    Task,
}

// Reached with `try_with` only: module code may run (a queued task of a module) from a `Drop`
// while the thread's locals are destroyed, after this one is gone, and a panic there would abort
// the process (R2). Then nothing is attributed by running code: no unload can happen on the
// thread any more (its module list is gone first or with it).
thread_local! {
    /// The frames of module code lumina runs on this thread, innermost last.
    static RUNNING: RefCell<Vec<(u64, Running)>> = const { RefCell::new(Vec::new()) };
}

/// One frame of module code lumina runs; dropped when the code returned or unwound.
pub(crate) struct Frame {
    module: u64,
}

impl Drop for Frame {
    fn drop(&mut self) {
        let _ = RUNNING.try_with(|running| {
            let mut running = running.borrow_mut();
            if let Some(index) = running.iter().rposition(|&(m, _)| m == self.module) {
                running.remove(index);
            }
        });
    }
}

/// Marks `module`'s code as running until the frame is dropped.
pub(crate) fn enter(module: u64, what: Running) -> Frame {
    let _ = RUNNING.try_with(|running| running.borrow_mut().push((module, what)));
    Frame { module }
}

/// Whose a queued value is (a task of the main-thread queue, a coroutine task): the module
/// whose code was running when it was queued, and its own code addresses. Taken when the value
/// enters its store, since the running module is known only then (MB6).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Origin {
    /// The module lumina ran innermost when the value was queued (0: none).
    module: u64,
    /// The value's code addresses (`None` while no module was loaded).
    code: Option<Code>,
}

impl Origin {
    /// The origin of `value`, queued now: one atomic load while no module is loaded.
    #[inline]
    pub(crate) fn of<T: ?Sized>(value: &T) -> Origin {
        if LOADED.load(Ordering::Acquire) == 0 {
            return Origin::default();
        }
        Origin {
            module: running_module().unwrap_or(0),
            code: Some(code_of_slow(value)),
        }
    }

    /// Whether it was taken while a module was loaded: only then can it be a module's.
    #[inline]
    pub(crate) fn while_loaded(self) -> bool {
        self.code.is_some()
    }

    /// Whether the value is `module`'s: queued while its code ran, or its code lies in its
    /// library (or a library that came with it).
    pub(crate) fn is_of(self, module: u64) -> bool {
        self.module == module || belongs_to(module, self.code)
    }

    /// A frame for running the value (a queued task, a coroutine task's poll) when it is a
    /// loaded module's: the module it was queued by, else the one whose library holds its code.
    /// `None`, after one atomic load, while no module is loaded or when it is the engine's.
    #[inline]
    pub(crate) fn enter(self) -> Option<Frame> {
        if self.module != 0 {
            return Some(enter(self.module, Running::Task));
        }
        let Code(words) = self.code?;
        let module = words.iter().find_map(|&word| module_at(word))?;
        Some(enter(module, Running::Task))
    }
}

/// The module whose code lumina runs innermost on this thread, if a loaded one: what a value
/// subscribed, queued or sent from there is attributed to when its own code lies in no module's
/// library (MB6: a closure of a library the module links, generic code shared with the engine).
pub(crate) fn running_module() -> Option<u64> {
    if LOADED.load(Ordering::Acquire) == 0 {
        return None;
    }
    RUNNING
        .try_with(|running| running.borrow().last().map(|&(module, _)| module))
        .ok()
        .flatten()
}

/// Whether `module`'s start-up is running on this thread: an unload from there is refused.
pub(crate) fn starting_up(module: u64) -> bool {
    RUNNING
        .try_with(|running| running.borrow().contains(&(module, Running::StartUp)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::{
        Running, add_range, code_of, count, enter, remove_range, running_module, starting_up,
    };
    use crate::invocation::InvocationList;
    use crate::module::{ModuleId, remove_subscriptions};
    use std::any::Any;
    use std::rc::Rc;

    /// MB6: what lumina runs of a module's code is attributed to it, innermost frame first,
    /// and its start-up is seen under a task of its own.
    #[test]
    fn mb6_the_innermost_module_frame_is_the_running_module() {
        const FAKE: u64 = u64::MAX - 48;
        // Some module must be loaded for running code to count (one atomic load otherwise).
        #[cfg(not(miri))]
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        add_range(FAKE, 0, 1);
        assert_eq!(running_module(), None);
        let task = enter(3, Running::Task);
        assert_eq!(running_module(), Some(3));
        assert!(!starting_up(3));
        let start_up = enter(4, Running::StartUp);
        assert_eq!(running_module(), Some(4));
        assert!(starting_up(4));
        drop(start_up);
        assert_eq!(running_module(), Some(3));
        assert!(!starting_up(4));
        drop(task);
        assert_eq!(running_module(), None);
        remove_range(FAKE);
    }

    /// A list of `Rc<dyn Any>` subscribers, whose code is the concrete type's `Any` vtable.
    type AnyList = InvocationList<Rc<dyn Any>>;

    /// A subscriber that holds another list (the last reference to it).
    struct Holder(#[allow(dead_code)] Rc<AnyList>);

    /// A subscriber that is only recorded.
    struct Marker(#[allow(dead_code)] u8, #[allow(dead_code)] u32);

    #[test]
    fn r1_mb4_an_unload_whose_drop_frees_another_recorded_list_never_uses_its_address() {
        const FAKE: u64 = u64::MAX - 41;
        let other: Rc<AnyList> = Rc::default();
        let holder: Rc<dyn Any> = Rc::new(Holder(Rc::clone(&other)));
        let marker: Rc<dyn Any> = Rc::new(Marker(0, 0));
        // Attribute exactly these two types' code to a fake module, as a loaded library's range.
        // A placeholder range first, so that `code_of` looks (some module must be loaded): one
        // that no code word falls in, so that the values of tests running in parallel are not
        // the fake module's (the zero word, which a range at 0 would hold, is every thin
        // callable's). Under Miri, which runs one test at a time, the zero word as before.
        #[cfg(not(miri))]
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        add_range(FAKE, 0, 1);
        let vtables = [&holder, &marker].map(|it| code_of(&**it).expect("a module is loaded").0[0]);
        for vtable in vtables {
            add_range(FAKE, vtable, vtable + 1);
        }
        let list: Rc<AnyList> = Rc::default();
        // Recorded first, so removed first: its `Drop` frees `other`, whose record is next.
        let _ = list.add(holder);
        let _ = other.add(marker);
        let weak = Rc::downgrade(&other);
        drop(other);
        assert!(weak.upgrade().is_some(), "held by the holder only");
        remove_subscriptions(ModuleId::fake(FAKE));
        assert_eq!(count(FAKE), 0, "nothing left elsewhere");
        remove_range(FAKE);
        assert!(weak.upgrade().is_none(), "freed by the first removal");
        assert!(list.is_empty(), "the holder was removed");
    }

    /// A subscriber whose code only the next test attributes to its fake module.
    struct Gone(#[allow(dead_code)] u16);

    /// R1, MB4: a module's subscription that leaves its list (removed by its handle, by a
    /// clear, or pruned) while the module stays loaded leaves no record behind. Without it, the
    /// record outlived the subscription's entry, so the drop of the list (which forgets the
    /// records of the entries it still holds) missed it, and the record kept the address of the
    /// freed block: the unload's busy check and removal then used it (Miri: use after free).
    #[test]
    fn r1_mb4_a_subscription_that_left_its_list_leaves_no_record_of_the_freed_list() {
        const FAKE: u64 = u64::MAX - 47;
        let gone: Rc<dyn Any> = Rc::new(Gone(0));
        // As in the test above: a placeholder range, then exactly this type's code.
        #[cfg(not(miri))]
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        add_range(FAKE, 0, 1);
        let vtable = code_of(&*gone).expect("a module is loaded").0[0];
        add_range(FAKE, vtable, vtable + 1);
        for how in ["remove", "clear", "remove during a broadcast"] {
            let list: AnyList = InvocationList::new();
            let handle = list.add(Rc::clone(&gone));
            // A subscriber that is not the module's keeps the list from being empty.
            let _ = list.add(Rc::new(7_usize) as Rc<dyn Any>);
            assert_eq!(count(FAKE), 1, "{how}: recorded");
            match how {
                "remove" => assert!(list.remove(handle)),
                "clear" => list.clear(),
                _ => list.broadcast_with((), |_, ()| {
                    let _ = list.remove(handle);
                }),
            }
            drop(list);
            assert_eq!(count(FAKE), 0, "{how}: no record of the freed list is left");
        }
        remove_subscriptions(ModuleId::fake(FAKE));
        assert_eq!(count(FAKE), 0);
        remove_range(FAKE);
    }
}
