// mistakes: 4
use lumina::script_delegate;

#[script_delegate]
#[repr(transparent)]
pub struct Everything {
    pub name: String,
    pub alive: bool,
    pub fine: u32,
    pub key: char,
}

fn main() {}
