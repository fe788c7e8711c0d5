//! Reflection names are global to a program (SD6): two reflected types with one name are
//! reported by `reflect::duplicate_names`, so a host can refuse to start with an ambiguous
//! registry. (Kept apart from the other tests: this binary is meant to have a clash.)

use lumina::reflect;

mod physics {
    /// One `Ping`.
    #[lumina::script_delegate]
    pub struct Ping {
        /// A value.
        pub sequence: u32,
    }
}

mod network {
    /// Another `Ping`, with another layout.
    #[lumina::script_delegate]
    pub struct Ping {
        /// A value.
        pub round_trip: f64,
    }
}

#[test]
fn sd6_duplicate_reflected_names_are_reported() {
    assert_eq!(reflect::duplicate_names(), ["Ping"]);
    let found = reflect::PayloadInfo::find("Ping").unwrap();
    assert!(
        [
            <physics::Ping as reflect::ScriptPayload>::PAYLOAD,
            <network::Ping as reflect::ScriptPayload>::PAYLOAD
        ]
        .iter()
        .any(|payload| std::ptr::eq(*payload, found)),
        "the lookup returns one of the two"
    );
    assert_eq!(
        reflect::PayloadInfo::all()
            .filter(|p| p.name == "Ping")
            .count(),
        2
    );
}
