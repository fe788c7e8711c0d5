//! TS5: a game module's subscriptions go at its unload.

use super::SyncMulticastDelegate;
use crate::track::{self, Running, add_range, code_of, remove_range};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

type OnValue = SyncMulticastDelegate<dyn Fn(u32) + Send + Sync>;

fn counter(calls: &Arc<AtomicU32>) -> Box<dyn Fn(u32) + Send + Sync> {
    let calls = Arc::clone(calls);
    Box::new(move |_| {
        calls.fetch_add(1, Ordering::SeqCst);
    })
}

/// TS5: a module's subscriptions, by their code or made while the module ran on another
/// thread (MB6), go at its unload; the engine's stay; no call of them starts afterwards on
/// any thread.
#[test]
fn ts5_a_modules_subscriptions_to_a_thread_safe_delegate_go_at_its_unload() {
    const FAKE: u64 = u64::MAX - 135;
    // Some module must be loaded for origins to be taken; a range no code word falls in (the
    // values of tests running in parallel are not the fake module's).
    add_range(FAKE, usize::MAX - 1, usize::MAX);
    let delegate = Arc::new(OnValue::new());
    let (module_calls, engine_calls, ran_calls) = (Arc::default(), Arc::default(), Arc::default());
    // The module's own closure: its vtable is attributed to the fake module's library.
    let theirs = {
        let calls: &Arc<AtomicU32> = &module_calls;
        let calls = Arc::clone(calls);
        Box::new(move |value: u32| {
            calls.fetch_add(value, Ordering::SeqCst);
        }) as Box<dyn Fn(u32) + Send + Sync>
    };
    let vtable = code_of(&*theirs).expect("a module is loaded").vtable();
    add_range(FAKE, vtable, vtable + 1);
    let _ = delegate.add_boxed(theirs);
    let _ = delegate.add_boxed(counter(&engine_calls));
    // Engine-typed code subscribed on a worker while the module's code runs there.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let _frame = track::enter(FAKE, Running::Task);
            let _ = delegate
                .subscribe()
                .priority(1)
                .add_boxed(counter(&ran_calls));
        });
    });
    assert_eq!(delegate.len(), 3);
    let swept = track::sweep(FAKE);
    remove_range(FAKE);
    assert_eq!(
        swept, 2,
        "the module's closure and what it subscribed while it ran"
    );
    assert_eq!(delegate.len(), 1);
    let worker = {
        let delegate = Arc::clone(&delegate);
        std::thread::spawn(move || delegate.broadcast(1))
    };
    worker.join().unwrap();
    delegate.broadcast(1);
    assert_eq!(module_calls.load(Ordering::SeqCst), 0);
    assert_eq!(ran_calls.load(Ordering::SeqCst), 0);
    assert_eq!(engine_calls.load(Ordering::SeqCst), 2);
}
