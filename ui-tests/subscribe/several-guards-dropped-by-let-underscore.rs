// `let _ = delegate.mute()` drops the guard at once, which unmutes at once: with the lint that
// catches it denied, the compiler says so, and the guard's own words steer to `let _muted = ...`
// (A1: guards hard to drop by mistake).
// mistakes: 2
#![deny(let_underscore_drop)]
use lumina::MulticastDelegate;

fn main() {
    let on_footstep: MulticastDelegate<dyn Fn(f32)> = MulticastDelegate::new();
    let handle = on_footstep.add_lambda(|_| {});
    let _ = on_footstep.mute();
    let _ = on_footstep.block_scoped(handle);
    on_footstep.mute();
}
