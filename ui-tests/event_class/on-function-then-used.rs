use lumina::event_class;

#[event_class(WindowClose)]
pub fn on_close() {}

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    on_close();
}
