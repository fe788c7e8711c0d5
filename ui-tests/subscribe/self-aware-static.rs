// A self-aware subscription passes the callable its own subscription: a plain function pointer
// cannot take it, so finishing `.self_aware()` with `add_static` is one error (A1).
use lumina::MulticastDelegate;

fn log_score(score: u32) {
    println!("{score}");
}

fn main() {
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let _ = on_score.subscribe().self_aware().add_static(log_score);
}
