use lumina::script_delegate;

#[script_delegate]
pub struct Explosion {
    pub victims: Vec<u64>,
}

fn main() {}
