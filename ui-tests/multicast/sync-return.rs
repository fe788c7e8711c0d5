// Subscribers of a thread-safe delegate may run on several threads: there is no call order to
// collect results in, so a return type is one error (TS1).
use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub sync CanLoad(path: String) -> bool);

fn main() {
    let can_load = CanLoad::new();
    let _handle = can_load.add_lambda(|path| !path.is_empty());
    can_load.broadcast("a.png".to_string());
}
