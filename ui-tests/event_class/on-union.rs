use lumina::event_class;

#[event_class(None)]
pub union Payload {
    pub int: u32,
    pub float: f32,
}

fn main() {}
