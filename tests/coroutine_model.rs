//! X5 as a model-based property test: random scripts spawn tasks, broadcast delegates, run
//! frames (`process_queue`), cancel tasks and drop delegates, against the real executor and a
//! plain reference model of it. Tasks act at every point where their code runs: they await a
//! delegate's `next()` or frames, broadcast re-entrantly from their poll, spawn children, cancel
//! themselves or another task, and panic. Every frame must poll the same tasks in the same order
//! with the same results, and leave the same statuses and subscriptions.

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
}

#[derive(Clone, Debug)]
enum Op {
    Spawn(Vec<Step>),
    Broadcast(usize, u32),
    Frame,
    Cancel(usize),
    DropDelegate(usize),
}

type Log = Rc<RefCell<Vec<String>>>;

/// The delegates, `None` once dropped.
type Delegates = Rc<RefCell<Vec<Option<Rc<MulticastDelegate<dyn Fn(u32)>>>>>>;

/// The real side: delegates (`None` once dropped), handles, the log.
struct Real {
    delegates: Delegates,
    handles: Rc<RefCell<Vec<TaskHandle>>>,
    log: Log,
}

fn spawn_real(real: &Real, id: usize, steps: Vec<Step>) {
    let (delegates, handles, log) = (
        Rc::clone(&real.delegates),
        Rc::clone(&real.handles),
        Rc::clone(&real.log),
    );
    let handle = coroutine::spawn_local(async move {
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
            }
        }
        log.borrow_mut().push(format!("{id} done"));
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
    pc: usize,
    wait: Wait,
    status: TaskStatus,
    /// A child: logs once and ends.
    child_of: Option<usize>,
}

#[derive(Default)]
struct Model {
    tasks: Vec<ModelTask>,
    alive: [bool; DELEGATES],
    /// Per delegate: the tasks whose future is subscribed, in order.
    subscribers: [Vec<usize>; DELEGATES],
    queue: VecDeque<usize>,
    queued: BTreeSet<usize>,
    frame_wakers: Vec<usize>,
    frame: u64,
    log: Vec<String>,
}

impl Model {
    fn wake(&mut self, task: usize) {
        if self.queued.insert(task) {
            self.queue.push_back(task);
        }
    }

    fn spawn(&mut self, steps: Vec<Step>, child_of: Option<usize>) {
        let id = self.tasks.len();
        self.tasks.push(ModelTask {
            steps,
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
        }
    }

    fn frame(&mut self) {
        self.frame += 1;
        for task in std::mem::take(&mut self.frame_wakers) {
            self.wake(task);
        }
        let batch = std::mem::take(&mut self.queue);
        for task in batch {
            if self.tasks[task].status != TaskStatus::Running {
                continue;
            }
            self.queued.remove(&task);
            self.poll(task);
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
                    self.frame_wakers.push(id);
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
                Step::Frames(n) => {
                    if n > 0 {
                        self.tasks[id].wait = Wait::Frames(self.frame + n);
                        if self.tasks[id].status == TaskStatus::Running {
                            self.frame_wakers.push(id);
                        }
                        return;
                    }
                    self.log.push(format!("{id} frame {}", self.frame));
                }
                Step::Broadcast(d, value) => self.broadcast(d, value),
                Step::Spawn => self.spawn(Vec::new(), Some(id)),
                Step::Cancel(back) => {
                    if let Some(target) = id.checked_sub(back) {
                        self.cancel(target);
                    }
                }
                Step::Panic => {
                    self.end(id, TaskStatus::Panicked);
                    return;
                }
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
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop::collection::vec(step(), 0..5).prop_map(Op::Spawn),
        3 => (0..DELEGATES, 0..100u32).prop_map(|(d, v)| Op::Broadcast(d, v)),
        4 => Just(Op::Frame),
        1 => (0..8usize).prop_map(Op::Cancel),
        1 => (0..DELEGATES).prop_map(Op::DropDelegate),
    ]
}

fn run(script: Vec<Op>) -> Result<(), TestCaseError> {
    let _game = GameThreadScope::enter();
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
    // Task panics are expected: keep the output quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut result = Ok(());
    for op in script {
        match op {
            Op::Spawn(steps) => {
                let id = model.tasks.len();
                model.spawn(steps.clone(), None);
                spawn_real(&real, id, steps);
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
