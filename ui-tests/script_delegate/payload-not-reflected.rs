use lumina::ScriptDelegate;

pub struct Plain {
    pub damage: f32,
}

fn main() {
    let _on_hit: ScriptDelegate<Plain> = ScriptDelegate::new();
}
