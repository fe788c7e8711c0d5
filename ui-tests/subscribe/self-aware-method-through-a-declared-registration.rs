// Through a declared delegate's registration view: the same builder, the same error (A1).
lumina::declare_multicast_delegate!(pub OnHit(damage: u32, by: &str));

struct Hud;

impl Hud {
    fn show(&self, _damage: u32, _by: &str) {}
}

fn main() {
    let on_hit = OnHit::new();
    let hud = std::rc::Rc::new(Hud);
    let _ = on_hit.registration().subscribe().once().self_aware().add_method(&hud, Hud::show);
}
