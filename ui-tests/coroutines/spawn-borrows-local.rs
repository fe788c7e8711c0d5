use lumina::coroutine;

fn main() {
    // A task must own what it uses: a borrow of a local does not live long enough.
    let score = 3;
    let _task = coroutine::spawn_local(async { println!("{}", &score) });
}
