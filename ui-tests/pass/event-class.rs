//! Every form #[event_class] accepts, through the `lumina` dependency alone.

use lumina::event::{Envelope, Event, EventClass, EventProcessor, EventType};

/// A named-field struct with derives and docs.
#[lumina::event_class(KeyPressed)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chord {
    /// The keys.
    pub keys: Vec<u32>,
}

/// A unit struct, private.
#[lumina::event_class(None)]
struct Checkpoint;

/// A tuple struct, restricted visibility, trailing comma in the attribute.
#[lumina::event_class(AppUpdate)]
pub(crate) struct Tick(pub f32);

/// B6: a game's own event, bare.
#[lumina::event_class]
pub struct PlayerDied {
    /// Who died.
    pub player: u32,
}

/// Empty parentheses are the bare form too.
#[lumina::event_class()]
pub struct PlayerRespawned;

mod nested {
    use lumina::event_class;

    /// In a module, imported by name.
    #[event_class(WindowClose)]
    pub struct QuitAsked {
        /// Why.
        pub reason: String,
    }
}

fn main() {
    assert_eq!(Chord::static_type(), EventType::KeyPressed);
    assert_eq!(Checkpoint.event_type(), EventType::None);
    assert_eq!(Tick(0.5).name(), "AppUpdate");
    assert_eq!(Tick(0.5).0, 0.5);
    assert_eq!(PlayerDied::static_type(), EventType::None);
    assert_eq!(PlayerDied { player: 1 }.player, 1);
    assert_eq!(PlayerRespawned.event_type(), EventType::None);
    assert_eq!(nested::QuitAsked::CLASS_NAME, "QuitAsked");
    let mut envelope = Envelope::new(nested::QuitAsked {
        reason: "menu".into(),
    });
    let event: &mut dyn Event = &mut envelope;
    assert!(event.is::<nested::QuitAsked>());
    let asked = event
        .downcast_ref::<nested::QuitAsked>()
        .expect("a QuitAsked");
    assert_eq!(asked.reason, "menu");
    let processor = EventProcessor::new();
    assert!(!processor.dispatch(Chord::default()));
}
