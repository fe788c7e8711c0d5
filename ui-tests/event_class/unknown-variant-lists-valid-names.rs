use lumina::event_class;

#[event_class(Explosion)]
pub struct BarrelExploded {
    pub radius: f32,
}

fn main() {}
