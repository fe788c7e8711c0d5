use lumina::script_delegate;

#[script_delegate]
pub enum Phase {
    Begin,
    End,
}

fn main() {}
