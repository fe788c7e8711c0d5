// `add_method` takes a plain method (`fn(&T, ..)`), which cannot take the subscription that
// `.self_aware()` passes: one error (A1).
use lumina::MulticastDelegate;
use std::rc::Rc;

struct Hud;

impl Hud {
    fn show(&self, _score: u32) {}
}

fn main() {
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let hud = Rc::new(Hud);
    let _ = on_score.subscribe().priority(2).self_aware().add_method(&hud, Hud::show);
}
