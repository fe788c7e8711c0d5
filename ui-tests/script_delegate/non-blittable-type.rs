use lumina::script_delegate;

pub struct Transform {
    pub x: f32,
}

#[script_delegate]
pub struct Moved {
    pub entity: u64,
    pub transform: Transform,
}

fn main() {}
