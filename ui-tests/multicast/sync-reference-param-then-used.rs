// The mistake of `sync-reference-param.rs`, then the delegate used the ordinary way: no further
// error.
use lumina::declare_multicast_delegate;

declare_multicast_delegate!(pub sync OnAssetLoaded(path: &str, bytes: u64));

fn main() {
    let on_loaded = OnAssetLoaded::new();
    let _handle = on_loaded.add_lambda(|path, bytes| println!("{path}: {bytes}"));
    let _once = on_loaded.subscribe().once().add_lambda(|path, _| println!("{path}"));
    on_loaded.broadcast("grass.png", 4096);
}
