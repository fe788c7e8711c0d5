//! Delegates: single-cast and multicast callbacks with handles.
//!
//! Run with `cargo run --example delegates`.

use lumina::{Delegate, MulticastDelegate};
use std::rc::Rc;

struct Hud {
    name: &'static str,
}

impl Hud {
    fn on_score(&self, score: u32) {
        println!("[{}] score is now {score}", self.name);
    }
}

fn main() {
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();

    let hud = Rc::new(Hud { name: "hud" });
    let _hud_binding = on_score.add_member(&hud, Hud::on_score);
    let logger = on_score.add_lambda(|score| println!("[log] score {score}"));

    on_score.broadcast(10);
    println!("subscribers: {}", on_score.len());

    on_score.remove(logger);
    drop(hud);
    println!(
        "after removing the logger and dropping the hud: {}",
        on_score.len()
    );
    on_score.broadcast(20);

    let is_high = Delegate::<dyn Fn(u32) -> bool>::create_lambda(|score| score > 15);
    println!("is 20 a high score? {}", is_high.execute(20));
}
