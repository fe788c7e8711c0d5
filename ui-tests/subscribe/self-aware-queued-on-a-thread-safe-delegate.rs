// A queued subscription runs later, on the game thread, outside the broadcast: it cannot receive
// its own subscription, so finishing `.self_aware()` with `add_queued` is one error (A1, TS4).
use lumina::SyncMulticastDelegate;

fn main() {
    let on_loaded: SyncMulticastDelegate<dyn Fn(u32) + Send + Sync> = SyncMulticastDelegate::new();
    let _ = on_loaded
        .subscribe()
        .self_aware()
        .add_queued(|bytes| println!("{bytes}"));
}
