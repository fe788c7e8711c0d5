use lumina::ScriptDelegate;

fn main() {
    let on_died: ScriptDelegate<()> = ScriptDelegate::new();
    std::thread::spawn(move || on_died.broadcast(&()));
}
