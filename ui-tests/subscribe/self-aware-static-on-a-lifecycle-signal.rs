// The same builder, the same error on a lifecycle signal (A1).
use lumina::core_delegates::LifecycleSignal;

fn splash() {}

fn main() {
    let on_ready = LifecycleSignal::new("on_ready");
    let _ = on_ready.subscribe().once().self_aware().add_static(splash);
}
