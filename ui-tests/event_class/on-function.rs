use lumina::event_class;

#[event_class(WindowClose)]
pub fn on_close() {}

fn main() {}
