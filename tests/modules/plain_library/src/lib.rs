//! A library that is not a game module.

/// Something a library exports.
#[unsafe(no_mangle)]
pub extern "C" fn plain_add(a: i32, b: i32) -> i32 {
    a + b
}
