//! Rule N4, counted, for the message bus, script generations and queued senders: each
//! operation's steps per operation at 1 000 and 16 000 (see the parent module).

use std::ffi::c_void;
use std::ptr::null_mut;
use std::rc::Rc;

use super::assert_flat;
use crate::bus::{MessageBus, Tag, TagKey};
use crate::handle::DelegateHandle;
use crate::main_thread::QueuedSender;
use crate::multicast::MulticastDelegate;
use crate::script_delegate::ScriptDelegate;
use crate::script_generation;

static KEPT: TagKey<u32> = TagKey::new("N4Bus.Kept", true);
static PLAIN: TagKey<u32> = TagKey::new("N4Bus.Plain", false);

extern "C" fn thunk(_context: *mut c_void, _payload: *const c_void) {}

/// `n` tags of their own under `N4Bus.<size>`, each with a partial listener (a channel), and
/// some of them with a retained message (`Tag::register` makes them: they have no payload type).
fn tagged(n: usize) -> (MessageBus<u32>, Vec<Tag>) {
    let bus = MessageBus::new();
    let tags: Vec<Tag> = (0..n)
        .map(|i| Tag::register(&format!("N4Bus.Tags{n}.T{}.Leaf{i}", i % 8)).unwrap())
        .collect();
    for tag in &tags {
        let _ = bus.subscribe().partial().listen(*tag, |_| {});
    }
    bus.send(&KEPT, 1);
    (bus, tags)
}

/// Partial listeners and listeners of a retained tag replay what they match by an index of the
/// retaining channels, not a walk of every tag.
#[test]
fn n4_bus_listen_partial_and_retained_look_up_what_they_hear() {
    assert_flat("bus listen_partial", |n| {
        let (bus, tags) = tagged(n);
        move |i| {
            let _ = bus.subscribe().partial().listen(tags[i * 7], |_| {});
        }
    });
    assert_flat("bus listen on a retained tag", |n| {
        let (bus, _tags) = tagged(n);
        move |_| {
            let _ = bus.listen(&KEPT, |_, _| {});
        }
    });
}

/// The records of listeners are swept once they have doubled since the last sweep, not each
/// time their count is a power of two (which `listen` + `remove` around 2^k hit every time).
#[test]
fn n4_bus_listen_and_remove_around_a_power_of_two() {
    assert_flat("bus listen + remove around 2^k", |n| {
        let bus = MessageBus::<u32>::new();
        for _ in 0..n.next_power_of_two() - 1 {
            let _ = bus.listen(&PLAIN, |_, _| {});
        }
        move |_| {
            let handle = bus.listen(&PLAIN, |_, _| {});
            assert!(bus.remove(handle));
        }
    });
}

/// `forget_entity` finds the entity's channels by its own index.
#[test]
fn n4_bus_forget_entity_walks_the_entitys_own_channels() {
    assert_flat("bus forget_entity", |n| {
        let bus = MessageBus::<u32>::new();
        for entity in 0..n as u32 {
            let _ = bus.subscribe().entity(entity).listen(&PLAIN, |_, _| {});
        }
        move |i| assert_eq!(bus.forget_entity(i as u32 * 7), 1)
    });
    assert_flat("bus forget_entity + listen_entity", |n| {
        let bus = MessageBus::<u32>::new();
        for entity in 0..n as u32 {
            let _ = bus.subscribe().entity(entity).listen(&PLAIN, |_, _| {});
        }
        move |i| {
            let entity = (n - 1 - i) as u32;
            assert_eq!(bus.forget_entity(entity), 1);
            let _ = bus.subscribe().entity(entity).listen(&PLAIN, |_, _| {});
        }
    });
}

/// `n` managed listeners (partial ones: any tag takes them), with their handles.
fn managed(n: usize) -> (MessageBus<u64>, Vec<DelegateHandle>) {
    let bus = MessageBus::<u64>::new();
    let handles = (0..n)
        .map(|_| {
            let id = bus
                .listen_managed(PLAIN.tag(), true, None, Some(thunk), std::ptr::null_mut())
                .unwrap();
            DelegateHandle::from_id(id)
        })
        .collect();
    (bus, handles)
}

/// A managed listener is found by a binary search of the ids (they grow), not a scan (the
/// newest ones, which a scan from the oldest reaches last).
#[test]
fn n4_bus_managed_listeners_are_found_by_id() {
    assert_flat("bus remove, n managed listeners", |n| {
        let (bus, handles) = managed(n);
        move |i| assert!(bus.remove(handles[n - 1 - i * 7]))
    });
    assert_flat("bus scoped, n managed listeners", |n| {
        let (bus, handles) = managed(n);
        move |i| drop(bus.scoped(handles[n - 1 - i * 7]))
    });
    assert_flat("bus remove_managed", |n| {
        let (bus, handles) = managed(n);
        move |i| assert!(bus.remove_managed(handles[n - 1 - i * 7].id()))
    });
}

/// `n` generations, each with one binding `bind` makes; the operation unloads one of them (the
/// newest first, which a walk from the oldest binding reaches last).
fn unload_each<T: 'static>(n: usize, home: T, bind: impl Fn(&T)) -> impl FnMut(usize) {
    let generations: Vec<u64> = (0..n)
        .map(|_| {
            let generation = script_generation::begin();
            bind(&home);
            generation
        })
        .collect();
    move |i| {
        let _ = &home;
        let generation = generations[n - 1 - i * 7];
        assert_eq!(script_generation::unload(generation), Some(1));
    }
}

/// A script generation's unload reaches its own bindings by their ids, not every binding of the
/// bus or of the script delegate.
#[test]
fn n4_a_script_generations_unload_costs_its_bindings() {
    assert_flat("script generation unload (bus)", |n| {
        unload_each(n, MessageBus::<u64>::new(), |bus| {
            let listen = bus.listen_managed(PLAIN.tag(), true, None, Some(thunk), null_mut());
            assert!(listen.is_ok());
        })
    });
    assert_flat("script generation unload (script delegate)", |n| {
        unload_each(n, ScriptDelegate::<()>::new(), |delegate| {
            assert_ne!(delegate.bind_managed(Some(thunk), null_mut()), 0);
        })
    });
}

struct Player {
    on_hit: MulticastDelegate<dyn Fn(u32)>,
}

/// `QueuedSender::new` sweeps the registry's dead entries once it has doubled, not at each new
/// sender.
#[test]
fn n4_a_queued_sender_is_made_in_constant_time() {
    let _game = crate::main_thread::GameThreadScope::enter();
    assert_flat("QueuedSender::new, n senders alive", |n| {
        let player = Rc::new(Player {
            on_hit: MulticastDelegate::new(),
        });
        let alive: Vec<QueuedSender<(u32,)>> = (0..n)
            .map(|_| QueuedSender::new(&player, |player: &Player| &player.on_hit))
            .collect();
        move |_| {
            let _ = &alive;
            let sender: QueuedSender<(u32,)> =
                QueuedSender::new(&player, |player: &Player| &player.on_hit);
            drop(sender);
        }
    });
}
