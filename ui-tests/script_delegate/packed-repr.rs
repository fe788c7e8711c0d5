use lumina::script_delegate;

#[script_delegate]
#[repr(packed)]
pub struct Packet {
    pub id: u8,
    pub value: u64,
}

fn main() {}
