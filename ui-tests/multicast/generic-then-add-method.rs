use lumina::declare_multicast_delegate;
use std::rc::Rc;

declare_multicast_delegate!(pub OnValue<T>(value: T));

struct Hud;

impl Hud {
    fn show(&self, value: u32) {
        println!("{value}");
    }
}

fn main() {
    // Member bindings by owner and method after the mistake, on the delegate and its view: no
    // follow-on error.
    let delegate = OnValue::new();
    let hud = Rc::new(Hud);
    let _ = delegate.add_method(&hud, Hud::show);
    let _ = delegate.registration().add_method(&hud, Hud::show);
    let _ = delegate.remove_method(&hud, Hud::show);
    let _ = delegate.registration().remove_method(&hud, Hud::show);
    delegate.broadcast(1u32);
}
