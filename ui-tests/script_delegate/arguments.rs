use lumina::script_delegate;

#[script_delegate(name = "Hit")]
pub struct Hit {
    pub damage: f32,
}

fn main() {}
