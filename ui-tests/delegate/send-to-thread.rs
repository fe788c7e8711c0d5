use lumina::declare_delegate;

declare_delegate!(pub Predicate(value: i32) -> bool);

fn main() {
    // A single-cast delegate belongs to its thread too.
    let is_positive = Predicate::create_lambda(|value| value > 0);
    std::thread::spawn(move || is_positive.execute(1));
}
