use lumina::script_delegate;

#[script_delegate]
pub struct Allocated {
    pub memory: *const u8,
}

fn main() {}
