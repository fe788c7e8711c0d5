// An attribute other than `#[retained]` or a doc comment is one error on it; the tag is still
// declared, and registered by the set's `register()`.
use lumina::bus::MessageBus;
use lumina::gameplay_tags;

pub enum MatchState {
    Playing,
}

gameplay_tags! {
    pub mod tags {
        #[retain]
        Match.State: MatchState,
    }
}

fn main() {
    tags::register().unwrap();
    let bus: MessageBus<u32> = MessageBus::new();
    bus.send(&tags::MATCH_STATE, MatchState::Playing);
}
