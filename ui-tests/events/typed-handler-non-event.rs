use lumina::event::EventProcessor;

/// Forgot `#[event_class(...)]`.
pub struct Teleported {
    pub to: (f32, f32),
}

fn main() {
    let processor = EventProcessor::new();
    let _guard = processor.add_handler::<Teleported>(0, |teleported| teleported.to.0 > 0.0);
}
