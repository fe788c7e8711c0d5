//! X5 as a model-based property test: random scripts spawn tasks, broadcast delegates, run
//! frames (`process_queue`), cancel tasks and drop delegates, against the real executor and a
//! plain reference model of it. Tasks act at every point where their code runs: they await a
//! delegate's `next()` or frames, broadcast re-entrantly from their poll, spawn children, cancel
//! themselves or another task, and panic. Every frame must poll the same tasks in the same order
//! with the same results, and leave the same statuses and subscriptions.
//!
//! Game-thread sessions (T1) end and begin from everywhere user code runs: a task's poll, a
//! frame waker the task registers, and a task's `Drop`, each ending the session held in a thread
//! local and maybe entering the next one (a script's own step may too). A session's end drops
//! the rest of the running drain's batch, the frame waiters and every task of the session, in the
//! order spawned (each top-level task logs its drop); nothing of it runs in the next session.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;

use lumina::MulticastDelegate;
use lumina::coroutine::{self, TaskHandle, TaskStatus};
use lumina::main_thread::{self, GameThreadScope};
use proptest::prelude::*;

const DELEGATES: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// `delegates[d].next().await`, logging the value (or "gone").
    Await(usize),
    /// `coroutine::frames(n).await`.
    Frames(u64),
    /// Broadcasts `delegates[d]` from inside the task's poll.
    Broadcast(usize, u32),
    /// Spawns a child task that logs once and ends.
    Spawn,
    /// Cancels the task spawned `n` tasks ago (itself for 0), if it has ended nothing happens.
    Cancel(usize),
    Panic,
    /// Ends the session (the scope in [`SCOPE`]); then, if `true` and no scope is being ended,
    /// enters the next one.
    EndScope(bool),
    /// Registers, with `main_thread::wake_next_frame`, a waker whose `wake` logs and does what
    /// `EndScope` does.
    WakerEnds(bool),
    /// `main_thread::enqueue`s a plain task that logs this value (and whether it runs off the
    /// game thread).
    Enqueue(u32),
}

#[derive(Clone, Debug)]
enum Op {
    /// A task, and what its `Drop` does: nothing, or what `EndScope` does.
    Spawn(Vec<Step>, Option<bool>),
    EndScope(bool),
    Enqueue(u32),
    Broadcast(usize, u32),
    Frame,
    Cancel(usize),
    DropDelegate(usize),
}

type Log = Rc<RefCell<Vec<String>>>;

thread_local! {
    /// The session of the script, where its code can end it.
    static SCOPE: RefCell<Option<GameThreadScope>> = const { RefCell::new(None) };
    /// The real log, for wakers (which are `Send`).
    static WAKER_LOG: RefCell<Option<Log>> = const { RefCell::new(None) };
}

/// What `Step::EndScope` does: ends the session held in [`SCOPE`] (with nothing borrowed), then
/// enters the next one if asked and this thread is not the game thread (it is while a scope's
/// end runs: then nothing is entered).
fn end_scope(reenter: bool) {
    let scope = SCOPE.with_borrow_mut(Option::take);
    drop(scope);
    if reenter && !main_thread::is_game_thread() {
        let scope = GameThreadScope::enter();
        SCOPE.with_borrow_mut(|held| *held = Some(scope));
    }
}

/// What `Step::Enqueue` queues.
fn enqueue_real(value: u32) {
    main_thread::enqueue(move || {
        let log = WAKER_LOG.with_borrow(Clone::clone).expect("set by the run");
        let off = if main_thread::is_game_thread() {
            ""
        } else {
            " off the game thread"
        };
        log.borrow_mut().push(format!("queued {value}{off}"));
    });
}

/// A frame waker that ends the session when woken.
struct EndingWaker(usize, bool);

impl std::task::Wake for EndingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        let log = WAKER_LOG.with_borrow(Clone::clone).expect("set by the run");
        log.borrow_mut().push(format!("waker of {}", self.0));
        end_scope(self.1);
    }
}

/// A task whose `Drop` logs and may end the session; the task's own future is dropped first.
struct Acting {
    future: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>,
    id: usize,
    on_drop: Option<bool>,
    log: Log,
}

impl std::future::Future for Acting {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        match self.future.as_mut() {
            Some(future) => future.as_mut().poll(cx),
            None => std::task::Poll::Ready(()),
        }
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        drop(self.future.take());
        self.log.borrow_mut().push(format!("{} dropped", self.id));
        if let Some(reenter) = self.on_drop {
            end_scope(reenter);
        }
    }
}

/// The delegates, `None` once dropped.
type Delegates = Rc<RefCell<Vec<Option<Rc<MulticastDelegate<dyn Fn(u32)>>>>>>;

/// The real side: delegates (`None` once dropped), handles, the log.
struct Real {
    delegates: Delegates,
    handles: Rc<RefCell<Vec<TaskHandle>>>,
    log: Log,
}

fn spawn_real(real: &Real, id: usize, steps: Vec<Step>, on_drop: Option<bool>) {
    let (delegates, handles, log) = (
        Rc::clone(&real.delegates),
        Rc::clone(&real.handles),
        Rc::clone(&real.log),
    );
    let future = Box::pin(async move {
        log.borrow_mut().push(format!("{id} start"));
        for step in steps {
            match step {
                Step::Await(d) => {
                    let delegate = delegates.borrow()[d].clone();
                    let result = match delegate {
                        Some(delegate) => {
                            let next = delegate.next();
                            drop(delegate); // the task must not keep it alive
                            next.await.map(|(value,)| value)
                        }
                        None => Err(lumina::Gone),
                    };
                    match result {
                        Ok(value) => log.borrow_mut().push(format!("{id} got {value}")),
                        Err(_) => log.borrow_mut().push(format!("{id} gone")),
                    }
                }
                Step::Frames(n) => {
                    coroutine::frames(n).await;
                    log.borrow_mut()
                        .push(format!("{id} frame {}", main_thread::frame()));
                }
                Step::Broadcast(d, value) => {
                    let delegate = delegates.borrow()[d].clone();
                    if let Some(delegate) = delegate {
                        delegate.broadcast(value);
                    }
                }
                Step::Spawn => {
                    let log = Rc::clone(&log);
                    let child = coroutine::spawn_local(async move {
                        log.borrow_mut().push(format!("child of {id}"));
                    });
                    handles.borrow_mut().push(child);
                }
                Step::Cancel(back) => {
                    let target = id.checked_sub(back);
                    if let Some(target) = target {
                        handles.borrow()[target].cancel();
                    }
                }
                Step::Panic => panic!("task {id} panics"),
                Step::EndScope(reenter) => {
                    log.borrow_mut().push(format!("{id} ends the session"));
                    end_scope(reenter);
                }
                Step::Enqueue(value) => enqueue_real(value),
                Step::WakerEnds(reenter) => {
                    let waker = std::sync::Arc::new(EndingWaker(id, reenter));
                    main_thread::wake_next_frame(std::task::Waker::from(waker));
                }
            }
        }
        log.borrow_mut().push(format!("{id} done"));
    });
    let handle = coroutine::spawn_local(Acting {
        future: Some(future),
        id,
        on_drop,
        log: Rc::clone(&real.log),
    });
    real.handles.borrow_mut().push(handle);
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    /// Not started: its first poll is queued.
    Start,
    /// On `delegates[d]`, subscribed in this order; `Some(value)` once the broadcast came.
    Next(usize, Option<Option<u32>>),
    /// Until this frame.
    Frames(u64),
}

struct ModelTask {
    steps: Vec<Step>,
    /// What its `Drop` does (top-level tasks).
    on_drop: Option<bool>,
    /// In the executor's table: from its spawn to its drop or its session's end.
    in_table: bool,
    dropped: bool,
    pc: usize,
    wait: Wait,
    status: TaskStatus,
    /// A child: logs once and ends.
    child_of: Option<usize>,
}

/// A frame waiter: a task's, or an [`EndingWaker`] (registered by the task, ending how).
#[derive(Clone, Copy)]
enum Waiter {
    Task(usize),
    Ending(usize, bool),
}

#[derive(Default)]
struct Model {
    tasks: Vec<ModelTask>,
    alive: [bool; DELEGATES],
    /// Per delegate: the tasks whose future is subscribed, in order.
    subscribers: [Vec<usize>; DELEGATES],
    /// Polls of tasks (`Ok`) and plain tasks (`Err`), in enqueue order.
    queue: VecDeque<Result<usize, u32>>,
    /// The rest of the running drain's batch.
    batch: VecDeque<Result<usize, u32>>,
    queued: BTreeSet<usize>,
    frame_wakers: Vec<Waiter>,
    frame: u64,
    log: Vec<String>,
    /// Counts the sessions' ends.
    session: u64,
    /// A scope is held (the thread is the game thread, outside a scope's end).
    scope_held: bool,
    /// A scope's end runs (the thread is still the game thread).
    in_teardown: bool,
    /// The task being polled.
    polling: Option<usize>,
}

impl Model {
    fn wake(&mut self, task: usize) {
        if self.queued.insert(task) {
            self.queue.push_back(Ok(task));
        }
    }

    fn spawn(&mut self, steps: Vec<Step>, child_of: Option<usize>, on_drop: Option<bool>) {
        let id = self.tasks.len();
        self.tasks.push(ModelTask {
            steps,
            on_drop,
            in_table: true,
            dropped: false,
            pc: 0,
            wait: Wait::Start,
            status: TaskStatus::Running,
            child_of,
        });
        self.wake(id);
    }

    fn broadcast(&mut self, d: usize, value: u32) {
        if !self.alive[d] {
            return;
        }
        for task in std::mem::take(&mut self.subscribers[d]) {
            self.tasks[task].wait = Wait::Next(d, Some(Some(value)));
            self.wake(task);
        }
    }

    fn drop_delegate(&mut self, d: usize) {
        if !std::mem::replace(&mut self.alive[d], false) {
            return;
        }
        for task in std::mem::take(&mut self.subscribers[d]) {
            self.tasks[task].wait = Wait::Next(d, Some(None));
            self.wake(task);
        }
    }

    /// Ends a task: its subscription goes with it.
    fn end(&mut self, task: usize, status: TaskStatus) {
        self.tasks[task].status = status;
        for subscribers in &mut self.subscribers {
            subscribers.retain(|&t| t != task);
        }
    }

    fn cancel(&mut self, task: usize) {
        if self.tasks[task].status == TaskStatus::Running {
            self.end(task, TaskStatus::Cancelled);
            if self.polling != Some(task) {
                self.drop_task(task); // else once its poll returns
            }
        }
    }

    /// The task's future is dropped: out of the table; a top-level task logs and acts.
    fn drop_task(&mut self, task: usize) {
        self.tasks[task].in_table = false;
        self.tasks[task].dropped = true;
        if self.tasks[task].child_of.is_some() {
            return;
        }
        self.log.push(format!("{task} dropped"));
        if let Some(reenter) = self.tasks[task].on_drop {
            self.end_scope(reenter);
        }
    }

    /// What [`end_scope`] does.
    fn end_scope(&mut self, reenter: bool) {
        if self.scope_held {
            self.teardown();
        }
        if reenter && !self.scope_held && !self.in_teardown {
            self.scope_held = true;
        }
    }

    /// A scope's end: the queue, the running batch and the frame waiters are dropped (nothing of
    /// them logs), then every task of the table, in spawn order (the one being polled once its
    /// poll returns), `Abandoned`.
    fn teardown(&mut self) {
        self.scope_held = false;
        self.in_teardown = true;
        self.session += 1;
        for task in 0..self.tasks.len() {
            if self.tasks[task].in_table {
                self.end(task, TaskStatus::Abandoned);
                if self.polling == Some(task) {
                    self.tasks[task].in_table = false;
                } else {
                    self.drop_task(task);
                }
            }
        }
        self.queue.clear();
        self.batch.clear();
        self.queued.clear();
        self.frame_wakers.clear();
        self.frame = 0;
        self.in_teardown = false;
    }

    fn frame(&mut self) {
        let session = self.session;
        self.frame += 1;
        for waiter in std::mem::take(&mut self.frame_wakers) {
            if self.session != session {
                break; // the rest is dropped unwoken
            }
            match waiter {
                Waiter::Task(task) => self.wake(task),
                Waiter::Ending(task, reenter) => {
                    self.log.push(format!("waker of {task}"));
                    self.end_scope(reenter);
                }
            }
        }
        if self.session != session {
            return;
        }
        self.batch = std::mem::take(&mut self.queue);
        while self.session == session
            && let Some(queued) = self.batch.pop_front()
        {
            let task = match queued {
                Ok(task) => task,
                Err(value) => {
                    self.log.push(format!("queued {value}"));
                    continue;
                }
            };
            if self.tasks[task].status != TaskStatus::Running {
                continue;
            }
            self.queued.remove(&task);
            self.polling = Some(task);
            self.poll(task);
            self.polling = None;
            // Ended (finished, panicked, cancelled itself, its session gone): dropped now.
            if self.tasks[task].status != TaskStatus::Running && !self.tasks[task].dropped {
                self.drop_task(task);
            }
        }
    }

    /// The task's poll panics: `Panicked`, unless its session's end took it out of the table
    /// (then it stays `Abandoned`).
    fn panics(&mut self, id: usize) {
        if self.tasks[id].in_table {
            self.end(id, TaskStatus::Panicked);
        }
    }

    fn poll(&mut self, id: usize) {
        if let Some(parent) = self.tasks[id].child_of {
            self.log.push(format!("child of {parent}"));
            self.tasks[id].status = TaskStatus::Finished;
            return;
        }
        // Resume where it waits.
        match self.tasks[id].wait {
            Wait::Start => self.log.push(format!("{id} start")),
            Wait::Next(_, None) => return, // spurious: still waiting
            Wait::Next(_, Some(result)) => {
                self.log.push(match result {
                    Some(value) => format!("{id} got {value}"),
                    None => format!("{id} gone"),
                });
                self.tasks[id].pc += 1;
            }
            Wait::Frames(target) => {
                if self.frame < target {
                    self.frame_wakers.push(Waiter::Task(id));
                    return;
                }
                self.log.push(format!("{id} frame {}", self.frame));
                self.tasks[id].pc += 1;
            }
        }
        loop {
            let task = &self.tasks[id];
            // Cancelled by itself earlier in this poll: the poll still runs to its next await.
            let Some(&step) = task.steps.get(task.pc) else {
                self.log.push(format!("{id} done"));
                if self.tasks[id].status == TaskStatus::Running {
                    self.tasks[id].status = TaskStatus::Finished;
                }
                return;
            };
            match step {
                Step::Await(d) => {
                    if !self.alive[d] {
                        self.log.push(format!("{id} gone"));
                    } else {
                        if self.tasks[id].status == TaskStatus::Running {
                            self.subscribers[d].push(id);
                        }
                        self.tasks[id].wait = Wait::Next(d, None);
                        return;
                    }
                }
                // Off the game thread (its session ended in this poll): they panic.
                Step::Frames(_) | Step::Spawn | Step::WakerEnds(_) if !self.scope_held => {
                    return self.panics(id);
                }
                Step::Frames(n) => {
                    if n > 0 {
                        self.tasks[id].wait = Wait::Frames(self.frame + n);
                        if self.tasks[id].status == TaskStatus::Running {
                            self.frame_wakers.push(Waiter::Task(id));
                        }
                        return;
                    }
                    self.log.push(format!("{id} frame {}", self.frame));
                }
                Step::Broadcast(d, value) => self.broadcast(d, value),
                Step::Spawn => self.spawn(Vec::new(), Some(id), None),
                Step::Cancel(back) => {
                    if let Some(target) = id.checked_sub(back) {
                        self.cancel(target);
                    }
                }
                Step::Panic => return self.panics(id),
                Step::EndScope(reenter) => {
                    self.log.push(format!("{id} ends the session"));
                    self.end_scope(reenter);
                }
                Step::WakerEnds(reenter) => self.frame_wakers.push(Waiter::Ending(id, reenter)),
                Step::Enqueue(value) => self.queue.push_back(Err(value)),
            }
            self.tasks[id].pc += 1;
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..DELEGATES).prop_map(Step::Await),
        2 => (0..3u64).prop_map(Step::Frames),
        2 => (0..DELEGATES, 0..100u32).prop_map(|(d, v)| Step::Broadcast(d, v)),
        1 => Just(Step::Spawn),
        1 => (0..3usize).prop_map(Step::Cancel),
        1 => Just(Step::Panic),
        1 => any::<bool>().prop_map(Step::EndScope),
        1 => any::<bool>().prop_map(Step::WakerEnds),
        1 => (0..100u32).prop_map(Step::Enqueue),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (
            prop::collection::vec(step(), 0..5),
            prop_oneof![4 => Just(None), 1 => any::<bool>().prop_map(Some)],
        )
            .prop_map(|(steps, on_drop)| Op::Spawn(steps, on_drop)),
        1 => any::<bool>().prop_map(Op::EndScope),
        1 => (0..100u32).prop_map(Op::Enqueue),
        3 => (0..DELEGATES, 0..100u32).prop_map(|(d, v)| Op::Broadcast(d, v)),
        4 => Just(Op::Frame),
        1 => (0..8usize).prop_map(Op::Cancel),
        1 => (0..DELEGATES).prop_map(Op::DropDelegate),
    ]
}

fn run(script: Vec<Op>) -> Result<(), TestCaseError> {
    let real = Real {
        delegates: Rc::new(RefCell::new(
            (0..DELEGATES)
                .map(|_| Some(Rc::new(MulticastDelegate::new())))
                .collect(),
        )),
        handles: Rc::new(RefCell::new(Vec::new())),
        log: Rc::new(RefCell::new(Vec::new())),
    };
    let mut model = Model {
        alive: [true; DELEGATES],
        ..Model::default()
    };
    WAKER_LOG.with_borrow_mut(|log| *log = Some(Rc::clone(&real.log)));
    // Task panics are expected: keep the output quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut result = Ok(());
    // The last step ends the session: what that drops is compared too.
    for op in script.into_iter().chain([Op::EndScope(false)]) {
        // Every step starts on the game thread.
        if !model.scope_held {
            model.scope_held = true;
            SCOPE.with_borrow_mut(|held| *held = Some(GameThreadScope::enter()));
        }
        match op {
            Op::Spawn(steps, on_drop) => {
                let id = model.tasks.len();
                model.spawn(steps.clone(), None, on_drop);
                spawn_real(&real, id, steps, on_drop);
            }
            Op::EndScope(reenter) => {
                model.end_scope(reenter);
                end_scope(reenter);
            }
            Op::Enqueue(value) => {
                model.queue.push_back(Err(value));
                enqueue_real(value);
            }
            Op::Broadcast(d, value) => {
                model.broadcast(d, value);
                let delegate = real.delegates.borrow()[d].clone();
                if let Some(delegate) = delegate {
                    delegate.broadcast(value);
                }
            }
            Op::Frame => {
                model.frame();
                main_thread::process_queue();
            }
            Op::Cancel(index) => {
                if index < model.tasks.len() {
                    model.cancel(index);
                    real.handles.borrow()[index].cancel();
                }
            }
            Op::DropDelegate(d) => {
                model.drop_delegate(d);
                let dropped = real.delegates.borrow_mut()[d].take();
                drop(dropped);
            }
        }
        if *real.log.borrow() != model.log {
            result = Err(TestCaseError::fail(format!(
                "logs differ:\n real  {:?}\n model {:?}",
                real.log.borrow(),
                model.log
            )));
            break;
        }
        let statuses: Vec<TaskStatus> = real
            .handles
            .borrow()
            .iter()
            .map(TaskHandle::status)
            .collect();
        let expected: Vec<TaskStatus> = model.tasks.iter().map(|task| task.status).collect();
        if statuses != expected {
            result = Err(TestCaseError::fail(format!(
                "statuses differ:\n real  {statuses:?}\n model {expected:?}"
            )));
            break;
        }
        for d in 0..DELEGATES {
            let len = real.delegates.borrow()[d]
                .as_ref()
                .map(|delegate| delegate.len());
            if let Some(len) = len
                && len != model.subscribers[d].len()
            {
                result = Err(TestCaseError::fail(format!(
                    "delegate {d}: {len} subscribed, the model says {}",
                    model.subscribers[d].len()
                )));
            }
        }
        if result.is_err() {
            break;
        }
    }
    end_scope(false);
    WAKER_LOG.with_borrow_mut(Option::take);
    std::panic::set_hook(hook);
    result
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn x5_random_scripts_match_the_reference_model(script in prop::collection::vec(op(), 1..40)) {
        run(script)?;
    }
}
