//! A game-module record written by hand, as a module built against another lumina would write
//! it: the loader must refuse it before running any of its code (MB3).

use lumina::module::{BuildInfo, EntryReport, LUMINA_RUNTIME_MARKER_V1, ModuleEntry, RawStr};

unsafe extern "C" fn never(_: *const EntryReport) -> bool {
    panic!("the loader ran code of a mismatched module")
}

static ENTRY: ModuleEntry = ModuleEntry {
    abi_version: ModuleEntry::ABI_VERSION,
    name: RawStr::new("mismatch"),
    lumina_version: RawStr::new("0.0.0-other"),
    rustc_version: RawStr::new(BuildInfo::CURRENT.rustc_version),
    runtime_marker: LUMINA_RUNTIME_MARKER_V1,
    start_up: never,
    shut_down: never,
};

/// The record.
#[unsafe(no_mangle)]
pub extern "C" fn lumina_game_module_v1() -> *const ModuleEntry {
    &ENTRY
}
