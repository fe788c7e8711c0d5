use lumina::script_delegate;

#[script_delegate]
pub struct Chat {
    pub sender: u64,
    pub text: String,
}

fn main() {}
