//! Rule T1 with a permanent designation: `main_thread::designate_game_thread()` holds for the
//! rest of the process, so it gets a test binary (a process) of its own, with a single test.

mod support;

use std::thread;

use lumina::main_thread::{self, GameThreadScope};
use support::panic_message;

#[test]
fn t1_a_permanent_game_thread_is_the_only_one_for_the_process() {
    assert!(!main_thread::is_game_thread());
    main_thread::designate_game_thread();
    assert!(main_thread::is_game_thread());
    main_thread::designate_game_thread(); // again on the same thread: nothing changes
    assert!(main_thread::is_game_thread());

    // Another thread can neither become a second game thread...
    let second = thread::Builder::new()
        .name("second".into())
        .spawn(main_thread::designate_game_thread)
        .unwrap();
    let message = panic_message(&*second.join().expect_err("a second game thread"));
    assert!(message.contains("`second`"), "{message}");
    assert!(message.contains("already the game thread"), "{message}");
    assert!(message.contains("main_thread::enqueue"), "{message}");

    // ...nor wait for a scope that would never come: it is refused at once.
    let scoped = thread::spawn(|| GameThreadScope::enter().session());
    let message = panic_message(&*scoped.join().expect_err("a scope beside a permanent one"));
    assert!(message.contains("for the whole process"), "{message}");

    // ...nor drain the queue, but it can feed it.
    let fed = thread::spawn(|| {
        main_thread::enqueue(|| {});
        main_thread::process_queue()
    });
    let message = panic_message(&*fed.join().expect_err("draining off the game thread"));
    assert!(message.contains("main_thread::enqueue"), "{message}");
    assert_eq!(main_thread::process_queue(), 1);
    assert!(main_thread::is_game_thread());
}
