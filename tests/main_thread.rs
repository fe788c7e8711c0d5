//! The game thread and the main-thread queue: rules T1 and Q1-Q3.
//!
//! Every test that touches the queue holds a `GameThreadScope`, so the tests of this file, which
//! `cargo test` runs in parallel on their own threads, take turns being the game thread and never
//! see each other's tasks.

mod support;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use lumina::main_thread::{self, GameThreadScope};
use support::{capture_tracing, panic_message};

/// Records the order in which tasks ran; tasks are `Send`, so it is shared through a mutex.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u32>>>);

impl Log {
    fn push(&self, value: u32) {
        self.0.lock().unwrap().push(value);
    }

    fn task(&self, value: u32) -> impl FnOnce() + Send + 'static {
        let log = self.clone();
        move || log.push(value)
    }

    fn take(&self) -> Vec<u32> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

// ---------------------------------------------------------------------------------------------
// T1: game-thread affinity.
// ---------------------------------------------------------------------------------------------

#[test]
fn t1_process_queue_on_another_thread_panics_naming_enqueue() {
    let _game = GameThreadScope::enter();
    let worker = thread::Builder::new()
        .name("worker".into())
        .spawn(main_thread::process_queue)
        .unwrap();
    let message = panic_message(
        &*worker
            .join()
            .expect_err("process_queue off the game thread"),
    );
    assert!(message.contains("main_thread::enqueue"), "{message}");
    assert!(
        message.contains("`worker`"),
        "names the offending thread: {message}"
    );
    assert!(message.contains("not the game thread"), "{message}");
    assert!(main_thread::is_game_thread());
}

#[test]
fn t1_without_a_game_thread_process_queue_panics_naming_designate_and_enqueue() {
    // This test thread never became the game thread (another test may hold a scope meanwhile,
    // which changes the wording but not the way out).
    let payload = panic::catch_unwind(main_thread::process_queue).expect_err("not designated");
    let message = panic_message(&*payload);
    assert!(message.contains("main_thread::enqueue"), "{message}");
    assert!(
        message.contains("designate_game_thread") || message.contains("not the game thread"),
        "{message}"
    );
}

#[test]
fn t1_is_game_thread_only_on_the_scope_thread_and_only_while_it_lives() {
    assert!(!main_thread::is_game_thread());
    let game = GameThreadScope::enter();
    assert!(main_thread::is_game_thread());
    assert!(!thread::spawn(main_thread::is_game_thread).join().unwrap());
    drop(game);
    assert!(!main_thread::is_game_thread());
}

#[test]
fn t1_scopes_on_parallel_threads_take_turns() {
    const THREADS: usize = 4;
    let inside = Arc::new(AtomicUsize::new(0));
    let most_inside = Arc::new(AtomicUsize::new(0));
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (inside, most_inside) = (Arc::clone(&inside), Arc::clone(&most_inside));
            let (sessions, start) = (Arc::clone(&sessions), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                let game = GameThreadScope::enter();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most_inside.fetch_max(now, Ordering::SeqCst);
                assert!(main_thread::is_game_thread());
                sessions.lock().unwrap().push(game.session());
                thread::sleep(Duration::from_millis(5));
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(
        most_inside.load(Ordering::SeqCst),
        1,
        "one game thread at a time"
    );
    let mut sessions = sessions.lock().unwrap().clone();
    sessions.sort_unstable();
    sessions.dedup();
    assert_eq!(sessions.len(), THREADS, "every scope opens its own session");
}

#[test]
fn t1_a_second_scope_on_the_same_thread_panics() {
    let _game = GameThreadScope::enter();
    let payload = panic::catch_unwind(GameThreadScope::enter).expect_err("scopes do not nest");
    let message = panic_message(&*payload);
    assert!(
        message.contains("already holds a `GameThreadScope`"),
        "{message}"
    );
    // The refused attempt changed nothing.
    assert!(main_thread::is_game_thread());
}

#[test]
fn t1_designating_a_permanent_game_thread_inside_a_scope_panics() {
    let _game = GameThreadScope::enter();
    let payload =
        panic::catch_unwind(main_thread::designate_game_thread).expect_err("would outlive");
    let message = panic_message(&*payload);
    assert!(message.contains("outlive the scope"), "{message}");
    assert!(main_thread::is_game_thread());
}

#[test]
fn t1_scope_end_drops_unrun_tasks_and_reports_how_many() {
    let log = Log::default();
    let ((), report) = capture_tracing(|| {
        let game = GameThreadScope::enter();
        main_thread::enqueue(log.task(1));
        main_thread::enqueue(log.task(2));
        drop(game);
    });
    assert!(report.contains("WARN"), "{report}");
    assert!(report.contains("dropped=2"), "{report}");
    assert!(report.contains("main_thread::process_queue"), "{report}");

    // The next session does not inherit them.
    let _game = GameThreadScope::enter();
    assert_eq!(main_thread::process_queue(), 0);
    assert!(log.take().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Q1: enqueue from any thread, never waiting for the game thread's work.
// ---------------------------------------------------------------------------------------------

#[test]
fn q1_enqueue_from_a_worker_runs_on_the_game_thread() {
    let _game = GameThreadScope::enter();
    let game_thread = thread::current().id();
    let (ran_on, ran_on_rx) = mpsc::channel();
    thread::spawn(move || {
        main_thread::enqueue(move || ran_on.send(thread::current().id()).unwrap());
    })
    .join()
    .unwrap();
    assert!(
        ran_on_rx.try_recv().is_err(),
        "nothing runs before the drain"
    );
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(ran_on_rx.try_recv(), Ok(game_thread));
}

#[test]
fn q1_enqueue_never_waits_for_a_task_the_game_thread_is_running() {
    let _game = GameThreadScope::enter();
    let (enqueued, enqueued_rx) = mpsc::channel::<()>();
    let (task_started, task_started_rx) = mpsc::channel::<()>();
    let (saw_enqueue, saw_enqueue_rx) = mpsc::channel::<bool>();

    // A long task: it waits (up to 10 s) for a worker to finish an enqueue while it runs. If
    // enqueue waited for the game thread's work, the worker could not finish and the task would
    // time out.
    main_thread::enqueue(move || {
        task_started.send(()).unwrap();
        let arrived = enqueued_rx.recv_timeout(Duration::from_secs(10)).is_ok();
        saw_enqueue.send(arrived).unwrap();
    });
    let worker = thread::spawn(move || {
        task_started_rx.recv().unwrap();
        main_thread::enqueue(|| {});
        enqueued.send(()).unwrap();
    });

    assert_eq!(main_thread::process_queue(), 1, "the worker's task waits");
    assert_eq!(
        saw_enqueue_rx.recv(),
        Ok(true),
        "enqueue finished during the task"
    );
    worker.join().unwrap();
    assert_eq!(main_thread::process_queue(), 1);
}

#[test]
fn q1_q2_stress_8_producers_10000_tasks_each_nothing_lost_fifo_per_producer() {
    const PRODUCERS: u32 = 8;
    const TASKS: u32 = 10_000;
    let _game = GameThreadScope::enter();
    let started = Instant::now();
    let ran = Arc::new(Mutex::new(Vec::with_capacity((PRODUCERS * TASKS) as usize)));
    let go = Arc::new(Barrier::new(PRODUCERS as usize));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|producer| {
            let (ran, go) = (Arc::clone(&ran), Arc::clone(&go));
            thread::spawn(move || {
                go.wait();
                for seq in 0..TASKS {
                    let ran = Arc::clone(&ran);
                    main_thread::enqueue(move || ran.lock().unwrap().push((producer, seq)));
                }
            })
        })
        .collect();

    // The game thread drains while the producers run, then until everything arrived; bounded.
    let deadline = started + Duration::from_secs(20);
    let mut drained = 0;
    let mut drains = 0;
    while drained < (PRODUCERS * TASKS) as usize {
        assert!(
            Instant::now() < deadline,
            "only {drained} of {} tasks ran within 20 s",
            PRODUCERS * TASKS
        );
        drained += main_thread::process_queue();
        drains += 1;
        thread::yield_now();
    }
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!(main_thread::process_queue(), 0, "nothing ran twice or late");

    let ran = ran.lock().unwrap();
    assert_eq!(ran.len(), (PRODUCERS * TASKS) as usize);
    let mut next = vec![0; PRODUCERS as usize];
    for &(producer, seq) in ran.iter() {
        assert_eq!(
            seq, next[producer as usize],
            "producer {producer} out of order"
        );
        next[producer as usize] += 1;
    }
    assert!(next.iter().all(|&count| count == TASKS), "{next:?}");
    assert!(drains >= 1);
    assert!(started.elapsed() < Duration::from_secs(20));
}

// ---------------------------------------------------------------------------------------------
// Q2: a drain runs what was enqueued before it started, in order, and says how many.
// ---------------------------------------------------------------------------------------------

#[test]
fn q2_process_queue_runs_tasks_in_enqueue_order_and_returns_how_many_ran() {
    let _game = GameThreadScope::enter();
    let log = Log::default();
    assert_eq!(main_thread::process_queue(), 0);
    for value in 1..=5 {
        main_thread::enqueue(log.task(value));
    }
    assert_eq!(main_thread::pending(), 5);
    assert_eq!(main_thread::process_queue(), 5);
    assert_eq!(log.take(), [1, 2, 3, 4, 5]);
    assert_eq!(main_thread::pending(), 0);
    assert_eq!(main_thread::process_queue(), 0);
}

#[test]
fn q2_tasks_enqueued_during_a_drain_wait_for_the_next_one() {
    let _game = GameThreadScope::enter();
    let log = Log::default();
    let inner = log.clone();
    main_thread::enqueue(move || {
        inner.push(1);
        main_thread::enqueue(inner.task(3));
    });
    main_thread::enqueue(log.task(2));
    assert_eq!(main_thread::process_queue(), 2);
    assert_eq!(log.take(), [1, 2]);
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(log.take(), [3]);
}

/// A task that enqueues itself again, forever.
fn reenqueue_forever(runs: Arc<AtomicUsize>) {
    runs.fetch_add(1, Ordering::SeqCst);
    main_thread::enqueue(move || reenqueue_forever(runs));
}

#[test]
fn q2_a_task_that_reenqueues_itself_does_not_livelock_the_drain() {
    let _game = GameThreadScope::enter();
    let runs = Arc::new(AtomicUsize::new(0));
    let first = Arc::clone(&runs);
    main_thread::enqueue(move || reenqueue_forever(first));
    for frame in 1..=3 {
        assert_eq!(main_thread::process_queue(), 1);
        assert_eq!(runs.load(Ordering::SeqCst), frame);
    }
}

#[test]
fn q2_process_queue_inside_a_task_panics_and_loses_nothing() {
    let _game = GameThreadScope::enter();
    let log = Log::default();
    main_thread::enqueue(|| {
        main_thread::process_queue();
    });
    main_thread::enqueue(log.task(1));
    let payload = panic::catch_unwind(main_thread::process_queue).expect_err("reentrant drain");
    let message = panic_message(&*payload);
    assert!(message.contains("not reentrant"), "{message}");
    assert!(message.contains("main_thread::enqueue"), "{message}");
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(log.take(), [1]);
}

// ---------------------------------------------------------------------------------------------
// Q3: a panicking task propagates; the queue stays consistent and nothing is lost.
// ---------------------------------------------------------------------------------------------

#[test]
fn q3_a_panicking_task_propagates_and_the_tasks_after_it_run_next_time_in_order() {
    let _game = GameThreadScope::enter();
    let log = Log::default();
    main_thread::enqueue(log.task(1));
    main_thread::enqueue(|| panic!("task two failed"));
    main_thread::enqueue(log.task(3));
    main_thread::enqueue(log.task(4));

    let payload = panic::catch_unwind(main_thread::process_queue).expect_err("task panicked");
    assert_eq!(panic_message(&*payload), "task two failed");
    assert_eq!(log.take(), [1]);
    assert_eq!(
        main_thread::pending(),
        2,
        "the unrun tasks are back in the queue"
    );

    // Enqueued after the failed drain: runs after the older tasks.
    main_thread::enqueue(log.task(5));
    assert_eq!(main_thread::process_queue(), 3);
    assert_eq!(log.take(), [3, 4, 5]);
}

#[test]
fn q3_tasks_enqueued_before_the_panic_during_the_drain_are_kept_behind_the_unrun_ones() {
    let _game = GameThreadScope::enter();
    let log = Log::default();
    let inner = log.clone();
    main_thread::enqueue(move || {
        inner.push(1);
        main_thread::enqueue(inner.task(4)); // enqueued during the drain
    });
    main_thread::enqueue(|| panic!("boom"));
    main_thread::enqueue(log.task(2));
    main_thread::enqueue(log.task(3));

    assert!(panic::catch_unwind(AssertUnwindSafe(main_thread::process_queue)).is_err());
    assert_eq!(log.take(), [1]);
    assert_eq!(main_thread::process_queue(), 3);
    assert_eq!(log.take(), [2, 3, 4]);
    // And the queue works normally afterwards.
    main_thread::enqueue(log.task(5));
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(log.take(), [5]);
}

// ---- A task that ends the session (issue 31, item 5): the scope's end ends the drain too.

thread_local! {
    /// The scope of the tests below, kept where a task can end it (and enter the next one).
    static HELD: std::cell::RefCell<Option<GameThreadScope>> =
        const { std::cell::RefCell::new(None) };
}

/// Ends the session held in [`HELD`], with nothing borrowed while the scope's end runs.
fn end_held_scope() {
    let scope = HELD.with_borrow_mut(Option::take);
    drop(scope);
}

/// A task that records whether it ran, and on which thread state, or that it was dropped unrun.
fn recorded_task(log: &Log, value: u32) -> impl FnOnce() + Send + 'static {
    struct Unrun(Log, u32);
    impl Unrun {
        fn ran(&mut self) {
            self.1 = 0;
        }
    }
    impl Drop for Unrun {
        fn drop(&mut self) {
            if self.1 != 0 {
                self.0.push(self.1 + 100); // dropped unrun
            }
        }
    }
    let mut unrun = Unrun(log.clone(), value);
    move || {
        let game = if main_thread::is_game_thread() {
            0
        } else {
            1000
        };
        unrun.0.push(value + game);
        unrun.ran();
    }
}

/// T1, Q2: a task that ends the game-thread session inside `process_queue` ends the drain: the
/// rest of its batch is dropped unrun (it belonged to the session), never run off the game
/// thread.
#[test]
fn t1_q2_a_task_that_ends_the_session_drops_the_rest_of_the_batch_unrun() {
    let log = Log::default();
    HELD.with_borrow_mut(|held| *held = Some(GameThreadScope::enter()));
    let inner = log.clone();
    main_thread::enqueue(move || {
        inner.push(1);
        end_held_scope();
    });
    main_thread::enqueue(recorded_task(&log, 2));
    main_thread::enqueue(recorded_task(&log, 3));
    let (ran, report) = capture_tracing(main_thread::process_queue);
    assert_eq!(log.take(), [1, 102, 103], "2 and 3 dropped unrun, not run");
    assert_eq!(ran, 1);
    assert!(report.contains("dropped=2"), "{report}");
    assert!(!main_thread::is_game_thread());
}

/// T1, Q2: a task that ends the session and enters the next one: nothing of the old session runs
/// in the new one, neither the rest of the batch nor anything queued by the old session.
#[test]
fn t1_q2_a_task_that_enters_the_next_session_runs_nothing_of_the_old_one_in_it() {
    let log = Log::default();
    HELD.with_borrow_mut(|held| *held = Some(GameThreadScope::enter()));
    let first = HELD.with_borrow(|held| held.as_ref().map(GameThreadScope::session));
    let inner = log.clone();
    main_thread::enqueue(move || {
        inner.push(1);
        end_held_scope();
        HELD.with_borrow_mut(|held| *held = Some(GameThreadScope::enter()));
        // The new session's own task: runs at the new session's first drain.
        main_thread::enqueue(inner.task(4));
    });
    main_thread::enqueue(recorded_task(&log, 2));
    main_thread::enqueue(recorded_task(&log, 3));
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(log.take(), [1, 102, 103]);
    let second = HELD.with_borrow(|held| held.as_ref().map(GameThreadScope::session));
    assert_ne!(first, second, "a new session");
    assert!(main_thread::is_game_thread());
    assert_eq!(
        main_thread::process_queue(),
        1,
        "only the new session's task"
    );
    assert_eq!(log.take(), [4]);
    end_held_scope();
}

/// R2, R3: the batch's tasks dropped by a task's end of the session are dropped one at a time:
/// each `Drop` runs even when one panics, and the first panic reaches the caller of
/// `process_queue` once the session is gone.
#[test]
fn r3_the_rest_of_the_batch_is_dropped_under_the_guard_when_its_drops_panic() {
    struct Loud(Arc<AtomicUsize>);
    impl Drop for Loud {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("a queued task's capture panicked");
        }
    }
    HELD.with_borrow_mut(|held| *held = Some(GameThreadScope::enter()));
    main_thread::enqueue(end_held_scope);
    let (drops, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    for _ in 0..2 {
        let (loud, ran) = (Loud(Arc::clone(&drops)), Arc::clone(&ran));
        main_thread::enqueue(move || {
            let _ = &loud;
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    let payload = panic::catch_unwind(main_thread::process_queue).expect_err("the drop panicked");
    assert_eq!(panic_message(&*payload), "a queued task's capture panicked");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the session ended before them"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 2, "both dropped");
    assert!(!main_thread::is_game_thread());
    let _game = GameThreadScope::enter();
    assert_eq!(main_thread::pending(), 0, "nothing went back to the queue");
}

// ---- R2 at the thread's exit: values kept in thread locals, dropped after the runtime's own
// thread locals are destroyed. Each scenario runs on a thread of its own in a child process (an
// abort, "panic in a thread local's destructor", would kill the test run).

#[path = "support/child.rs"]
mod child;

/// Sets its flag when dropped.
struct Flag(&'static std::sync::atomic::AtomicBool);

impl Drop for Flag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

thread_local! {
    /// A scope kept in a thread local: used first on its thread, so destroyed last.
    static SCOPE: std::cell::RefCell<Option<GameThreadScope>> =
        const { std::cell::RefCell::new(None) };
    /// Library values kept in a thread local, destroyed after the runtime's thread locals.
    static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
}

/// Uses every registry of the runtime's thread locals (core delegates, the queue's drain and
/// spare buffer, the frame waiters, the coroutine table, the queued senders' registry), so that
/// each is first made after the thread locals of these tests, and destroyed before them.
fn use_the_runtime_registries() {
    let _ = lumina::CoreDelegates::get()
        .on_post_engine_init()
        .add_lambda(|| {});
    main_thread::enqueue(|| {});
    main_thread::process_queue();
    let _ = lumina::coroutine::spawn_local(async { lumina::coroutine::frames(1).await });
    main_thread::process_queue(); // the task waits for the next frame: a frame waker
    let owner = std::rc::Rc::new(Owner::default());
    let _ = main_thread::QueuedSender::new(&owner, |owner: &Owner| &owner.on_item);
}

/// A scope kept in a thread local ends at the thread's exit, after the runtime's registries were
/// destroyed: its end still empties the core delegates and drops the session's queued tasks, and
/// releases the designation, without aborting (it read the registry of session teardowns with
/// `with`, panicking in a destructor).
#[test]
fn r2_a_game_thread_scope_in_a_thread_local_ends_at_the_thread_exit_without_aborting() {
    static CORE_SUBSCRIBER_DROPPED: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);
    static QUEUED_TASK_DROPPED: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);
    child::in_child_process(
        "r2_a_game_thread_scope_in_a_thread_local_ends_at_the_thread_exit_without_aborting",
        || {
            thread::spawn(|| {
                SCOPE.with_borrow_mut(|scope| *scope = Some(GameThreadScope::enter()));
                use_the_runtime_registries();
                let subscriber = Flag(&CORE_SUBSCRIBER_DROPPED);
                let _ = lumina::CoreDelegates::get()
                    .on_post_engine_init()
                    .add_lambda(move || {
                        let _ = &subscriber;
                    });
                let left = Flag(&QUEUED_TASK_DROPPED);
                main_thread::enqueue(move || {
                    let _ = &left;
                });
            })
            .join()
            .expect("the thread exits normally");
            assert!(
                CORE_SUBSCRIBER_DROPPED.load(Ordering::SeqCst),
                "the scope's end emptied the core delegates"
            );
            assert!(
                QUEUED_TASK_DROPPED.load(Ordering::SeqCst),
                "the scope's end dropped the task left queued"
            );
            // The designation was released: another scope begins.
            let _game = GameThreadScope::enter();
            assert!(main_thread::is_game_thread());
        },
    );
}

/// An object with a delegate, for queued senders.
#[derive(Default)]
struct Owner {
    on_item: lumina::MulticastDelegate<dyn Fn(u32)>,
}

/// Library values kept in a thread local: a delegate whose subscriber's capture uses the
/// runtime when dropped, a coroutine's handle, a queued sender, a pending `NextBroadcast`.
struct Kept {
    delegate: lumina::MulticastDelegate<dyn Fn(u32)>,
    _sender: main_thread::QueuedSender<(u32,)>,
    _next: std::pin::Pin<Box<lumina::NextBroadcast<(u32,)>>>,
    _owner: std::rc::Rc<Owner>,
}

/// What [`UsesTheRuntime`]'s `Drop` saw, for the test to check once the thread has exited.
static SEEN_AT_EXIT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A subscriber's capture whose `Drop`, run at the thread's exit after the runtime's registries
/// are destroyed, uses the queue, coroutines, frame waiters and queued senders.
struct UsesTheRuntime {
    task: lumina::coroutine::TaskHandle,
    owner: std::rc::Rc<Owner>,
}

impl Drop for UsesTheRuntime {
    fn drop(&mut self) {
        let mut seen = Vec::new();
        seen.push(format!("task status {:?}", self.task.status()));
        seen.push(format!("cancel {}", self.task.cancel()));
        let spawned = lumina::coroutine::spawn_local(async {});
        seen.push(format!("spawned {:?}", spawned.status()));
        seen.push(format!("tasks {}", lumina::coroutine::task_count()));
        main_thread::wake_next_frame(std::task::Waker::noop().clone());
        main_thread::enqueue(|| {});
        seen.push(format!("drain ran {}", main_thread::process_queue()));
        let sender = main_thread::QueuedSender::new(&self.owner, |owner: &Owner| &owner.on_item);
        sender.send(7);
        seen.push(format!("senders {}", main_thread::queued_targets()));
        *SEEN_AT_EXIT.lock().unwrap() = seen;
    }
}

/// Library values kept in a thread local are dropped at the thread's exit, after the runtime's
/// registries were destroyed, and a `Drop` they run uses the runtime: every operation answers
/// (a cancel finds nothing, a spawn is abandoned, a drain runs nothing, a sender reaches
/// nothing) and nothing aborts.
#[test]
fn r2_library_values_in_a_thread_local_use_the_runtime_at_the_thread_exit_without_aborting() {
    child::in_child_process(
        "r2_library_values_in_a_thread_local_use_the_runtime_at_the_thread_exit_without_aborting",
        || {
            thread::spawn(|| {
                SCOPE.with_borrow_mut(|scope| *scope = Some(GameThreadScope::enter()));
                KEPT.with_borrow_mut(|kept| *kept = None);
                use_the_runtime_registries();
                let owner = std::rc::Rc::new(Owner::default());
                let delegate = lumina::MulticastDelegate::<dyn Fn(u32)>::new();
                let mut next = Box::pin(delegate.next());
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(next.as_mut().poll(&mut cx).is_pending());
                let capture = UsesTheRuntime {
                    task: lumina::coroutine::spawn_local(std::future::pending()),
                    owner: std::rc::Rc::clone(&owner),
                };
                let _ = delegate.add_lambda(move |_| {
                    let _ = &capture;
                });
                let kept = Kept {
                    delegate,
                    _sender: main_thread::QueuedSender::new(&owner, |owner: &Owner| &owner.on_item),
                    _next: next,
                    _owner: owner,
                };
                assert_eq!(kept.delegate.len(), 2);
                KEPT.with_borrow_mut(|slot| *slot = Some(kept));
            })
            .join()
            .expect("the thread exits normally");
            assert_eq!(
                *SEEN_AT_EXIT.lock().unwrap(),
                [
                    "task status Abandoned",
                    "cancel false",
                    "spawned Abandoned",
                    "tasks 0",
                    "drain ran 0",
                    "senders 0",
                ]
            );
        },
    );
}
