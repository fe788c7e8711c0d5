//! The thread-safe delegate's current list, and how a broadcast keeps the version it reads from
//! being freed: hazard slots, with the store-load fence moved to the writer (TS3).
//!
//! A [`Current`] holds one version of a value (a list of entries) behind an atomic pointer.
//! A reader ([`Current::protect`]) announces the version it is about to read in a slot of its
//! thread's record, then checks that the pointer still names it; a writer ([`Current::update`])
//! publishes a new version and *retires* the old one: it is freed once no slot names it and no
//! pin holds it. The store of the slot and the check must not be reordered (a store-load pair):
//! on Linux (x86-64, AArch64) the reader's side is only a compiler fence, and the writer pays
//! for both with `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which runs a full barrier on
//! every running thread of the process before it returns; elsewhere, under Miri and under loom,
//! both sides use `fence(SeqCst)`. So a broadcast writes only its own thread's cache line: no
//! reference count and no shared slot.
//!
//! **When an old version is freed.** At once by the change that replaced it if no broadcast
//! reads it; otherwise at the end of the last broadcast reading it (that broadcast's thread
//! frees it, as the broadcast returns), or at the next change of any thread-safe delegate,
//! whichever comes first. Freeing drops the callables that version alone held (user code,
//! R2-guarded), never under a lock.
//!
//! **Costs.** `protect`: a thread-local access, three plain stores and two loads (no atomic
//! read-modify-write, no fence instruction on Linux); its end: two plain stores and a load.
//! Each thread has [`SLOTS`] slots, one per nesting level of broadcasts on that thread; a
//! deeper broadcast (or one from a thread-local destructor that runs after the thread's record
//! was returned) pins the version instead: the writers' lock and an atomic increment. `update`:
//! the copy, a `membarrier` system call (a few microseconds: it interrupts the other CPUs that
//! run this process's threads) and a scan of every slot of every thread record (threads that
//! ever ran a broadcast at once, times [`SLOTS`]).
//!
//! This is the only `unsafe` of the thread-safe delegate: the raw version pointers.

use std::marker::PhantomData;
use std::ptr;

#[cfg(loom)]
use loom::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering},
};
#[cfg(not(loom))]
use std::sync::{
    Mutex, MutexGuard, PoisonError,
    atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering},
};

use crate::drops::drop_user;

/// Slots per thread: broadcasts nested this deep on one thread read without a lock.
#[cfg(not(loom))]
pub(super) const SLOTS: usize = 8;
/// Under loom, two: every slot is a branch of the model at each scan (the third level of
/// nesting takes the pin, which the models then cover too).
#[cfg(loom)]
pub(super) const SLOTS: usize = 2;

/// What every version starts with (the erased part the reclamation reads).
#[repr(C)]
struct Header {
    /// Readers that hold the version without a slot (nesting deeper than [`SLOTS`]).
    pins: AtomicUsize,
    /// Under loom, an access record: a read by every reader, a write by the reclamation, so
    /// loom reports a version freed while a broadcast reads it.
    #[cfg(loom)]
    cell: loom::cell::UnsafeCell<()>,
}

/// One version of the value.
#[repr(C)]
struct Version<T> {
    header: Header,
    value: T,
}

impl<T> Version<T> {
    fn boxed(value: T) -> *mut Version<T> {
        Box::into_raw(Box::new(Version {
            header: Header {
                pins: AtomicUsize::new(0),
                #[cfg(loom)]
                cell: loom::cell::UnsafeCell::new(()),
            },
            value,
        }))
    }

    /// Frees a version made by [`boxed`](Self::boxed), erased.
    ///
    /// # Safety
    /// `header` came from `boxed` for this `T`, is no longer published, and nothing reads it.
    unsafe fn free(header: *const Header) {
        // SAFETY: the caller's contract; `Header` is the first field of a `repr(C)` struct, so
        // the pointers are the same.
        let version = unsafe { Box::from_raw(header.cast::<Version<T>>().cast_mut()) };
        #[cfg(loom)]
        version.header.cell.with_mut(|_| ());
        drop_user(version);
    }
}

/// A thread's slots, in the process-wide list of records (never freed: a thread's exit returns
/// its record for the next thread). Aligned to two cache lines (the pair an x86-64 prefetcher
/// fetches together), so that no other thread's record, or anything else written often, shares
/// a line with the slots and the depth its thread writes at every broadcast.
#[repr(align(128))]
struct Record {
    slots: [AtomicPtr<Header>; SLOTS],
    /// How many slots the owning thread uses (only that thread reads or writes it).
    depth: AtomicUsize,
    in_use: AtomicBool,
    /// The next record; set before this one is published, never changed.
    next: *const Record,
}

/// A retired version: not published any more, freed once unprotected.
struct Retired {
    header: *const Header,
    free: unsafe fn(*const Header),
}

// SAFETY: a retired version is only freed once, by whoever takes it out of the retired list,
// and what it holds is `Send + Sync` (`Current<T>` requires it).
unsafe impl Send for Retired {}

/// The records and the retired versions, process-wide.
struct Domain {
    records: AtomicPtr<Record>,
    retired: Mutex<Vec<Retired>>,
    /// `retired.len()`, read without the lock by every reader's end.
    pending: AtomicUsize,
}

#[cfg(not(loom))]
static DOMAIN: Domain = Domain {
    records: AtomicPtr::new(ptr::null_mut()),
    retired: Mutex::new(Vec::new()),
    pending: AtomicUsize::new(0),
};

#[cfg(not(loom))]
#[inline(always)]
fn domain() -> &'static Domain {
    &DOMAIN
}

#[cfg(loom)]
loom::lazy_static! {
    static ref DOMAIN: Domain = Domain {
        records: AtomicPtr::new(ptr::null_mut()),
        retired: Mutex::new(Vec::new()),
        pending: AtomicUsize::new(0),
    };
}

#[cfg(loom)]
fn domain() -> &'static Domain {
    &DOMAIN
}

/// Under loom, every execution starts from a fresh domain: its records go with it.
#[cfg(loom)]
impl Drop for Domain {
    fn drop(&mut self) {
        let mut record = self.records.load(Ordering::Acquire);
        while !record.is_null() {
            // SAFETY: records come from `Box::into_raw` in `Local::new` and this execution's
            // threads have all ended.
            let boxed = unsafe { Box::from_raw(record) };
            record = boxed.next.cast_mut();
        }
        let retired = std::mem::take(&mut *self.retired.lock().unwrap());
        for retired in retired {
            // SAFETY: unpublished, and no thread of the execution runs any more.
            unsafe { (retired.free)(retired.header) };
        }
    }
}

/// Locks a mutex that no user code runs under (poisoning cannot happen; if it did, what it
/// guards is consistent anyway).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    return mutex.lock().unwrap_or_else(PoisonError::into_inner);
    #[cfg(loom)]
    return mutex.lock().unwrap();
}

/// The fences: asymmetric (`membarrier`) where it is available, `fence(SeqCst)` on both sides
/// otherwise.
mod barrier {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(miri),
        not(loom)
    ))]
    mod asymmetric {
        use std::sync::Once;
        use std::sync::atomic::{AtomicBool, Ordering};

        #[cfg(target_arch = "x86_64")]
        const SYS_MEMBARRIER: std::ffi::c_long = 324;
        #[cfg(target_arch = "aarch64")]
        const SYS_MEMBARRIER: std::ffi::c_long = 283;
        const MEMBARRIER_CMD_PRIVATE_EXPEDITED: std::ffi::c_int = 1 << 3;
        const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: std::ffi::c_int = 1 << 4;

        unsafe extern "C" {
            /// The C library's system-call entry (glibc and musl both have it).
            fn syscall(number: std::ffi::c_long, ...) -> std::ffi::c_long;
        }

        fn membarrier(command: std::ffi::c_int) -> bool {
            // SAFETY: `membarrier(cmd, flags, cpu_id)` reads no memory of ours; an unknown or
            // refused command returns -1.
            unsafe {
                syscall(
                    SYS_MEMBARRIER,
                    command,
                    0 as std::ffi::c_uint,
                    0 as std::ffi::c_int,
                ) == 0
            }
        }

        /// Whether the writers' `membarrier` stands for the readers' fences (set once, before
        /// any thread reads through a slot: [`init`] runs before a thread's first protection).
        static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
        static INIT: Once = Once::new();

        pub(crate) fn init() {
            INIT.call_once(|| {
                let registered = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
                ASYMMETRIC.store(registered, Ordering::Relaxed);
            });
        }

        #[inline(always)]
        pub(crate) fn light() {
            if ASYMMETRIC.load(Ordering::Relaxed) {
                std::sync::atomic::compiler_fence(Ordering::SeqCst);
            } else {
                std::sync::atomic::fence(Ordering::SeqCst);
            }
        }

        pub(crate) fn heavy() {
            init();
            if ASYMMETRIC.load(Ordering::Relaxed) {
                // Registered, so it cannot be refused; if it were, nothing would order the
                // readers' slots: stop rather than free what a broadcast may read.
                assert!(
                    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
                    "membarrier failed after its registration"
                );
            } else {
                std::sync::atomic::fence(Ordering::SeqCst);
            }
        }
    }
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(miri),
        not(loom)
    ))]
    pub(super) use asymmetric::{heavy, init, light};

    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(miri),
        not(loom)
    )))]
    mod symmetric {
        #[cfg(loom)]
        use loom::sync::atomic::{Ordering, fence};
        #[cfg(not(loom))]
        use std::sync::atomic::{Ordering, fence};

        pub(crate) fn init() {}

        #[inline(always)]
        pub(crate) fn light() {
            fence(Ordering::SeqCst);
        }

        pub(crate) fn heavy() {
            fence(Ordering::SeqCst);
        }
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(miri),
        not(loom)
    )))]
    pub(super) use symmetric::{heavy, init, light};
}

/// This thread's record, returned for another thread at this thread's exit.
struct Local {
    record: &'static Record,
}

impl Local {
    fn new() -> Local {
        barrier::init();
        let domain = domain();
        // A record a finished thread returned, or a new one.
        let mut at = domain.records.load(Ordering::Acquire);
        while !at.is_null() {
            // SAFETY: records are never freed while their domain lives.
            let record = unsafe { &*at };
            if record
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Local { record };
            }
            at = record.next.cast_mut();
        }
        let mut head = domain.records.load(Ordering::Acquire);
        let record = Box::into_raw(Box::new(Record {
            slots: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            depth: AtomicUsize::new(0),
            in_use: AtomicBool::new(true),
            next: head,
        }));
        loop {
            match domain
                .records
                .compare_exchange(head, record, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => {
                    head = now;
                    // SAFETY: not published yet: this thread owns it.
                    unsafe { (*record).next = now };
                }
            }
        }
        Local {
            // SAFETY: published, and never freed while the domain lives.
            record: unsafe { &*record },
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // Every protection of this thread ended (they are scoped), so the slots are empty.
        self.record.depth.store(0, Ordering::Relaxed);
        self.record.in_use.store(false, Ordering::Release);
    }
}

#[cfg(not(loom))]
thread_local! {
    static LOCAL: Local = Local::new();
}
#[cfg(loom)]
loom::thread_local! {
    static LOCAL: Local = Local::new();
}

/// A value that any thread reads and replaces: see the [module documentation](self).
pub(super) struct Current<T> {
    version: AtomicPtr<Version<T>>,
    /// Serializes replacements, so that no copy-on-write loses another's change. Never held
    /// while user code runs.
    writer: Mutex<()>,
    _owns: PhantomData<Box<Version<T>>>,
}

// SAFETY: the versions are shared between threads as `&T` (T: Sync) and dropped on any thread
// (T: Send).
unsafe impl<T: Send + Sync + 'static> Send for Current<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync + 'static> Sync for Current<T> {}

impl<T: Send + Sync + 'static> Current<T> {
    pub(super) fn new(value: T) -> Self {
        Current {
            version: AtomicPtr::new(Version::boxed(value)),
            writer: Mutex::new(()),
            _owns: PhantomData,
        }
    }

    /// The current version, kept from being freed until the snapshot is dropped. No lock and
    /// no atomic read-modify-write in the common case (see the module documentation).
    #[inline(always)]
    pub(super) fn protect(&self) -> Snapshot<'_, T> {
        match LOCAL.try_with(|local| local.record) {
            Ok(record) => {
                let depth = record.depth.load(Ordering::Relaxed);
                if depth < SLOTS {
                    let slot = &record.slots[depth];
                    let mut version = self.version.load(Ordering::Acquire);
                    loop {
                        // Release: a writer that reads a later value of this slot also sees
                        // every read this thread made of the version it held before.
                        slot.store(version.cast(), Ordering::Release);
                        barrier::light();
                        let now = self.version.load(Ordering::Acquire);
                        if now == version {
                            break;
                        }
                        version = now;
                    }
                    record.depth.store(depth + 1, Ordering::Relaxed);
                    return Snapshot::new(version, Some((record, depth)));
                }
                self.pin()
            }
            Err(_) => self.pin(),
        }
    }

    /// The current version, pinned under the writers' lock (nesting deeper than the slots).
    #[cold]
    #[inline(never)]
    fn pin(&self) -> Snapshot<'_, T> {
        let _writer = lock(&self.writer);
        let version = self.version.load(Ordering::Acquire);
        // SAFETY: published, and no replacement runs while the lock is held.
        unsafe { &(*version).header }
            .pins
            .fetch_add(1, Ordering::Relaxed);
        Snapshot::new(version, None)
    }

    /// Runs `f` on the current value with replacements held off (`f` must run no user code).
    pub(super) fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let _writer = lock(&self.writer);
        // SAFETY: published, and no replacement runs (so none retires it) while the lock is
        // held.
        f(unsafe { &(*self.version.load(Ordering::Acquire)).value })
    }

    /// Replaces the value with `change(current)` and retires the old version: freed now if no
    /// broadcast reads it, else as the module documentation says. The lock is released before
    /// anything is freed.
    pub(super) fn update(&self, change: impl FnOnce(&T) -> T) {
        let old = {
            let _writer = lock(&self.writer);
            let current = self.version.load(Ordering::Acquire);
            // SAFETY: as in `read`.
            let new = Version::boxed(change(unsafe { &(*current).value }));
            self.version.swap(new, Ordering::AcqRel)
        };
        // Every slot store that came before the swap is visible after this, and every
        // protection that comes after it sees the new version when it checks.
        barrier::heavy();
        let domain = domain();
        {
            let mut retired = lock(&domain.retired);
            retired.push(Retired {
                header: old.cast(),
                free: Version::<T>::free,
            });
            domain.pending.store(retired.len(), Ordering::Release);
        }
        reclaim(false);
    }
}

impl<T> Drop for Current<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no snapshot borrows it, so nothing reads the current version.
        unsafe { Version::<T>::free(self.version.load(Ordering::Acquire).cast()) };
    }
}

/// Frees every retired version that no slot names and no pin holds. Called after each change
/// (`wait`: false) and by a reader's end while something waits (`wait`: true).
///
/// A change does not wait for the lock: whoever holds it reclaims after it, or pushes and then
/// reclaims. A reader's end waits (a short scan, no user code under the lock), so the version
/// the last broadcast reading it released is freed as that broadcast returns even while other
/// threads' changes and broadcasts hold the lock for a moment: what the docs promise.
#[cold]
#[inline(never)]
fn reclaim(wait: bool) {
    let domain = domain();
    let free: Vec<Retired> = {
        #[cfg(not(loom))]
        let mut retired = if wait {
            lock(&domain.retired)
        } else {
            match domain.retired.try_lock() {
                Ok(retired) => retired,
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            }
        };
        #[cfg(loom)]
        let mut retired = {
            let _ = wait;
            lock(&domain.retired)
        };
        let mut free = Vec::new();
        let mut index = 0;
        while index < retired.len() {
            if protected(domain, retired[index].header) {
                index += 1;
            } else {
                free.push(retired.swap_remove(index));
            }
        }
        domain.pending.store(retired.len(), Ordering::Release);
        free
    };
    for retired in free {
        // SAFETY: unpublished before the writer's barrier, and no slot names it and no pin
        // holds it after that barrier: no reader has it or can take it again.
        unsafe { (retired.free)(retired.header) };
    }
}

/// Whether a slot names `header` or a pin holds it.
fn protected(domain: &Domain, header: *const Header) -> bool {
    // SAFETY: retired versions are freed only by `reclaim`, under the retired list's lock,
    // which the caller holds.
    if unsafe { &*header }.pins.load(Ordering::Acquire) != 0 {
        return true;
    }
    let mut at = domain.records.load(Ordering::Acquire);
    while !at.is_null() {
        // SAFETY: records are never freed while their domain lives.
        let record = unsafe { &*at };
        if record
            .slots
            .iter()
            .any(|slot| ptr::eq(slot.load(Ordering::Acquire), header))
        {
            return true;
        }
        at = record.next.cast_mut();
    }
    false
}

/// A version kept from being freed while it is read: a slot of this thread's record, or a pin.
pub(super) struct Snapshot<'a, T> {
    version: *const Version<T>,
    /// This thread's record and the slot's index (its depth before), or none for a pin.
    slot: Option<(&'static Record, usize)>,
    _current: PhantomData<&'a Current<T>>,
}

impl<T> Snapshot<'_, T> {
    #[inline(always)]
    fn new(version: *const Version<T>, slot: Option<(&'static Record, usize)>) -> Self {
        #[cfg(loom)]
        // SAFETY: protected.
        unsafe { &(*version).header }.cell.with(|_| ());
        Snapshot {
            version,
            slot,
            _current: PhantomData,
        }
    }
}

impl<T> std::ops::Deref for Snapshot<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: a slot names the version or a pin holds it until this snapshot is dropped.
        unsafe { &(*self.version).value }
    }
}

impl<T> Drop for Snapshot<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(loom)]
        // SAFETY: still protected.
        unsafe { &(*self.version).header }.cell.with(|_| ());
        match self.slot {
            Some((record, depth)) => {
                // Release: a writer that reads this (or a later) value of the slot sees every
                // read made of the version.
                record.slots[depth].store(ptr::null_mut(), Ordering::Release);
                // Scoped, so the slots are used as a stack: this was the innermost one.
                record.depth.store(depth, Ordering::Relaxed);
            }
            None => {
                // SAFETY: pinned, so not freed yet.
                unsafe { &(*self.version).header }
                    .pins
                    .fetch_sub(1, Ordering::Release);
            }
        }
        if domain().pending.load(Ordering::Relaxed) != 0 {
            reclaim(true);
        }
    }
}
