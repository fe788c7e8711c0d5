use lumina::script_delegate;

#[script_delegate]
pub struct Moved {
    pub position: [f32; 3],
}

fn main() {}
