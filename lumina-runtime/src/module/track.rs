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
//! [`code_of`]) and calls [`track`] with it, and the drop of a list's block calls [`forget`] with
//! the ids of its subscribers, so a dropped list is never touched again.
//!
//! # What a record points at
//!
//! A record holds the address of the list's block: the heap allocation a list makes on its first
//! add, which stays where it is however the delegate that owns it moves, until the delegate is
//! dropped (and then the record is forgotten). Subscriptions are removed on the thread that owns
//! the list; a module whose subscriptions live on another thread is unloaded without unmapping its
//! library.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use crate::handle::DelegateHandle;
use crate::invocation::{Block, Subscriber};

/// What the coroutine executor (`crate::coroutine`, a layer above this one: this module does not
/// import it: no import circle) lets an unloading module do to its tasks: drop, unpolled, those whose code
/// `doomed` says is the module's (returning how many), and say whether the task being polled now
/// runs such code. Set by the executor's first spawn.
pub(crate) struct TaskHooks {
    pub(crate) drop_tasks: fn(&dyn Fn(Option<Code>) -> bool) -> usize,
    pub(crate) running: fn(&dyn Fn(Option<Code>) -> bool) -> bool,
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
    pub(crate) thread: ThreadId,
}

// SAFETY: `list` is only dereferenced on `thread`, the thread that owns the list (checked by the
// loader before `remove` or `busy` is called); elsewhere a record is plain data.
unsafe impl Send for Record {}

impl Record {
    /// Removes the subscription and compacts its list, dropping the callable (and its weak owner)
    /// now.
    ///
    /// # Safety
    ///
    /// On `self.thread`, with the list still at its recorded address (see the module docs).
    pub(crate) unsafe fn remove(&self) -> bool {
        // SAFETY: forwarded contract.
        unsafe { (self.remove)(self.list, DelegateHandle::from_id(self.id)) }
    }

    /// Whether the subscription's list is broadcasting.
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

/// Whether `code` lies in `module`'s library.
pub(crate) fn belongs_to(module: u64, code: Option<Code>) -> bool {
    let Some(Code(words)) = code else {
        return false;
    };
    state().ranges.iter().any(|&(owner, start, end)| {
        owner == module && words.iter().any(|&word| word >= start && word < end)
    })
}

/// Records the subscription `handle` of `list` when `code` lies in a loaded module.
pub(crate) fn track<C: Subscriber>(block: &Block<C>, handle: DelegateHandle, code: Option<Code>) {
    let Some(Code(words)) = code else {
        return;
    };
    let mut state = state();
    let module = words.iter().find_map(|&word| {
        state
            .ranges
            .iter()
            .find(|&&(_, start, end)| word >= start && word < end)
            .map(|&(module, ..)| module)
    });
    let Some(module) = module else {
        return;
    };
    let record = Record {
        module,
        id: handle.id(),
        list: std::ptr::from_ref(block).cast(),
        remove: remove_from::<C>,
        busy: busy::<C>,
        thread: std::thread::current().id(),
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

/// # Safety
///
/// `list` points at a live list block (`Block<C>`) owned by the calling thread.
unsafe fn remove_from<C: Subscriber>(list: *const (), handle: DelegateHandle) -> bool {
    // SAFETY: contract.
    let block = unsafe { &*list.cast::<Block<C>>() };
    block.remove_now(handle)
}

/// # Safety
///
/// As [`remove_from`].
unsafe fn busy<C: Subscriber>(list: *const ()) -> bool {
    // SAFETY: contract.
    let block = unsafe { &*list.cast::<Block<C>>() };
    block.is_broadcasting()
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

/// Takes every record of `module` out of the registry.
pub(crate) fn take_records(module: u64) -> Vec<Record> {
    let mut state = state();
    let Some(records) = state.records.as_mut() else {
        return Vec::new();
    };
    let ids: Vec<u64> = records
        .values()
        .filter(|record| record.module == module)
        .map(|record| record.id)
        .collect();
    let mut taken: Vec<Record> = ids.iter().filter_map(|id| records.remove(id)).collect();
    RECORDS.fetch_sub(taken.len(), Ordering::Release);
    taken.sort_by_key(|record| record.id);
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

/// How many subscriptions of `module` are recorded.
pub(crate) fn count(module: u64) -> usize {
    let mut count = 0;
    with_records(module, |_| count += 1);
    count
}
