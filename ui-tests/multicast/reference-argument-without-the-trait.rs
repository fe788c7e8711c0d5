use lumina::MulticastDelegate;

fn main() {
    let on_chat: MulticastDelegate<dyn Fn(&str)> = MulticastDelegate::new();
    // The typed API of a reference signature comes from `lumina::multicast::ByReference`.
    let _ = on_chat.add_lambda(|line| println!("{line}"));
}
