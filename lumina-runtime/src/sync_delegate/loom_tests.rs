//! The protocol under loom (TS6): every interleaving of small models. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p lumina-notify-runtime --lib --release sync_delegate::loom`.

use super::SyncMulticastDelegate;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;

type D = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

/// Two threads add at once: neither add is lost (copy-on-write under the lock).
#[test]
fn ts3_concurrent_adds_are_both_kept() {
    loom::model(|| {
        let delegate = Arc::new(D::new());
        let calls = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let delegate = Arc::clone(&delegate);
                let calls = Arc::clone(&calls);
                thread::spawn(move || {
                    let _ = delegate.add_lambda(move |_| {
                        calls.fetch_add(1, Ordering::Relaxed);
                    });
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        delegate.broadcast(1);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
    });
}

/// Two broadcasts race for a one-shot subscriber: exactly one calls it, and it is gone.
#[test]
fn x3_ts2_a_one_shot_runs_once_across_threads() {
    loom::model(|| {
        let delegate = Arc::new(D::new());
        let calls = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&calls);
        let _ = delegate.subscribe().once().add_lambda(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        let other = {
            let delegate = Arc::clone(&delegate);
            thread::spawn(move || delegate.broadcast(1))
        };
        delegate.broadcast(2);
        other.join().unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert!(delegate.is_empty());
    });
}

/// A removal racing a broadcast: the racing broadcast calls the subscriber at most once
/// (a call it started before the removal may finish), and a broadcast that starts after the
/// removal returned never calls it (TS2).
#[test]
fn ts2_a_call_never_starts_after_the_removal_returned() {
    loom::model(|| {
        let delegate = Arc::new(D::new());
        // Calls by value: 1 from the racing broadcast, 2 from the one after the removal.
        let calls = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let counter = Arc::clone(&calls);
        let handle = delegate.add_lambda(move |value| {
            counter[value as usize - 1].fetch_add(1, Ordering::Relaxed);
        });
        let broadcaster = {
            let delegate = Arc::clone(&delegate);
            thread::spawn(move || delegate.broadcast(1))
        };
        assert!(delegate.remove(handle));
        delegate.broadcast(2);
        broadcaster.join().unwrap();
        assert_eq!(calls[1].load(Ordering::Relaxed), 0);
        assert!(calls[0].load(Ordering::Relaxed) <= 1);
    });
}

/// A clear racing an add: afterwards the list and what a broadcast calls agree.
#[test]
fn ts2_clear_racing_an_add_leaves_a_consistent_list() {
    loom::model(|| {
        let delegate = Arc::new(D::new());
        let calls = Arc::new(AtomicU32::new(0));
        let adder = {
            let delegate = Arc::clone(&delegate);
            let calls = Arc::clone(&calls);
            thread::spawn(move || {
                let _ = delegate.add_lambda(move |_| {
                    calls.fetch_add(1, Ordering::Relaxed);
                });
            })
        };
        delegate.clear();
        adder.join().unwrap();
        let len = delegate.len();
        delegate.broadcast(1);
        assert_eq!(calls.load(Ordering::Relaxed) as usize, len);
    });
}
