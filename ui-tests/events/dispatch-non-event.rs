use lumina::event::EventProcessor;

/// Forgot `#[event_class(...)]`.
pub struct Teleported {
    pub to: (f32, f32),
}

fn main() {
    let processor = EventProcessor::new();
    processor.dispatch(Teleported { to: (1.0, 2.0) });
}
