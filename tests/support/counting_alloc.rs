//! A counting global allocator shared by the allocation tests (M12, P2) and the benchmark report.
//!
//! Include it with `#[path = "support/counting_alloc.rs"] mod counting_alloc;`: it installs itself
//! as the binary's `#[global_allocator]`. The counter is per thread (a `const`-initialised thread
//! local without a destructor, which itself never allocates), so each measurement counts exactly
//! the allocations made by the code it wraps, whatever the test harness's other threads do.

#![allow(dead_code)] // each including binary uses part of it

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator, counting every allocation of the current thread.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed on this thread (requested sizes).
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: during thread teardown the slot may be gone; such allocations are not ours.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

fn count_bytes(delta: i64) {
    let _ = LIVE_BYTES.try_with(|bytes| bytes.set(bytes.get() + delta));
}

// Every method forwards to `System` with the caller's own arguments; counting touches only a
// thread-local `Cell`, which neither allocates nor unwinds.
// SAFETY: `System` is a correct allocator and the caller's obligations pass on unchanged.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        count_bytes(layout.size() as i64);
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        count_bytes(layout.size() as i64);
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        count_bytes(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count_bytes(-(layout.size() as i64));
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// How many allocations `f` made on this thread.
pub fn allocations_in<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = ALLOCATIONS.with(Cell::get);
    let result = f();
    let after = ALLOCATIONS.with(Cell::get);
    (after - before, result)
}

/// How many heap bytes (requested sizes) `f` left allocated on this thread, with its result.
pub fn live_bytes_in<R>(f: impl FnOnce() -> R) -> (i64, R) {
    let before = LIVE_BYTES.with(Cell::get);
    let result = f();
    let after = LIVE_BYTES.with(Cell::get);
    (after - before, result)
}

pub fn allocations(f: impl FnOnce()) -> u64 {
    allocations_in(f).0
}
