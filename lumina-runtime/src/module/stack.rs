//! Whether a module's code is on the calling thread's stack (rule R5): the return addresses of
//! the stack's frames, walked with the platform unwinder, checked against the module's address
//! ranges. What the explicit frames of `track` (start-up, shut-down, queued tasks) cannot see is
//! caught here: a module's `Drop` run by the engine's own `clear` or `remove`, a method of a
//! module object the engine calls, anything that reaches `unload` from the module's code by way
//! of the engine's.
//!
//! Only an unload walks the stack (once), so it costs nothing elsewhere. Where no unwinder is
//! linked the answer is "no", as before this check existed.

/// Whether any frame of this thread's stack returns into `ranges`.
pub(crate) fn returns_into(ranges: &[(usize, usize)]) -> bool {
    if ranges.is_empty() {
        return false;
    }
    imp::any_return_address(&mut |address| {
        // A return address points after its call, which may be the last byte of a function.
        let address = address.saturating_sub(1);
        ranges
            .iter()
            .any(|&(start, end)| address >= start && address < end)
    })
}

#[cfg(all(target_os = "linux", not(miri)))]
mod imp {
    use std::ffi::{c_int, c_void};

    /// The unwinder's opaque context of one frame.
    #[repr(C)]
    struct UnwindContext {
        _opaque: [u8; 0],
    }

    /// `_URC_NO_REASON`: go on to the next frame.
    const CONTINUE: c_int = 0;
    /// `_URC_NORMAL_STOP`: any other value ends the walk.
    const STOP: c_int = 4;

    // The unwinder's two functions (the Itanium C++ ABI's level 1), from the `libgcc_s` or
    // `libunwind` that std links on Linux for its own panics and backtraces.
    unsafe extern "C" {
        fn _Unwind_Backtrace(
            trace: unsafe extern "C" fn(*mut UnwindContext, *mut c_void) -> c_int,
            data: *mut c_void,
        ) -> c_int;
        fn _Unwind_GetIP(context: *mut UnwindContext) -> usize;
    }

    type Visit<'a> = &'a mut dyn FnMut(usize) -> bool;

    unsafe extern "C" fn frame(context: *mut UnwindContext, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `&mut Visit` passed below, alive for the walk; `context` is the
        // unwinder's context of the current frame, valid during this call.
        let (visit, ip) = unsafe { (&mut *data.cast::<Visit<'_>>(), _Unwind_GetIP(context)) };
        if ip != 0 && visit(ip) { STOP } else { CONTINUE }
    }

    pub(super) fn any_return_address(visit: Visit<'_>) -> bool {
        let mut found = false;
        let mut check = |ip: usize| {
            found = visit(ip);
            found
        };
        let mut check: Visit<'_> = &mut check;
        // SAFETY: `frame` matches the callback type the unwinder calls, and `data` points at
        // `check`, which outlives the walk (the walk returns before this function does).
        unsafe {
            _Unwind_Backtrace(frame, (&raw mut check).cast());
        }
        found
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
mod imp {
    pub(super) fn any_return_address(_visit: &mut dyn FnMut(usize) -> bool) -> bool {
        false
    }
}
