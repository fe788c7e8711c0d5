//! Coroutines on the game thread (rule X5): `!Send` futures polled by
//! [`main_thread::process_queue`], with futures that wait for frames.
//!
//! Gameplay sequences read as "wait until X fires, then ...": an `async` block awaits a
//! delegate's [`next()`](crate::NextBroadcast) or [`frames`] (`frames(1)`: the next frame), and
//! [`spawn_local`] runs it on the game thread. No async runtime is involved: the executor is the
//! main-thread queue itself.
//!
//! ```
//! use lumina::{coroutine, main_thread, MulticastDelegate};
//! use std::cell::RefCell;
//! use std::rc::Rc;
//!
//! let _game = main_thread::GameThreadScope::enter();
//! let on_switch = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
//! let log = Rc::new(RefCell::new(Vec::new()));
//!
//! let (switch, sink) = (Rc::clone(&on_switch), Rc::clone(&log));
//! coroutine::spawn_local(async move {
//!     let (id,) = switch.next().await.expect("the switch outlives the sequence");
//!     sink.borrow_mut().push(format!("switch {id} fired"));
//!     coroutine::frames(2).await;
//!     sink.borrow_mut().push("two frames later".to_owned());
//! });
//!
//! main_thread::process_queue(); // frame 1: the task starts and waits for the switch
//! on_switch.broadcast(7);       // wakes it
//! main_thread::process_queue(); // frame 2: "switch 7 fired", waits two frames
//! main_thread::process_queue(); // frame 3
//! assert_eq!(log.borrow().len(), 1);
//! main_thread::process_queue(); // frame 4: done
//! assert_eq!(*log.borrow(), ["switch 7 fired", "two frames later"]);
//! ```
//!
//! # How tasks run
//!
//! - A task lives in a table of the game thread, keyed by its id. Its waker holds only that id
//!   and its session (an `Arc`, so it is `Send + Sync` as every `Waker` must be): waking it, from
//!   any thread, queues one poll of the task with [`main_thread::enqueue`], at most one at a time.
//!   So a task is polled only by `process_queue`, never inside the code that woke it.
//! - A task is polled with nothing borrowed: it may spawn tasks, cancel any task (itself
//!   included: it is dropped once its poll returns), broadcast, and wake anything.
//! - A panic in a task is caught, reported through `tracing` and in its [`TaskHandle`], and the
//!   task is dropped; the other tasks and the rest of the drain go on. A panic in the task's
//!   `Drop` when the drain drops it (it finished, panicked, or cancelled itself) is the task's
//!   too: reported the same way, the task `Panicked`, and `process_queue` returns normally. A
//!   task's `Drop` run by a call of the caller's, [`TaskHandle::cancel`] from outside the task,
//!   panics into that call; one run by a session's end or a module's unload resumes once that
//!   teardown is complete (R3).
//! - A task of a game module (its future's code lies in the module's library, or the module's
//!   code was running when it was spawned) is dropped, unpolled, when the module unloads (MB4,
//!   MB6); a task that unloads its own module is dropped when that poll returns.
//! - A task of a game-thread session that ended (a `GameThreadScope` dropped) is never polled
//!   again: the session's end drops it (`Abandoned`), with the rest of the session's state, so
//!   what it waits on is unsubscribed then and its captures are dropped on the game thread, not
//!   in whichever session comes next.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crate::drops::{AtThreadExit, Drops, Guarded};
use crate::id_map::IdMap;
use crate::main_thread;
use crate::track::{self, Origin};

/// Task ids, unique in the process.
static NEXT_TASK: AtomicU64 = AtomicU64::new(1);

type BoxedTask = Pin<Box<dyn Future<Output = ()>>>;

/// How a task is doing, as its [`TaskHandle`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum TaskStatus {
    /// Spawned, not finished: it runs at the drains it is woken for.
    Running,
    /// Its future completed.
    Finished,
    /// Cancelled by [`TaskHandle::cancel`]: dropped without running further.
    Cancelled,
    /// It panicked; the panic was reported and the task dropped.
    Panicked,
    /// The game module whose code it runs was unloaded: dropped unpolled (MB4).
    Unloaded,
    /// Its game-thread session ended before it finished: never polled again.
    Abandoned,
}

struct Slot {
    /// `None` while it is being polled.
    future: Option<BoxedTask>,
    /// Its waker, which also holds its status (shared with its handle).
    waker: Arc<TaskWaker>,
    /// Whose it is: the module that spawned it, and its code (the future's vtable), when a game
    /// module was loaded at spawn (MB4, MB6).
    origin: Origin,
    /// Cancelled (or unloaded) while it was being polled: dropped once the poll returns.
    ended: Option<TaskStatus>,
}

#[derive(Default)]
struct Tasks {
    session: u64,
    /// User values: dropped under the guard if the thread exits with tasks alive (R2).
    slots: AtThreadExit<IdMap<u64, Slot>>,
}

impl Drop for Tasks {
    /// The thread exits with tasks alive: their handles (kept elsewhere, say in another thread
    /// local) report them abandoned; the tasks are dropped next, under the guard.
    fn drop(&mut self) {
        for slot in self.slots.values() {
            slot.waker.set_status(TaskStatus::Abandoned);
        }
    }
}

thread_local! {
    /// Reached with `try_with` only: a `Drop` that runs while the thread's locals are destroyed
    /// (a handle's owner that cancels, a capture that spawns, a waker that polls) may come after
    /// this table is gone, and a panic there would abort the process (R2). Then no task is
    /// alive: a spawn drops its future unpolled (`Abandoned`), a cancel finds nothing to cancel,
    /// a poll nothing to poll.
    static TASKS: RefCell<Tasks> = RefCell::new(Tasks::default());
    /// Whether this thread's session ends drop its tasks ([`end_session_tasks`] is registered
    /// with `main_thread::at_session_end`, once per thread, at its first spawn). No destructor:
    /// readable at the thread's exit.
    static ENDS_WITH_THE_SESSION: Cell<bool> = const { Cell::new(false) };
}

/// The waker of one task: its id and session, and its status, which its handle reads (one
/// allocation per task for both). `Send + Sync`; waking queues one poll.
struct TaskWaker {
    id: u64,
    session: u64,
    /// A poll is queued and has not started: further wakes add nothing.
    queued: AtomicBool,
    /// The task's [`TaskStatus`], as a number. Set and read on the game thread only (the slot
    /// and the handle are the game thread's); atomic because a waker is `Sync`.
    status: AtomicU8,
}

impl TaskWaker {
    /// Every status, at its discriminant.
    const STATUSES: [TaskStatus; 6] = [
        TaskStatus::Running,
        TaskStatus::Finished,
        TaskStatus::Cancelled,
        TaskStatus::Panicked,
        TaskStatus::Unloaded,
        TaskStatus::Abandoned,
    ];

    fn status(&self) -> TaskStatus {
        Self::STATUSES[usize::from(self.status.load(Ordering::Relaxed))]
    }

    fn set_status(&self, status: TaskStatus) {
        debug_assert_eq!(Self::STATUSES[status as usize], status);
        self.status.store(status as u8, Ordering::Relaxed);
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let (id, session) = (self.id, self.session);
            main_thread::enqueue(move || poll_task(id, session));
        }
    }
}

/// A spawned task: its status, and the way to cancel it. Dropping the handle detaches the task
/// (it keeps running), as a thread's `JoinHandle` does.
pub struct TaskHandle {
    id: u64,
    /// The task's waker, for its status.
    waker: Arc<TaskWaker>,
    /// The game thread's: `cancel` reaches its table of tasks.
    _game_thread: PhantomData<Rc<()>>,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("status", &self.waker.status())
            .finish()
    }
}

impl TaskHandle {
    /// How the task is doing: whether it has ended, whichever way, is
    /// `status() != TaskStatus::Running`.
    pub fn status(&self) -> TaskStatus {
        self.waker.status()
    }

    /// Cancels the task: it is dropped now (with everything it holds: a pending
    /// [`NextBroadcast`](crate::NextBroadcast) unsubscribes), or, when it cancels itself from
    /// inside its own poll, as soon as that poll returns. `false` if it had already ended.
    pub fn cancel(&self) -> bool {
        end_task(self.id, TaskStatus::Cancelled)
    }
}

/// Runs `future` on the game thread: its first poll is at the next
/// [`main_thread::process_queue`], and later ones at the drains after something woke it.
/// Returns a handle to follow or cancel it; dropping the handle leaves the task running.
///
/// A panic of the task, in its poll or in its `Drop` when the drain drops it, stays with the
/// task: reported through `tracing`, the task [`Panicked`](TaskStatus::Panicked), and the drain
/// polls the other tasks (X5). It never reaches the caller of `process_queue`.
///
/// On the game thread only (panics elsewhere, naming [`main_thread::enqueue`]).
#[track_caller]
pub fn spawn_local(future: impl Future<Output = ()> + 'static) -> TaskHandle {
    let future = main_thread::assert_game_thread_holding("`coroutine::spawn_local`", future);
    // Guarded: dropping the tasks of an ended session below runs user `Drop`s, whose panic
    // unwinds this spawn (R2).
    let future: Guarded<BoxedTask> = Guarded::new(Box::pin(future));
    let origin = Origin::of::<dyn Future<Output = ()>>(&**future);
    let id = NEXT_TASK.fetch_add(1, Ordering::Relaxed);
    let session = main_thread::current_session();
    let waker = Arc::new(TaskWaker {
        id,
        session,
        queued: AtomicBool::new(false),
        status: AtomicU8::new(0),
    });
    drop_stale_tasks();
    if !ENDS_WITH_THE_SESSION.replace(true) {
        main_thread::at_session_end(end_session_tasks);
    }
    track::TASK_HOOKS.get_or_init(|| track::TaskHooks {
        drop_tasks: drop_module_tasks,
    });
    let mut future = Some(future);
    let _ = TASKS.try_with(|tasks| {
        let future = future.take()?.into_inner();
        tasks.borrow_mut().slots.insert(
            id,
            Slot {
                future: Some(future),
                waker: Arc::clone(&waker),
                origin,
                ended: None,
            },
        )
    });
    if let Some(future) = future {
        // The thread exits and its table of tasks is gone: nothing would ever poll the task.
        waker.set_status(TaskStatus::Abandoned);
        drop(future);
    } else {
        waker.wake_by_ref();
    }
    TaskHandle {
        id,
        waker,
        _game_thread: PhantomData,
    }
}

/// How many tasks are alive on this thread (spawned, not ended); 0 once the thread's table of
/// tasks is destroyed (it exits).
pub fn task_count() -> usize {
    TASKS
        .try_with(|tasks| tasks.borrow().slots.len())
        .unwrap_or(0)
}

/// Drops the tasks of an ended session, if any, with nothing borrowed. (The session's end drops
/// them already, see [`end_session_tasks`]; this keeps a task of another session from ever being
/// polled whatever the order of the teardowns.)
fn drop_stale_tasks() {
    let session = main_thread::current_session();
    abandon(|tasks| {
        if tasks.session == session {
            return false;
        }
        tasks.session = session;
        true
    });
}

/// The end of a game-thread session on this thread (registered with
/// `main_thread::at_session_end`): every task is dropped, `Abandoned`. A task being polled (the
/// session ends inside its poll) is dropped once its poll returns.
fn end_session_tasks() {
    abandon(|_| true);
}

/// Takes every task out of the table if `all` says so, then drops them, `Abandoned`, in the order
/// they were spawned, with nothing borrowed, one at a time; the first panic of a `Drop` resumes at
/// the end (R3).
fn abandon(all: impl FnOnce(&mut Tasks) -> bool) {
    let mut ended: Vec<(u64, Slot)> = TASKS
        .try_with(|tasks| {
            let mut tasks = tasks.borrow_mut();
            if !all(&mut tasks) {
                return Vec::new();
            }
            tasks.slots.drain().collect()
        })
        .unwrap_or_default();
    ended.sort_unstable_by_key(|&(id, _)| id);
    let mut drops = Drops::default();
    for (_, slot) in ended {
        slot.waker.set_status(TaskStatus::Abandoned);
        drops.drop(slot);
    }
    drops.finish();
}

/// One poll of task `id`, queued by its waker.
fn poll_task(id: u64, session: u64) {
    if session != main_thread::current_session() {
        return; // a task of an ended session
    }
    drop_stale_tasks();
    let Some((mut future, waker, origin)) = TASKS
        .try_with(|tasks| {
            let mut tasks = tasks.borrow_mut();
            let slot = tasks.slots.get_mut(&id)?;
            // Cleared before the poll: a wake during it queues the next one.
            slot.waker.queued.store(false, Ordering::Release);
            Some((slot.future.take()?, Arc::clone(&slot.waker), slot.origin))
        })
        .ok()
        .flatten()
    else {
        return; // ended (cancelled, unloaded, or the thread exits) since the wake
    };
    let waker = Waker::from(waker);
    let mut cx = Context::from_waker(&waker);
    // A game module's task runs as the module's code: what it subscribes, queues or sends is
    // the module's (MB6).
    let frame = origin.enter();
    let outcome = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)));
    drop(frame);
    // The panic's payload is a user value too: dropped with the task below, once the slot is
    // settled, so that a panic of its `Drop` neither leaves the slot half-polled nor unwinds
    // while this frame holds the task plainly (R2, R3).
    let mut drops = Drops::default();
    let status = match outcome {
        Ok(Poll::Pending) => None,
        Ok(Poll::Ready(())) => Some(TaskStatus::Finished),
        Err(payload) => {
            let message = crate::drops::panic_text(&*payload);
            tracing::error!(
                task = id,
                "lumina: a coroutine task panicked: {message}; it was dropped, the other tasks \
                 go on"
            );
            drops.drop(payload);
            Some(TaskStatus::Panicked)
        }
    };
    // The table outlives the poll (only its own destructor destroys it, and a poll run from
    // there finds it gone above); were it or the slot gone, the future is dropped below.
    let mut future = Some(future);
    let done = TASKS
        .try_with(|tasks| {
            let mut tasks = tasks.borrow_mut();
            let slot = tasks.slots.get_mut(&id)?;
            // Cancelled (or unloaded) during its own poll: that stays its status, unless the
            // rest of the poll panicked.
            let status = match (slot.ended, status) {
                (Some(_), Some(TaskStatus::Panicked)) => Some(TaskStatus::Panicked),
                (Some(ended), _) => Some(ended),
                (None, status) => status,
            };
            match status {
                None => {
                    slot.future = future.take();
                    None
                }
                Some(status) => {
                    let slot = tasks.slots.remove(&id)?;
                    slot.waker.set_status(status);
                    Some(slot)
                }
            }
        })
        .ok()
        .flatten();
    drop(waker);
    // The task and what it holds are user values: dropped with nothing borrowed, guarded. A
    // panic of their `Drop` (or of the poll's payload's) is the task's: reported as a panic of
    // its poll is, and the task `Panicked`; it does not reach the drain (X5).
    let status = done.as_ref().map(|slot| Arc::clone(&slot.waker));
    drops.drop(done);
    drops.drop(future);
    if let Some(message) = drops.into_text() {
        tracing::error!(
            task = id,
            "lumina: a coroutine task panicked when it was dropped: {message}; the other tasks \
             go on"
        );
        if let Some(status) = status {
            status.set_status(TaskStatus::Panicked);
        }
    }
}

/// Ends task `id` with `status`: drops it now, or marks it to be dropped after its running poll.
fn end_task(id: u64, status: TaskStatus) -> bool {
    // `false` once the table is gone (the thread exits): its tasks were dropped with it.
    let taken = TASKS.try_with(|tasks| {
        let mut tasks = tasks.borrow_mut();
        let slot = tasks.slots.get_mut(&id)?;
        if slot.future.is_none() {
            // Being polled: dropped when the poll returns.
            if slot.ended.is_some() {
                return None;
            }
            slot.ended = Some(status);
            slot.waker.set_status(status);
            return Some(None);
        }
        let slot = tasks.slots.remove(&id)?;
        slot.waker.set_status(status);
        Some(Some(slot))
    });
    match taken.ok().flatten() {
        None => false,
        Some(slot) => {
            Drops::drop_one(slot);
            true
        }
    }
}

// ---- module hooks (MB4), see `crate::track::TaskHooks`.

/// Drops, unpolled, every task whose origin `doomed` says is an unloading module's, and
/// marks the one being polled (the unload runs inside its poll) to be dropped when its poll
/// returns; returns how many. Every one is dropped even when a `Drop` panics; the first panic
/// resumes at the end (R3: a task left behind would be polled again after the unload, MB4).
fn drop_module_tasks(doomed: &dyn Fn(Origin) -> bool) -> usize {
    // None once the table is gone (the thread exits): its tasks were dropped with it.
    let ids: Vec<u64> = TASKS
        .try_with(|tasks| {
            tasks
                .borrow()
                .slots
                .iter()
                .filter(|(_, slot)| slot.ended.is_none() && doomed(slot.origin))
                .map(|(&id, _)| id)
                .collect()
        })
        .unwrap_or_default();
    let mut drops = Drops::default();
    let mut count = 0;
    for id in ids {
        drops.run(|| count += usize::from(end_task(id, TaskStatus::Unloaded)));
    }
    drops.finish();
    count
}

// ---- end of module hooks

/// A future that completes `n` frames from its first poll: at the `n`th
/// [`main_thread::process_queue`] after the frame it was first polled in (`frames(0)` at once;
/// `frames(1)` at the next frame: the next `process_queue` after the one running now, if any).
/// It registers its waker with [`main_thread::wake_next_frame`], so it works with any executor
/// on the game thread.
pub fn frames(n: u64) -> Frames {
    Frames { n, target: None }
}

/// The future of [`frames`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Frames {
    n: u64,
    /// The frame it completes in, fixed at the first poll.
    target: Option<u64>,
}

impl Future for Frames {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = main_thread::frame();
        let n = self.n;
        let target = *self.target.get_or_insert(now + n);
        if now >= target {
            return Poll::Ready(());
        }
        main_thread::wake_next_frame(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::main_thread::GameThreadScope;

    #[test]
    fn x5_mb4_a_module_unload_drops_its_tasks_unpolled() {
        let _game = GameThreadScope::enter();
        let polled = Rc::new(Cell::new(0));
        let counter = Rc::clone(&polled);
        let doomed = spawn_local(async move { counter.set(counter.get() + 1) });
        // The unload asks about each live task's code; this predicate stands for "the code is
        // in the module's library". (Not `code.is_none()`: whether a code is known depends on
        // whether any module range is registered, which tests running in parallel with fake
        // modules change.)
        let asked = Cell::new(0);
        let hooks = track::TASK_HOOKS.get().expect("set by the first spawn");
        let dropped = (hooks.drop_tasks)(&|_| {
            asked.set(asked.get() + 1);
            true
        });
        assert_eq!((dropped, asked.get()), (1, 1));
        assert_eq!(doomed.status(), TaskStatus::Unloaded);
        assert_eq!(task_count(), 0);
        let counter = Rc::clone(&polled);
        let kept = spawn_local(async move { counter.set(counter.get() + 10) });
        assert_eq!((hooks.drop_tasks)(&|_| false), 0);
        main_thread::process_queue();
        assert_eq!(polled.get(), 10, "the unloaded task was never polled");
        assert_eq!(kept.status(), TaskStatus::Finished);
    }

    /// R3: an unload drops every task of the module even when a task's `Drop` panics (a task
    /// left behind would be polled after the unmapping), then resumes that panic.
    #[test]
    fn r3_a_module_unload_drops_every_task_when_a_drop_panics() {
        /// A task's capture whose `Drop` panics.
        struct Loud;
        impl Drop for Loud {
            fn drop(&mut self) {
                panic!("a task's capture panicked");
            }
        }
        let _game = GameThreadScope::enter();
        let handles: Vec<TaskHandle> = (0..2)
            .map(|_| {
                let loud = Loud;
                spawn_local(async move {
                    let _ = &loud;
                })
            })
            .collect();
        let hooks = track::TASK_HOOKS.get().expect("set by the first spawn");
        let payload = catch_unwind(AssertUnwindSafe(|| (hooks.drop_tasks)(&|_| true)))
            .expect_err("the first panic resumes");
        assert_eq!(
            crate::drops::panic_text(&*payload),
            "a task's capture panicked"
        );
        assert_eq!(task_count(), 0, "every task was dropped");
        for handle in &handles {
            assert_eq!(handle.status(), TaskStatus::Unloaded);
        }
    }
}
