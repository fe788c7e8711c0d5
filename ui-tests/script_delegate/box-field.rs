use lumina::script_delegate;

#[script_delegate]
pub struct Spawned {
    pub transform: Box<[f32; 16]>,
}

fn main() {}
