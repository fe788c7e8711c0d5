//! X5: the future of a delegate's next broadcast (every delegate kind), polled by a hand-rolled
//! waker, and coroutines on the game thread (`coroutine::spawn_local`), with re-entrancy at
//! every point where user code runs: the waker, the arguments' `Clone`, the futures' drops, the
//! tasks themselves.

mod support;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use lumina::core_delegates::LifecycleSignal;
use lumina::coroutine::{self, TaskStatus};
use lumina::main_thread::{self, GameThreadScope};
use lumina::multicast::ByReference;
use lumina::{
    Gone, MulticastDelegate, NextBroadcast, ScriptDelegate, declare_multicast_delegate,
    script_delegate,
};
use support::capture_tracing;

thread_local! {
    /// What the test waker does, besides counting, when woken on this thread.
    static ON_WAKE: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// A hand-rolled waker: counts wakes, and runs `ON_WAKE` when woken on its test's thread.
struct TestWaker {
    wakes: AtomicUsize,
}

impl Wake for TestWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        let hook = ON_WAKE.with_borrow_mut(Option::take);
        if let Some(hook) = hook {
            hook();
            ON_WAKE.with_borrow_mut(|slot| *slot = Some(hook));
        }
    }
}

fn test_waker() -> (Arc<TestWaker>, Waker) {
    let inner = Arc::new(TestWaker {
        wakes: AtomicUsize::new(0),
    });
    (Arc::clone(&inner), Waker::from(inner))
}

fn poll<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// An argument that counts its clones.
#[derive(Debug, PartialEq)]
struct Counted(u32, Rc<Cell<u32>>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.1.set(self.1.get() + 1);
        Counted(self.0, Rc::clone(&self.1))
    }
}

declare_multicast_delegate!(OnOpened(door: &str, speed: f32));
declare_multicast_delegate!(OnAsk(question: u32) -> bool);

#[script_delegate]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pressed {
    plate: u32,
}

#[test]
fn x5_next_resolves_with_the_next_broadcasts_arguments_and_unsubscribes() {
    let on_hit: MulticastDelegate<dyn Fn(Counted, u32)> = MulticastDelegate::new();
    let clones = Rc::new(Cell::new(0));
    let (inner, waker) = test_waker();
    let mut next = on_hit.next();
    assert_eq!(
        on_hit.len(),
        1,
        "subscribed when made, before the first poll"
    );
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    let _other = on_hit.add_lambda(|_, _| {});
    on_hit.broadcast(Counted(3, Rc::clone(&clones)), 9);
    assert_eq!(inner.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(on_hit.len(), 1, "one-shot: removed when it fired");
    // M11: one clone, for the future (the last subscriber got the original).
    assert_eq!(clones.get(), 1);
    assert_eq!(
        poll(&mut next, &waker),
        Poll::Ready(Ok((Counted(3, Rc::clone(&clones)), 9)))
    );
    on_hit.broadcast(Counted(4, Rc::clone(&clones)), 1);
    assert_eq!(inner.wakes.load(Ordering::SeqCst), 1, "fired once only");
}

#[test]
fn x5_every_delegate_kind_has_next() {
    let (_, waker) = test_waker();
    // By reference: an owned copy.
    let on_chat: MulticastDelegate<dyn Fn(&str)> = MulticastDelegate::new();
    let mut chat = on_chat.next();
    ByReference::broadcast(&on_chat, "hi");
    assert_eq!(poll(&mut chat, &waker), Poll::Ready(Ok("hi".to_owned())));

    // The generic registration view.
    let on_score: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let mut score = on_score.registration().next();
    on_score.broadcast(5);
    assert_eq!(poll(&mut score, &waker), Poll::Ready(Ok((5,))));

    // Declared, and its view; references owned with `ToOwned`.
    let on_opened = OnOpened::new();
    let mut opened = on_opened.next();
    let mut opened_view = on_opened.registration().next();
    on_opened.broadcast("front", 1.5);
    assert_eq!(
        poll(&mut opened, &waker),
        Poll::Ready(Ok(("front".to_owned(), 1.5)))
    );
    assert_eq!(
        poll(&mut opened_view, &waker),
        Poll::Ready(Ok(("front".to_owned(), 1.5)))
    );

    // With a return type: the future's subscriber answers `Default::default()`.
    let on_ask = OnAsk::new();
    let _yes = on_ask.add_lambda(|_| true);
    let mut asked = on_ask.next();
    assert_eq!(on_ask.broadcast_collect(7), [true, false]);
    assert_eq!(poll(&mut asked, &waker), Poll::Ready(Ok((7,))));

    // Script delegates, native side.
    let on_pressed: ScriptDelegate<Pressed> = ScriptDelegate::new();
    let mut pressed = on_pressed.next();
    on_pressed.broadcast(&Pressed { plate: 2 });
    assert_eq!(
        poll(&mut pressed, &waker),
        Poll::Ready(Ok(Pressed { plate: 2 }))
    );

    // Lifecycle signals (core delegates): fires once; after that, gone at once.
    let on_ready = LifecycleSignal::new("on_ready");
    let mut ready = on_ready.next();
    on_ready.broadcast_and_clear();
    assert_eq!(poll(&mut ready, &waker), Poll::Ready(Ok(())));
    let mut late = on_ready.next();
    assert_eq!(poll(&mut late, &waker), Poll::Ready(Err(Gone)));
}

#[test]
fn x5_gone_when_the_delegate_is_dropped_or_cleared_first() {
    let (inner, waker) = test_waker();
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let mut next = on_hit.next();
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    drop(on_hit);
    assert_eq!(inner.wakes.load(Ordering::SeqCst), 1, "woken to see it");
    assert_eq!(poll(&mut next, &waker), Poll::Ready(Err(Gone)));

    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let mut next = on_hit.next();
    on_hit.clear();
    assert_eq!(poll(&mut next, &waker), Poll::Ready(Err(Gone)));
    assert!(Gone.to_string().contains("dropped or cleared"));
}

#[test]
fn x5_dropping_the_future_unsubscribes_at_once() {
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let next = on_hit.next();
    assert_eq!(on_hit.len(), 1);
    drop(next);
    assert!(on_hit.is_empty());
    on_hit.broadcast(1); // nothing to reach
}

#[test]
fn x5_a_future_made_during_a_broadcast_resolves_at_the_next_one() {
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let made: Rc<RefCell<Option<NextBroadcast<(u32,)>>>> = Rc::new(RefCell::new(None));
    let (delegate, slot) = (Rc::downgrade(&on_hit), Rc::clone(&made));
    let _maker = on_hit.add_lambda(move |_| {
        if slot.borrow().is_none() {
            let next = delegate.upgrade().unwrap().next();
            *slot.borrow_mut() = Some(next);
        }
    });
    let (_, waker) = test_waker();
    on_hit.broadcast(1);
    let mut next = made.borrow_mut().take().unwrap();
    assert!(
        !next.is_ready(),
        "M2: not reached by the broadcast it was made in"
    );
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    on_hit.broadcast(2);
    assert_eq!(poll(&mut next, &waker), Poll::Ready(Ok((2,))));
}

#[test]
fn x5_a_future_dropped_inside_the_broadcast_that_would_wake_it() {
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let victim: Rc<RefCell<Option<NextBroadcast<(u32,)>>>> = Rc::new(RefCell::new(None));
    let slot = Rc::clone(&victim);
    // Runs first (priority), drops the future before the broadcast reaches it.
    let _dropper = on_hit
        .subscribe()
        .priority(10)
        .add_lambda(move |_| drop(slot.borrow_mut().take()));
    let (inner, waker) = test_waker();
    let mut next = on_hit.next();
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    *victim.borrow_mut() = Some(next);
    on_hit.broadcast(1);
    assert_eq!(
        inner.wakes.load(Ordering::SeqCst),
        0,
        "M3: a dropped future's subscriber never runs, and its waker is not woken"
    );
    assert_eq!(on_hit.len(), 1);

    // The waker itself drops the future it wakes.
    let held: Rc<RefCell<Option<NextBroadcast<(u32,)>>>> = Rc::new(RefCell::new(None));
    let slot = Rc::clone(&held);
    ON_WAKE.with_borrow_mut(|hook| *hook = Some(Box::new(move || drop(slot.borrow_mut().take()))));
    let (inner, waker) = test_waker();
    let mut next = on_hit.next();
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    *held.borrow_mut() = Some(next);
    on_hit.broadcast(2);
    ON_WAKE.with_borrow_mut(Option::take);
    assert_eq!(inner.wakes.load(Ordering::SeqCst), 1);
    assert!(held.borrow().is_none());
    assert_eq!(on_hit.len(), 1, "only the dropper is left");
}

#[test]
fn x5_a_waker_that_reenters_the_delegate() {
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let calls = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&calls);
    let _log = on_hit.add_lambda(move |x| sink.borrow_mut().push(x));
    // The waker broadcasts again (nested, inside the broadcast) and makes a new future.
    let again: Rc<RefCell<Option<NextBroadcast<(u32,)>>>> = Rc::new(RefCell::new(None));
    let (delegate, slot) = (Rc::downgrade(&on_hit), Rc::clone(&again));
    ON_WAKE.with_borrow_mut(|hook| {
        *hook = Some(Box::new(move || {
            let delegate = delegate.upgrade().unwrap();
            if slot.borrow().is_none() {
                *slot.borrow_mut() = Some(delegate.next());
                delegate.broadcast(100);
            }
        }))
    });
    let (inner, waker) = test_waker();
    let mut next = on_hit.next();
    assert_eq!(poll(&mut next, &waker), Poll::Pending);
    on_hit.broadcast(1);
    ON_WAKE.with_borrow_mut(Option::take);
    assert_eq!(poll(&mut next, &waker), Poll::Ready(Ok((1,))));
    // The nested broadcast did not reach the first future again (it had fired), and reached
    // the one made just before it (M2: added before that broadcast began).
    let mut again = again.borrow_mut().take().unwrap();
    assert_eq!(poll(&mut again, &waker), Poll::Ready(Ok((100,))));
    assert_eq!(*calls.borrow(), [1, 100]);
    assert_eq!(inner.wakes.load(Ordering::SeqCst), 1);
    assert_eq!(on_hit.len(), 1);
}

/// An argument whose `Clone` broadcasts its delegate again, once.
struct Reentrant {
    value: u32,
    delegate: std::rc::Weak<MulticastDelegate<dyn Fn(Reentrant)>>,
    fired: Rc<Cell<bool>>,
}

impl Clone for Reentrant {
    fn clone(&self) -> Self {
        if !self.fired.replace(true) {
            let delegate = self.delegate.upgrade().unwrap();
            delegate.broadcast(Reentrant {
                value: self.value + 1000,
                delegate: self.delegate.clone(),
                fired: Rc::clone(&self.fired),
            });
        }
        Reentrant {
            value: self.value,
            delegate: self.delegate.clone(),
            fired: Rc::clone(&self.fired),
        }
    }
}

#[test]
fn x5_an_argument_clone_that_broadcasts_again() {
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(Reentrant)>::new());
    let (_, waker) = test_waker();
    let mut next = on_hit.next();
    let _last = on_hit.add_lambda(|_| {});
    on_hit.broadcast(Reentrant {
        value: 1,
        delegate: Rc::downgrade(&on_hit),
        fired: Rc::new(Cell::new(false)),
    });
    // The clone for the future broadcast first: that nested broadcast resolved it.
    match poll(&mut next, &waker) {
        Poll::Ready(Ok((hit,))) => assert_eq!(hit.value, 1001),
        other => panic!(
            "expected the nested broadcast's argument, got {:?}",
            other.is_ready()
        ),
    }
    assert_eq!(on_hit.len(), 1);
}

/// A minimal single-threaded executor that is not lumina's: one task, polled while woken.
struct MiniExecutor {
    task: Pin<Box<dyn Future<Output = ()>>>,
    woken: Arc<Flag>,
    done: bool,
}

struct Flag(std::sync::atomic::AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl MiniExecutor {
    fn new(task: impl Future<Output = ()> + 'static) -> Self {
        MiniExecutor {
            task: Box::pin(task),
            woken: Arc::new(Flag(std::sync::atomic::AtomicBool::new(true))),
            done: false,
        }
    }

    fn run_until_stalled(&mut self) {
        let waker = Waker::from(Arc::clone(&self.woken));
        while !self.done && self.woken.0.swap(false, Ordering::SeqCst) {
            let poll = self.task.as_mut().poll(&mut Context::from_waker(&waker));
            self.done = poll.is_ready();
        }
    }
}

#[test]
fn x5_the_future_works_with_another_executor() {
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let result = Rc::new(Cell::new(0));
    let (delegate, sink) = (Rc::clone(&on_hit), Rc::clone(&result));
    let mut executor = MiniExecutor::new(async move {
        let (a,) = delegate.next().await.unwrap();
        let (b,) = delegate.next().await.unwrap();
        sink.set(a + b);
    });
    executor.run_until_stalled();
    on_hit.broadcast(2);
    executor.run_until_stalled();
    assert_eq!(result.get(), 0);
    on_hit.broadcast(40);
    executor.run_until_stalled();
    assert!(executor.done);
    assert_eq!(result.get(), 42);
}

#[test]
fn x5_spawn_local_runs_tasks_from_process_queue_with_frames() {
    let _game = GameThreadScope::enter();
    let log = Rc::new(RefCell::new(Vec::new()));
    let on_switch = Rc::new(MulticastDelegate::<dyn Fn(&str)>::new());
    let (switch, sink) = (Rc::clone(&on_switch), Rc::clone(&log));
    let task = coroutine::spawn_local(async move {
        sink.borrow_mut()
            .push(format!("start {}", main_thread::frame()));
        let name = ByReference::next(&*switch).await.unwrap();
        sink.borrow_mut()
            .push(format!("{name} {}", main_thread::frame()));
        coroutine::frames(1).await;
        sink.borrow_mut()
            .push(format!("next frame {}", main_thread::frame()));
        coroutine::frames(2).await;
        sink.borrow_mut()
            .push(format!("two frames {}", main_thread::frame()));
    });
    assert!(
        log.borrow().is_empty(),
        "first polled at the next process_queue"
    );
    main_thread::process_queue(); // frame 1
    ByReference::broadcast(&*on_switch, "switch");
    assert_eq!(task.status(), TaskStatus::Running);
    for _ in 0..5 {
        main_thread::process_queue(); // frames 2..6
    }
    assert_eq!(
        *log.borrow(),
        ["start 1", "switch 2", "next frame 3", "two frames 5"]
    );
    assert_eq!(task.status(), TaskStatus::Finished);
    assert_eq!(coroutine::task_count(), 0);
}

#[test]
fn x5_a_panicking_task_is_reported_and_the_others_go_on() {
    let _game = GameThreadScope::enter();
    let ran = Rc::new(Cell::new(0));
    let counter = Rc::clone(&ran);
    let bad = coroutine::spawn_local(async {
        coroutine::frames(1).await;
        panic!("the door is stuck");
    });
    let good = coroutine::spawn_local(async move {
        for _ in 0..3 {
            counter.set(counter.get() + 1);
            coroutine::frames(1).await;
        }
    });
    let ((), logs) = capture_tracing(|| {
        for _ in 0..4 {
            main_thread::process_queue();
        }
    });
    assert_eq!(bad.status(), TaskStatus::Panicked);
    assert!(logs.contains("the door is stuck"), "{logs}");
    assert_eq!(good.status(), TaskStatus::Finished);
    assert_eq!(ran.get(), 3);
}

/// A task whose `Drop` panics: a wrapper, so that a panic of the task's poll does not drop it
/// while it unwinds (that would abort, as for any value).
struct Stuck(Pin<Box<dyn Future<Output = ()>>>);

impl Future for Stuck {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Drop for Stuck {
    fn drop(&mut self) {
        panic!("the door's task is stuck");
    }
}

/// X5: a panic in a task's `Drop`, run when the drain drops the task (it finished, panicked, or
/// cancelled itself), is that task's panic: reported through `tracing`, the task `Panicked`,
/// and `process_queue` returns normally, having polled the other tasks of its batch.
#[test]
fn x5_a_task_whose_drop_panics_is_reported_and_the_drain_goes_on() {
    let _game = GameThreadScope::enter();
    let polls = Rc::new(Cell::new(0));
    let (mut stuck, mut others) = (Vec::new(), Vec::new());
    for ends in ["finishes", "panics", "cancels itself"] {
        let counter = Rc::clone(&polls);
        let me: Rc<RefCell<Option<coroutine::TaskHandle>>> = Rc::default();
        let handle = Rc::clone(&me);
        let task = coroutine::spawn_local(Stuck(Box::pin(async move {
            counter.set(counter.get() + 1);
            match ends {
                "panics" => panic!("the door is stuck"),
                "cancels itself" => {
                    let _ = handle.borrow().as_ref().map(coroutine::TaskHandle::cancel);
                    std::future::pending::<()>().await;
                }
                _ => {}
            }
        })));
        let counter = Rc::clone(&polls);
        others.push(coroutine::spawn_local(async move {
            counter.set(counter.get() + 1);
        }));
        *me.borrow_mut() = Some(task);
        stuck.push(me);
    }
    let (drained, logs) = capture_tracing(|| std::panic::catch_unwind(main_thread::process_queue));
    assert_eq!(
        drained.expect("a task's panicking Drop stays with the task"),
        6
    );
    assert_eq!(polls.get(), 6, "every task was polled in this drain");
    assert_eq!(
        logs.matches("the door's task is stuck").count(),
        3,
        "{logs}"
    );
    let statuses: Vec<_> = stuck
        .iter()
        .map(|me| me.borrow().as_ref().map(coroutine::TaskHandle::status))
        .collect();
    assert_eq!(statuses, [Some(TaskStatus::Panicked); 3]);
    for handle in &others {
        assert_eq!(handle.status(), TaskStatus::Finished);
    }
    assert_eq!(coroutine::task_count(), 0);
}

#[test]
fn x5_tasks_spawn_and_cancel_tasks_and_themselves() {
    let _game = GameThreadScope::enter();
    let log = Rc::new(RefCell::new(Vec::new()));
    let on_hit = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let waiting = {
        let (delegate, sink) = (Rc::clone(&on_hit), Rc::clone(&log));
        coroutine::spawn_local(async move {
            let _ = delegate.next().await;
            sink.borrow_mut().push("never".to_owned());
        })
    };
    let own: Rc<RefCell<Option<coroutine::TaskHandle>>> = Rc::new(RefCell::new(None));
    let parent = {
        let (sink, own) = (Rc::clone(&log), Rc::clone(&own));
        coroutine::spawn_local(async move {
            let inner_sink = Rc::clone(&sink);
            let child = coroutine::spawn_local(async move {
                inner_sink.borrow_mut().push("child".to_owned());
            });
            assert_eq!(child.status(), TaskStatus::Running);
            sink.borrow_mut().push("parent".to_owned());
            coroutine::frames(1).await;
            // Cancels itself: this poll finishes, and it never runs again.
            assert!(own.borrow().as_ref().unwrap().cancel());
            sink.borrow_mut().push("parent cancelled itself".to_owned());
            coroutine::frames(1).await;
            sink.borrow_mut().push("never".to_owned());
        })
    };
    *own.borrow_mut() = Some(parent);
    main_thread::process_queue();
    assert_eq!(on_hit.len(), 1, "the waiting task's future is subscribed");
    assert!(waiting.cancel());
    assert!(
        on_hit.is_empty(),
        "cancelling dropped the task, and its future unsubscribed"
    );
    assert!(!waiting.cancel(), "already ended");
    for _ in 0..3 {
        main_thread::process_queue();
    }
    on_hit.broadcast(1);
    main_thread::process_queue();
    assert_eq!(
        *log.borrow(),
        ["parent", "child", "parent cancelled itself"]
    );
    assert_eq!(waiting.status(), TaskStatus::Cancelled);
    assert_eq!(
        own.borrow().as_ref().unwrap().status(),
        TaskStatus::Cancelled
    );
    assert_eq!(coroutine::task_count(), 0);
}

/// A future that parks its waker where another thread can take it.
struct Parked {
    waker: Arc<Mutex<Option<Waker>>>,
    polls: Rc<Cell<u32>>,
}

impl Future for Parked {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.set(self.polls.get() + 1);
        if self.polls.get() >= 2 {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn x5_a_task_woken_from_another_thread_runs_at_the_next_drain() {
    let _game = GameThreadScope::enter();
    let parked = Arc::new(Mutex::new(None));
    let polls = Rc::new(Cell::new(0));
    let task = coroutine::spawn_local(Parked {
        waker: Arc::clone(&parked),
        polls: Rc::clone(&polls),
    });
    main_thread::process_queue();
    assert_eq!(polls.get(), 1);
    let waker = parked.lock().unwrap().take().unwrap();
    std::thread::spawn(move || {
        waker.wake_by_ref();
        waker.wake_by_ref(); // one poll queued, however many wakes
        drop(waker);
    })
    .join()
    .unwrap();
    assert_eq!(polls.get(), 1, "not polled on the waking thread");
    assert_eq!(main_thread::pending(), 1);
    main_thread::process_queue();
    assert_eq!(polls.get(), 2);
    assert_eq!(task.status(), TaskStatus::Finished);
}

#[test]
fn x5_tasks_of_an_ended_session_are_never_polled() {
    let polls = Rc::new(Cell::new(0));
    let handle = {
        let _game = GameThreadScope::enter();
        let counter = Rc::clone(&polls);
        coroutine::spawn_local(async move {
            counter.set(counter.get() + 1);
        })
    };
    let _game = GameThreadScope::enter();
    main_thread::process_queue();
    assert_eq!(polls.get(), 0);
    let _other = coroutine::spawn_local(async {});
    assert_eq!(handle.status(), TaskStatus::Abandoned);
}

/// X5, T1: a session's end drops its tasks then, on the game thread, with the rest of the
/// session: a subscription a task waits on goes at once, the task's captures are dropped inside
/// the teardown (not later, in whichever session spawns next), and its handle says `Abandoned`.
#[test]
fn x5_t1_a_sessions_end_drops_its_tasks_and_their_subscriptions_at_once() {
    struct SeesTheSession(Rc<Cell<Option<bool>>>);
    impl Drop for SeesTheSession {
        fn drop(&mut self) {
            self.0.set(Some(main_thread::is_game_thread()));
        }
    }
    let on_open = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
    let dropped = Rc::new(Cell::new(None));
    let game = GameThreadScope::enter();
    let (open, sees) = (Rc::clone(&on_open), SeesTheSession(Rc::clone(&dropped)));
    let task = coroutine::spawn_local(async move {
        let _sees = sees;
        let _ = open.next().await;
    });
    main_thread::process_queue();
    assert_eq!(on_open.len(), 1, "the task waits on the delegate");
    drop(game);
    assert_eq!(on_open.len(), 0, "unsubscribed by the session's end");
    assert_eq!(dropped.get(), Some(true), "dropped inside the teardown");
    assert_eq!(task.status(), TaskStatus::Abandoned);
    assert_eq!(coroutine::task_count(), 0);
}

#[test]
fn x5_spawn_local_off_the_game_thread_panics_with_directions() {
    let result = std::thread::spawn(|| {
        std::panic::catch_unwind(|| drop(coroutine::spawn_local(async {})))
            .map_err(|payload| support::panic_message(&*payload))
    })
    .join()
    .unwrap();
    let message = result.unwrap_err();
    assert!(message.contains("coroutine::spawn_local"), "{message}");
    assert!(message.contains("enqueue"), "{message}");
}

/// Keeps `pin!` in use for the doc-style polling above (no `Unpin` needed).
#[test]
fn x5_pinned_polling_of_a_non_unpin_wrapper() {
    let on_hit: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let (_, waker) = test_waker();
    let mut wrapped = pin!(async { on_hit.next().await });
    let mut cx = Context::from_waker(&waker);
    assert!(wrapped.as_mut().poll(&mut cx).is_pending());
    on_hit.broadcast(3);
    assert_eq!(wrapped.poll(&mut cx), Poll::Ready(Ok((3,))));
}
