use lumina::script_delegate;

#[script_delegate]
pub struct Typed {
    pub key: char,
}

fn main() {}
