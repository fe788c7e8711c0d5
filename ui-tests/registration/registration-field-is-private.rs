// A registration has no way back to its delegate: its field is private to the declaring
// module (B2).
mod game {
    lumina::declare_multicast_delegate!(pub Scored(points: u32) -> bool);

    #[derive(Default)]
    pub struct Match {
        on_scored: Scored,
    }

    impl Match {
        pub fn on_scored(&self) -> ScoredRegistration<'_> {
            self.on_scored.registration()
        }
    }
}

fn main() {
    let game = game::Match::default();
    let events = game.on_scored();
    events.0.broadcast(3);
}
