use lumina::declare_delegate;

declare_delegate!(pub Trim(text: &str) -> &str);

fn main() {
    // Ordinary use after the mistake: no follow-on error.
    let trim = Trim::create_lambda(|text| text.trim());
    let _ = trim.execute_if_bound("  x ");
}
