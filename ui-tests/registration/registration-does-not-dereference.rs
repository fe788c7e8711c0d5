// A registration does not dereference to its delegate (B2).
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
    let _ = (*events).broadcast_collect(3);
}
