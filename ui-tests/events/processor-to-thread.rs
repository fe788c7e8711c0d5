use lumina::event::EventProcessor;

fn main() {
    // Handlers are single-threaded (`Rc`): the processor belongs to the game thread.
    let processor = EventProcessor::new();
    std::thread::spawn(move || processor.len());
}
