// A thread-safe delegate's subscribers each get their own clone, on any thread: a borrowed
// parameter is one error at its `&` (TS1).
use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub sync OnAssetLoaded(path: &str, bytes: u64));

fn main() {}
