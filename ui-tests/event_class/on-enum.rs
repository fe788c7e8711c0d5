use lumina::event_class;

#[event_class(KeyPressed)]
pub enum KeyEvent {
    Pressed(u32),
    Released(u32),
}

fn main() {}
