// A holder of a declared delegate's registration cannot fire it once and clear it (B2).
mod game {
    lumina::declare_multicast_delegate!(pub Spawned(id: u32));

    #[derive(Default)]
    pub struct World {
        on_spawned: Spawned,
    }

    impl World {
        pub fn on_spawned(&self) -> SpawnedRegistration<'_> {
            self.on_spawned.registration()
        }
    }
}

fn main() {
    let world = game::World::default();
    world.on_spawned().broadcast_and_clear(7);
}
