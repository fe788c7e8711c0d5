use lumina::script_delegate;

#[script_delegate]
pub struct Died;

fn main() {}
