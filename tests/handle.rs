//! Behaviour of `DelegateHandle` (rules H1, H2).

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::thread;

use lumina::{DelegateHandle, MulticastDelegate};

#[test]
fn h1_default_is_the_invalid_handle_with_id_zero() {
    let handle = DelegateHandle::default();
    assert_eq!(handle.id(), 0);
    assert!(!handle.is_valid());
    assert_eq!(handle, DelegateHandle::INVALID);
    assert_eq!(format!("{handle:?}"), "DelegateHandle(invalid)");
}

#[test]
fn h1_issued_ids_are_never_zero_and_increase_on_one_thread() {
    let mut previous = DelegateHandle::new_unique();
    assert!(previous.is_valid());
    assert!(previous.id() >= 1);
    for _ in 0..1000 {
        let next = DelegateHandle::new_unique();
        assert!(next.is_valid());
        assert!(next.id() > previous.id(), "{next:?} after {previous:?}");
        previous = next;
    }
}

#[test]
fn h1_add_methods_return_valid_handles_from_the_shared_counter() {
    let first: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let second: MulticastDelegate<dyn Fn(u32, String) -> bool> = MulticastDelegate::new();
    let a = first.add_lambda(|| {});
    let b = second.add_lambda(|_, _| true);
    let c = first.add_static(noop);
    let owner = std::rc::Rc::new(5_u8);
    let d = second.add_member(&owner, |_, _, _| false);
    let ids = [a.id(), b.id(), c.id(), d.id()];
    assert!(ids.iter().all(|&id| id != 0));
    // One counter for every delegate type: ids issued in sequence on one thread increase, even
    // alternating between two unrelated delegate types (the C++ original would reuse ids).
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
}

fn noop() {}

#[test]
fn h1_ids_are_unique_across_delegate_types_and_threads() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 2_000;
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            thread::spawn(move || {
                // Delegates are per thread (M10); each thread makes its own, of different types.
                let unit: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
                let typed: MulticastDelegate<dyn Fn(usize) -> usize> = MulticastDelegate::new();
                let mut ids = Vec::with_capacity(PER_THREAD);
                for i in 0..PER_THREAD {
                    let handle = match (i + t) % 3 {
                        0 => unit.add_lambda(|| {}),
                        1 => typed.add_lambda(|x| x + 1),
                        _ => DelegateHandle::new_unique(),
                    };
                    ids.push(handle.id());
                }
                ids
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for worker in workers {
        for id in worker.join().expect("worker thread panicked") {
            assert_ne!(id, 0);
            assert!(seen.insert(id), "id {id} issued twice");
        }
    }
    assert_eq!(seen.len(), THREADS * PER_THREAD);
}

#[test]
fn h2_handle_is_copy_eq_hash_and_debug() {
    let handle = DelegateHandle::new_unique();
    let copy = handle; // Copy: `handle` stays usable.
    assert_eq!(handle, copy);
    assert_ne!(handle, DelegateHandle::new_unique());
    let hasher = RandomState::new();
    assert_eq!(hasher.hash_one(handle), hasher.hash_one(copy));
    let debug = format!("{handle:?}");
    assert_eq!(debug, format!("DelegateHandle({})", handle.id()));
}

#[test]
fn h2_reset_makes_a_handle_invalid() {
    let mut handle = DelegateHandle::new_unique();
    assert!(handle.is_valid());
    handle.reset();
    assert!(!handle.is_valid());
    assert_eq!(handle, DelegateHandle::default());
    handle.reset();
    assert_eq!(handle.id(), 0);
}

#[test]
fn h2_remove_of_invalid_foreign_or_removed_handle_is_false_and_changes_nothing() {
    let on_event: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let other: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let sink = std::rc::Rc::clone(&calls);
    let kept = on_event.add_lambda(move || sink.set(sink.get() + 1));
    let removed = on_event.add_lambda(|| {});
    assert!(on_event.remove(removed));
    let foreign = other.add_lambda(|| {});
    let never_used = DelegateHandle::new_unique();

    for handle in [
        DelegateHandle::default(),
        DelegateHandle::INVALID,
        removed,
        foreign,
        never_used,
    ] {
        assert!(!on_event.remove(handle), "{handle:?}");
        assert_eq!(on_event.len(), 1);
        assert!(on_event.is_bound());
    }
    // The foreign handle still works on its own delegate, and `kept` still runs.
    assert_eq!(other.len(), 1);
    on_event.broadcast();
    assert_eq!(calls.get(), 1);
    assert!(other.remove(foreign));
    assert!(on_event.remove(kept));
    assert!(!on_event.remove(kept));
}

#[test]
fn h1_the_first_id_of_a_process_is_1() {
    // Other tests of this binary draw ids too, so the check runs in a fresh process: this test
    // binary again, running only this test.
    const CHILD: &str = "LUMINA_H1_FRESH_PROCESS";
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(DelegateHandle::new_unique().id(), 1);
        let signal: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
        assert_eq!(signal.add_lambda(|| {}).id(), 2);
        assert_eq!(DelegateHandle::new_unique().id(), 3);
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().expect("test binary path"))
        .args([
            "--exact",
            "h1_the_first_id_of_a_process_is_1",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "fresh process failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran the check: {stdout}"
    );
}
