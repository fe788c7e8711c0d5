use lumina::declare_multicast_delegate;

pub struct Verdict;

declare_multicast_delegate!(pub OnJudge(case: u32) -> Verdict);

fn main() {
    let on_judge = OnJudge::new();
    // Its subscriber must answer the broadcast with `Verdict::default()`.
    let _next = on_judge.next();
}
