// A builder without a finish subscribes nothing: denied `unused_must_use` says so (A1).
#![deny(unused_must_use)]
use lumina::MulticastDelegate;

fn main() {
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    on_score.subscribe().priority(3);
}
