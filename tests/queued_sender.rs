//! Queued cross-thread broadcasts (rule B4): a `Send + Clone` sender made on the game thread for
//! a delegate of an `Rc` object; any thread sends through it; the broadcast runs on the game
//! thread at its next `process_queue`, or not at all if the object is gone by then, and nothing
//! leaks. The compile-fail half is in `ui-tests/queued/`.
//!
//! Every test holds a `GameThreadScope`, so the tests take turns being the game thread.

mod support;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use lumina::main_thread::{self, GameThreadScope, QueuedSender, queued_targets};
use lumina::{MulticastDelegate, declare_multicast_delegate};
use support::panic_message;

declare_multicast_delegate!(HealthChanged(health: u32, source: String));

/// A game object of the game thread: not `Send`, owns its delegates.
#[derive(Default)]
struct Player {
    on_health_changed: HealthChanged,
    on_path_found: MulticastDelegate<dyn Fn(Vec<u8>)>,
    on_respawn: MulticastDelegate<dyn Fn()>,
    on_loot: MulticastDelegate<dyn Fn(Counted)>,
    seen: RefCell<Vec<String>>,
    /// Counts the player's drop.
    _drops: Option<Counted>,
}

/// A player whose subscribers record what they saw, with the thread they ran on.
fn player(drops: Option<Arc<AtomicUsize>>) -> Rc<Player> {
    let player = Rc::new(Player {
        _drops: drops.map(Counted),
        ..Player::default()
    });
    let weak = Rc::downgrade(&player);
    let _ = player.on_health_changed.add_lambda(move |health, source| {
        if let Some(player) = weak.upgrade() {
            let game = if main_thread::is_game_thread() {
                "game"
            } else {
                "other"
            };
            player
                .seen
                .borrow_mut()
                .push(format!("{health} from {source} on {game}"));
        }
    });
    player
}

/// An argument that counts its drops, from any thread.
struct Counted(Arc<AtomicUsize>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        Counted(Arc::clone(&self.0))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>(_: &T) {}

#[test]
fn b4_a_worker_thread_broadcasts_on_the_game_thread_at_the_next_process_queue() {
    let _game = GameThreadScope::enter();
    let player = player(None);
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_health_changed);
    assert_send_sync_clone(&sender);
    let workers: Vec<_> = (0..2u32)
        .map(|index| {
            let sender = sender.clone();
            thread::spawn(move || {
                for hit in 0..3 {
                    sender.send(100 - index * 10 - hit, format!("worker {index}"));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert!(
        player.seen.borrow().is_empty(),
        "nothing runs before the drain"
    );
    assert_eq!(main_thread::process_queue(), 6);
    let mut seen = player.seen.take();
    assert!(
        seen.iter().all(|line| line.ends_with("on game")),
        "{seen:?}"
    );
    // Each worker's sends arrive in the order they were sent.
    let worker_0: Vec<_> = seen
        .iter()
        .filter(|line| line.contains("worker 0"))
        .collect();
    assert_eq!(
        worker_0,
        [
            "100 from worker 0 on game",
            "99 from worker 0 on game",
            "98 from worker 0 on game"
        ]
    );
    seen.sort();
    assert_eq!(seen.len(), 6);
    assert_eq!(main_thread::process_queue(), 0);
}

#[test]
fn b4_the_object_dropped_before_process_queue_runs_nothing_and_leaks_nothing() {
    let _game = GameThreadScope::enter();
    let player_drops = Arc::new(AtomicUsize::new(0));
    let loot_drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let player = player(Some(Arc::clone(&player_drops)));
    let counter = Arc::clone(&ran);
    let _ = player.on_loot.add_lambda(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_loot);
    let worker_sender = sender.clone();
    let loot = [
        Counted(Arc::clone(&loot_drops)),
        Counted(Arc::clone(&loot_drops)),
    ];
    thread::spawn(move || {
        for item in loot {
            worker_sender.send(item);
        }
    })
    .join()
    .unwrap();
    assert_eq!(loot_drops.load(Ordering::SeqCst), 0, "queued, not dropped");
    assert_eq!(queued_targets(), 1);

    drop(player);
    assert_eq!(
        player_drops.load(Ordering::SeqCst),
        1,
        "a sender never keeps its object alive"
    );
    assert_eq!(main_thread::process_queue(), 2);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "nothing runs for a dropped object"
    );
    assert_eq!(
        loot_drops.load(Ordering::SeqCst),
        2,
        "every argument is dropped"
    );
    assert_eq!(
        queued_targets(),
        0,
        "the registry entry went with the object"
    );
    drop(sender);
    assert_eq!(main_thread::process_queue(), 0);
    assert_eq!(queued_targets(), 0);
    assert_eq!(player_drops.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&loot_drops), 1, "no argument survives");
}

#[test]
fn b4_arguments_of_sends_that_never_run_are_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Rc::new(Cell::new(0));
    {
        let _game = GameThreadScope::enter();
        struct Inventory {
            on_item: MulticastDelegate<dyn Fn(Counted)>,
        }
        let inventory = Rc::new(Inventory {
            on_item: MulticastDelegate::new(),
        });
        let sink = Rc::clone(&ran);
        let _ = inventory
            .on_item
            .add_lambda(move |_| sink.set(sink.get() + 1));
        let sender = QueuedSender::new(&inventory, |inventory: &Inventory| &inventory.on_item);

        // Delivered: the broadcast's argument is dropped after it.
        sender.send(Counted(Arc::clone(&drops)));
        assert_eq!(main_thread::process_queue(), 1);
        assert_eq!((ran.get(), drops.load(Ordering::SeqCst)), (1, 1));

        // The object dies with a send queued: the argument is dropped by the drain.
        sender.send(Counted(Arc::clone(&drops)));
        drop(inventory);
        assert_eq!(main_thread::process_queue(), 1);
        assert_eq!((ran.get(), drops.load(Ordering::SeqCst)), (1, 2));

        // Never drained: the scope's end drops the task, and the argument with it.
        sender.send(Counted(Arc::clone(&drops)));
        drop(sender);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
    assert_eq!((ran.get(), drops.load(Ordering::SeqCst)), (1, 3));
    assert_eq!(
        Arc::strong_count(&drops),
        1,
        "no clone of the argument survives"
    );
}

#[test]
fn b4_declared_and_generic_delegates_of_any_arity_get_senders() {
    let _game = GameThreadScope::enter();
    let player = player(None);
    let respawns = Rc::new(Cell::new(0));
    let sink = Rc::clone(&respawns);
    let _ = player
        .on_respawn
        .add_lambda(move || sink.set(sink.get() + 1));
    let lengths = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&lengths);
    let _ = player
        .on_path_found
        .add_lambda(move |path| sink.borrow_mut().push(path.len()));

    let respawn: QueuedSender<()> =
        QueuedSender::new(&player, |player: &Player| &player.on_respawn);
    let path: QueuedSender<(Vec<u8>,)> =
        QueuedSender::new(&player, |player: &Player| &player.on_path_found);
    let health: QueuedSender<(u32, String)> =
        QueuedSender::new(&player, |player: &Player| &player.on_health_changed);
    assert_eq!(queued_targets(), 3);
    thread::spawn(move || {
        respawn.send();
        path.send(vec![1, 2, 3, 4]);
        health.send(5, "poison".to_owned());
    })
    .join()
    .unwrap();
    // The worker dropped its senders, but each queued send holds one: the entries go when the
    // sends are delivered, on the game thread.
    assert_eq!(queued_targets(), 3);
    assert_eq!(main_thread::process_queue(), 3);
    assert_eq!(respawns.get(), 1);
    assert_eq!(*lengths.borrow(), [4]);
    assert_eq!(*player.seen.borrow(), ["5 from poison on game"]);
    assert_eq!(queued_targets(), 0, "every sender dropped: no entry left");
}

#[test]
fn b4_a_send_queued_before_the_last_sender_is_dropped_still_runs() {
    let _game = GameThreadScope::enter();
    let player = player(None);
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_health_changed);
    sender.send(1, "game thread".to_owned());
    drop(sender);
    assert_eq!(queued_targets(), 1, "the queued send keeps the entry");
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(*player.seen.borrow(), ["1 from game thread on game"]);
    assert_eq!(queued_targets(), 0);
}

#[test]
fn b4_a_subscriber_sending_during_a_delivery_runs_at_the_next_drain() {
    let _game = GameThreadScope::enter();
    struct Echo {
        on_ping: MulticastDelegate<dyn Fn(u32)>,
        heard: RefCell<Vec<u32>>,
    }
    let echo = Rc::new(Echo {
        on_ping: MulticastDelegate::new(),
        heard: RefCell::new(Vec::new()),
    });
    let sender = QueuedSender::new(&echo, |echo: &Echo| &echo.on_ping);
    let (weak, again) = (Rc::downgrade(&echo), sender.clone());
    let _ = echo.on_ping.add_lambda(move |count| {
        if let Some(echo) = weak.upgrade() {
            echo.heard.borrow_mut().push(count);
        }
        if count < 3 {
            again.send(count + 1);
        }
    });
    sender.send(1);
    for expected in 1..=3 {
        assert_eq!(main_thread::process_queue(), 1);
        assert_eq!(echo.heard.borrow().last(), Some(&expected));
    }
    assert_eq!(main_thread::process_queue(), 0);
}

#[test]
fn b4_a_sender_made_off_the_game_thread_panics_naming_the_game_thread() {
    let _game = GameThreadScope::enter();
    let error = thread::Builder::new()
        .name("loader".into())
        .spawn(|| {
            let delegate = Rc::new(MulticastDelegate::<dyn Fn(u32)>::new());
            let _ = QueuedSender::new(&delegate, |delegate: &MulticastDelegate<dyn Fn(u32)>| {
                delegate
            });
        })
        .unwrap()
        .join()
        .expect_err("QueuedSender::new off the game thread");
    let message = panic_message(&*error);
    assert!(message.contains("QueuedSender::new"), "{message}");
    assert!(message.contains("`loader`"), "{message}");
    assert!(message.contains("not the game thread"), "{message}");
}

#[test]
fn b4_a_dead_object_s_entry_is_dropped_even_while_senders_live() {
    let _game = GameThreadScope::enter();
    let first = player(None);
    let second = player(None);
    let first_sender = QueuedSender::new(&first, |player: &Player| &player.on_respawn);
    assert_eq!(queued_targets(), 1);
    drop(first);
    // A new sender sweeps the registry as well.
    let second_sender = QueuedSender::new(&second, |player: &Player| &player.on_respawn);
    assert_eq!(queued_targets(), 1);
    first_sender.send();
    second_sender.send();
    assert_eq!(main_thread::process_queue(), 2);
    drop((first_sender, second_sender));
    assert_eq!(queued_targets(), 0);
}

#[test]
fn b4_the_last_sender_dropped_on_a_worker_removes_its_entry_through_the_queue() {
    let _game = GameThreadScope::enter();
    let player = player(None);
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_health_changed);
    assert_eq!(queued_targets(), 1);
    thread::spawn(move || drop(sender)).join().unwrap();
    // The registry belongs to the game thread: the worker queued the removal.
    assert_eq!(main_thread::pending(), 1);
    assert_eq!(queued_targets(), 1);
    assert_eq!(main_thread::process_queue(), 1);
    assert_eq!(queued_targets(), 0);
    assert_eq!(Rc::strong_count(&player), 1);
    assert_eq!(
        Rc::weak_count(&player),
        1,
        "only the subscriber's own weak reference is left"
    );
}

#[test]
fn b4_a_sender_kept_in_a_worker_s_thread_local_is_dropped_safely_at_its_exit() {
    thread_local! {
        static KEPT: RefCell<Option<QueuedSender<()>>> = const { RefCell::new(None) };
    }
    let _game = GameThreadScope::enter();
    let player = player(None);
    let sender = QueuedSender::new(&player, |player: &Player| &player.on_respawn);
    let worker = thread::spawn(move || {
        sender.send();
        // Dropped while the worker's thread-locals are destroyed.
        KEPT.with(|kept| *kept.borrow_mut() = Some(sender));
    });
    worker.join().expect("the worker exits cleanly");
    assert_eq!(
        main_thread::process_queue(),
        1,
        "the send; the entry goes with it"
    );
    assert_eq!(queued_targets(), 0);
}
