// A holder of a declared delegate's registration subscribes, but cannot broadcast (B2).
mod game {
    lumina::declare_multicast_delegate!(pub Died(cause: &str));

    #[derive(Default)]
    pub struct Player {
        on_died: Died,
    }

    impl Player {
        pub fn on_died(&self) -> DiedRegistration<'_> {
            self.on_died.registration()
        }
    }
}

fn main() {
    let player = game::Player::default();
    let _handle = player.on_died().add_lambda(|cause| println!("died of {cause}"));
    player.on_died().broadcast("a cheat");
}
