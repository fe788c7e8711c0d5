// A plain function pointer cannot take its own subscription: finishing `.self_aware()` with
// `add_static` on a thread-safe delegate is one error (A1), as on the game-thread one.
use lumina::SyncMulticastDelegate;

fn log_bytes(bytes: u32) {
    println!("{bytes}");
}

fn main() {
    let on_loaded: SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> = SyncMulticastDelegate::new();
    let _ = on_loaded.subscribe().self_aware().add_static(log_bytes);
}
