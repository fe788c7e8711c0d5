//! Rule N4's step counter: the cold operations of the invocation list count the comparisons,
//! probes and elements they visit or shift here, so a unit test can tell an operation whose
//! work grows with the state it works on from one that does not, deterministically (counts, not
//! time). Compiled only into the crate's own unit tests: in every other build [`add`] is an
//! empty inline function, and the broadcast, dispatch and send loops never call it.

#[cfg(test)]
thread_local! {
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` steps (nothing outside the crate's unit tests).
#[inline(always)]
pub(crate) fn add(n: usize) {
    #[cfg(test)]
    STEPS.with(|steps| steps.set(steps.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

/// The steps of a binary search over `len` elements.
#[inline(always)]
pub(crate) fn search(len: usize) {
    add(1 + len.checked_ilog2().unwrap_or(0) as usize);
}

/// The steps `run` took on this thread.
#[cfg(test)]
pub(crate) fn count(run: impl FnOnce()) -> u64 {
    let before = STEPS.with(std::cell::Cell::get);
    run();
    STEPS.with(std::cell::Cell::get) - before
}

#[cfg(test)]
mod tests;
