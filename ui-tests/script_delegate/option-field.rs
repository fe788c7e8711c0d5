use lumina::script_delegate;

#[script_delegate]
pub struct Targeted {
    pub target: Option<u64>,
}

fn main() {}
