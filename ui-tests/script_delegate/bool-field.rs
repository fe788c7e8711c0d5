use lumina::script_delegate;

#[script_delegate]
pub struct Toggled {
    pub on: bool,
}

fn main() {}
