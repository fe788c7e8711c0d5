use lumina::declare_delegate;

declare_delegate!(pub Convert<From, To>(value: From) -> To);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let convert = Convert::create_lambda(|value: u32| value as u64);
    let _ = convert.execute(1);
}
