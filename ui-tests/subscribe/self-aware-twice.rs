// `.self_aware()` is said once: said again, it is one error, not a second handle.
use lumina::MulticastDelegate;

fn main() {
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let _ = on_score.subscribe().self_aware().self_aware().add_lambda(|_this, _score| {});
}
