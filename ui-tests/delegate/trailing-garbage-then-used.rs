use lumina::declare_delegate;

declare_delegate!(pub Notify() -> bool, Other);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let notify = Notify::create_lambda(|| true);
    let _ = notify.execute();
}
