use lumina::script_delegate;

#[script_delegate]
pub struct Damage(pub f32);

fn main() {}
