//! GB8 as a property: managed listeners of the message bus, with script generations and the
//! host's release hook, against a plain model, under random sequences of listens, removes (by
//! the host and from Rust), Rust and script sends, clears, generation begins and unloads and bus
//! drops, where every thunk and every release hook call may re-enter (send, listen, remove
//! itself or another, clear, unload a generation). Checked: a removed listener never runs again
//! (M3); a listener added during a send does not hear it and every listener live from its start
//! to its end hears it exactly once, with the sent payload (M2, GB8); every listener reaches the
//! hook exactly once, with the reason of the path that removed it first, never while its thunk
//! runs, and never when the host removed it itself (R4, SD8).
//!
//! (A file of its own: the release hook is process-wide.)

use lumina::bus::{BusMessage, MessageBus, Tag};
use lumina::ffi::{
    LuminaPayloadInfo, LuminaStatus, lumina_bus_listen, lumina_bus_remove, lumina_bus_send,
    lumina_reflect_find_payload,
};
use lumina::script_delegate::{ManagedBinding, ReleaseReason, ScriptDelegateBase};
use lumina::{gameplay_tags, script_delegate, script_generation};
use proptest::prelude::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

#[script_delegate]
#[derive(Clone, Copy)]
struct ModelHit {
    send: u32,
    pad: f64,
}

gameplay_tags! {
    mod tags {
        ModelGb8 {
            #[script]
            Hit: ModelHit,
        },
    }
}

/// What a thunk or the release hook does when it runs for a listener.
#[derive(Clone, Copy, Debug)]
enum Act {
    Nothing,
    SendRust,
    SendScript,
    Listen,
    RemoveSelfHost,
    RemoveHost(usize),
    RemoveRust(usize),
    Clear,
    Unload(usize),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Listen (partially when `true`), with what its thunk and its release do.
    Listen(bool, Act, Act),
    RemoveHost(usize),
    RemoveRust(usize),
    SendRust,
    SendScript,
    Clear,
    Begin,
    Unload(usize),
    DropBus,
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        4 => Just(Act::Nothing),
        1 => Just(Act::SendRust),
        1 => Just(Act::SendScript),
        1 => Just(Act::Listen),
        1 => Just(Act::RemoveSelfHost),
        1 => (0..10_usize).prop_map(Act::RemoveHost),
        1 => (0..10_usize).prop_map(Act::RemoveRust),
        1 => Just(Act::Clear),
        1 => (0..4_usize).prop_map(Act::Unload),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<bool>(), act(), act()).prop_map(|(p, on_call, on_release)| Step::Listen(p, on_call, on_release)),
        1 => (0..10_usize).prop_map(Step::RemoveHost),
        1 => (0..10_usize).prop_map(Step::RemoveRust),
        2 => Just(Step::SendRust),
        2 => Just(Step::SendScript),
        1 => Just(Step::Clear),
        1 => Just(Step::Begin),
        1 => (0..4_usize).prop_map(Step::Unload),
        1 => Just(Step::DropBus),
    ]
}

/// One managed listener as the model knows it.
struct Listener {
    id: u64,
    bus: u32,
    generation: u64,
    live: bool,
    /// The reason the model expects at the hook (`None`: the host removed it, no hook).
    expected: Option<Option<ReleaseReason>>,
    on_call: Act,
    on_release: Act,
    running: u32,
    released: Vec<ReleaseReason>,
}

/// One send: who was listening when it started, and who heard it.
struct Send {
    started: Vec<usize>,
    heard: Vec<usize>,
}

#[derive(Default)]
struct World {
    bus: Option<Rc<MessageBus>>,
    bus_epoch: u32,
    listeners: Vec<Listener>,
    /// Generations begun, in order, and whether each is still open.
    generations: Vec<(u64, bool)>,
    current: u64,
    sends: Vec<Send>,
    depth: u32,
    violations: Vec<String>,
}

thread_local! {
    static WORLD: RefCell<World> = RefCell::new(World::default());
}

fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
    WORLD.with_borrow_mut(f)
}

fn bus() -> Option<Rc<MessageBus>> {
    with(|w| w.bus.clone())
}

/// Marks `k` removed by `reason` in the model (`None`: by the host, no hook), if it is live.
fn remove_in_model(w: &mut World, k: usize, reason: Option<ReleaseReason>) -> bool {
    let listener = &mut w.listeners[k];
    if !listener.live {
        return false;
    }
    listener.live = false;
    listener.expected = Some(reason);
    true
}

extern "C" fn thunk(context: *mut c_void, message: *const c_void) {
    let k = context.addr() - 1;
    // SAFETY: the bus passes a `BusMessage` valid for the call; a `#[script]` tag's payload is
    // a `ModelHit`, aligned, valid for the call.
    let send = unsafe {
        let message = &*message.cast::<BusMessage>();
        assert!(!message.payload.is_null());
        message.payload.cast::<ModelHit>().read().send
    };
    let act = with(|w| {
        let listener = &mut w.listeners[k];
        if !listener.live {
            w.violations
                .push(format!("listener {k} ran after it was removed"));
        }
        listener.running += 1;
        w.sends[send as usize].heard.push(k);
        w.listeners[k].on_call
    });
    perform(act, Some(k));
    with(|w| w.listeners[k].running -= 1);
}

extern "C" fn hook(
    _delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    // SAFETY: `count` bindings, valid for the call.
    let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
    for binding in bindings {
        let k = binding.context.addr() - 1;
        let act = with(|w| {
            let listener = &mut w.listeners[k];
            if listener.running > 0 {
                w.violations
                    .push(format!("listener {k} released while its thunk ran"));
            }
            if binding.id != listener.id {
                w.violations
                    .push(format!("listener {k} released with a wrong id"));
            }
            listener.released.push(reason);
            listener.on_release
        });
        perform(act, None);
    }
}

fn layout() -> LuminaPayloadInfo {
    let name = "ModelHit";
    let mut info = std::mem::MaybeUninit::uninit();
    // SAFETY: a live name; read only after Ok.
    unsafe {
        assert_eq!(
            lumina_reflect_find_payload(name.as_ptr(), name.len(), info.as_mut_ptr()),
            LuminaStatus::Ok
        );
        info.assume_init()
    }
}

const HIT: &str = "ModelGb8.Hit";

fn send(script: bool) {
    let Some(bus) = bus() else { return };
    let (id, bus_epoch) = with(|w| {
        let epoch = w.bus_epoch;
        let started = (0..w.listeners.len())
            .filter(|&k| w.listeners[k].live && w.listeners[k].bus == epoch)
            .collect();
        w.sends.push(Send {
            started,
            heard: Vec::new(),
        });
        w.depth += 1;
        (w.sends.len() - 1, epoch)
    });
    let payload = ModelHit {
        send: u32::try_from(id).unwrap(),
        pad: 0.5,
    };
    if script {
        let layout = layout();
        // SAFETY: a live bus (held), name, payload and layout.
        let status = unsafe {
            lumina_bus_send(
                Rc::as_ptr(&bus),
                HIT.as_ptr(),
                HIT.len(),
                0,
                0,
                std::ptr::from_ref(&payload).cast(),
                size_of::<ModelHit>(),
                &layout,
            )
        };
        assert_eq!(status, LuminaStatus::Ok);
    } else {
        bus.send(&tags::MODEL_GB8_HIT, payload);
    }
    with(|w| {
        w.depth -= 1;
        let record = &w.sends[id];
        for &k in &record.heard {
            if !record.started.contains(&k) {
                w.violations
                    .push(format!("listener {k} added during send {id} heard it"));
            }
        }
        for &k in &record.started {
            let times = record.heard.iter().filter(|&&h| h == k).count();
            let listener = &w.listeners[k];
            if times > 1 || (times == 0 && listener.live && listener.bus == bus_epoch) {
                w.violations.push(format!(
                    "listener {k}, live through send {id}, heard it {times} times"
                ));
            }
        }
    });
}

fn listen(partial: bool, on_call: Act, on_release: Act) {
    let Some(bus) = bus() else { return };
    let (k, generation, epoch) = with(|w| {
        w.listeners.push(Listener {
            id: 0,
            bus: w.bus_epoch,
            generation: w.current,
            live: true,
            expected: None,
            on_call,
            on_release,
            running: 0,
            released: Vec::new(),
        });
        (w.listeners.len() - 1, w.current, w.bus_epoch)
    });
    let _ = (generation, epoch);
    let tag = if partial { "ModelGb8" } else { HIT };
    let mut id = 0;
    // SAFETY: a live bus (held) and name; the context is an index, never dereferenced.
    let status = unsafe {
        lumina_bus_listen(
            Rc::as_ptr(&bus),
            tag.as_ptr(),
            tag.len(),
            u8::from(partial),
            0,
            0,
            Some(thunk),
            std::ptr::without_provenance_mut(k + 1),
            &mut id,
        )
    };
    assert_eq!(status, LuminaStatus::Ok);
    with(|w| w.listeners[k].id = id);
}

fn remove_host(k: usize) {
    let Some(bus) = bus() else { return };
    let Some(id) = with(|w| w.listeners.get(k).map(|l| l.id)) else {
        return;
    };
    let expected = with(|w| {
        let epoch = w.bus_epoch;
        w.listeners[k].bus == epoch && remove_in_model(w, k, None)
    });
    // SAFETY: a live bus (held).
    let status = unsafe { lumina_bus_remove(Rc::as_ptr(&bus), id) };
    let ok = status == LuminaStatus::Ok;
    if ok != expected {
        with(|w| {
            w.violations
                .push(format!("host remove of {k}: {status:?}, model {expected}"))
        });
    }
}

fn remove_rust(k: usize) {
    let Some(bus) = bus() else { return };
    let Some(id) = with(|w| w.listeners.get(k).map(|l| l.id)) else {
        return;
    };
    let expected = with(|w| {
        let epoch = w.bus_epoch;
        w.listeners[k].bus == epoch && remove_in_model(w, k, Some(ReleaseReason::Removed))
    });
    // Rust finds the managed listener's handle in the listing (B5).
    let handle = bus
        .subscriptions()
        .into_iter()
        .map(|info| info.subscription.handle)
        .find(|handle| handle.id() == id)
        .unwrap_or_default();
    let removed = bus.remove(handle);
    if removed != expected {
        with(|w| {
            w.violations
                .push(format!("Rust remove of {k}: {removed}, model {expected}"))
        });
    }
}

fn clear() {
    let Some(bus) = bus() else { return };
    with(|w| {
        let epoch = w.bus_epoch;
        for k in 0..w.listeners.len() {
            if w.listeners[k].bus == epoch {
                remove_in_model(w, k, Some(ReleaseReason::Cleared));
            }
        }
    });
    bus.clear();
}

fn begin() {
    let generation = script_generation::begin();
    with(|w| {
        w.generations.push((generation, true));
        w.current = generation;
    });
}

fn unload(index: usize) {
    let Some((generation, open)) = with(|w| w.generations.get(index).copied()) else {
        return;
    };
    let expected = with(|w| {
        if open {
            w.generations[index].1 = false;
            if w.current == generation {
                w.current = 0;
            }
            let mut count = 0;
            for k in 0..w.listeners.len() {
                if w.listeners[k].generation == generation
                    && remove_in_model(w, k, Some(ReleaseReason::GenerationUnloaded))
                {
                    count += 1;
                }
            }
            Some(count)
        } else {
            None
        }
    });
    let released = script_generation::unload(generation);
    if released != expected {
        with(|w| {
            w.violations
                .push(format!("unload {index}: {released:?}, model {expected:?}"));
        });
    }
}

fn drop_bus() {
    let old = with(|w| {
        let epoch = w.bus_epoch;
        for k in 0..w.listeners.len() {
            if w.listeners[k].bus == epoch {
                remove_in_model(w, k, Some(ReleaseReason::Destroyed));
            }
        }
        w.bus_epoch += 1;
        w.bus.take()
    });
    drop(old);
    with(|w| w.bus = Some(Rc::new(MessageBus::new())));
}

/// Runs a thunk's or hook's act (`who`: the listener whose thunk runs).
fn perform(act: Act, who: Option<usize>) {
    let deep = with(|w| w.depth >= 2 || w.listeners.len() > 40);
    match act {
        Act::Nothing => {}
        Act::SendRust | Act::SendScript if deep => {}
        Act::SendRust => send(false),
        Act::SendScript => send(true),
        Act::Listen if deep => {}
        Act::Listen => listen(false, Act::Nothing, Act::Nothing),
        Act::RemoveSelfHost => {
            if let Some(k) = who {
                remove_host(k);
            }
        }
        Act::RemoveHost(k) => remove_host(k),
        Act::RemoveRust(k) => remove_rust(k),
        Act::Clear => clear(),
        Act::Unload(index) => unload(index),
    }
}

fn run(step: Step) {
    match step {
        Step::Listen(partial, on_call, on_release) => listen(partial, on_call, on_release),
        Step::RemoveHost(k) => remove_host(k),
        Step::RemoveRust(k) => remove_rust(k),
        Step::SendRust => send(false),
        Step::SendScript => send(true),
        Step::Clear => clear(),
        Step::Begin => begin(),
        Step::Unload(index) => unload(index),
        Step::DropBus => drop_bus(),
    }
}

/// At least 256 cases in a normal run; 3 under Miri (`.ci/run`).
fn cases() -> u32 {
    if cfg!(miri) { 3 } else { 256 }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn gb8_r4_managed_bus_listeners_match_the_model_and_are_released_once_with_their_reason(
        steps in prop::collection::vec(step(), 1..40)
    ) {
        lumina::script_delegate::set_destroyed_hook(Some(hook));
        let _ = Tag::from(&tags::MODEL_GB8_HIT);
        with(|w| {
            *w = World {
                bus: Some(Rc::new(MessageBus::new())),
                ..World::default()
            };
        });
        for step in steps {
            run(step);
        }
        // The end: every generation unloaded and the bus dropped, so every listener is gone.
        let generations = with(|w| w.generations.len());
        for index in 0..generations {
            unload(index);
        }
        drop_bus();
        let report = with(|w| {
            let mut violations = std::mem::take(&mut w.violations);
            for (k, listener) in w.listeners.iter().enumerate() {
                let wanted: Vec<ReleaseReason> = match listener.expected {
                    Some(Some(reason)) => vec![reason],
                    Some(None) => Vec::new(),
                    None => {
                        violations.push(format!("listener {k} is still live in the model"));
                        Vec::new()
                    }
                };
                if listener.released != wanted {
                    violations.push(format!(
                        "listener {k} released {:?}, expected {:?}",
                        listener.released, wanted
                    ));
                }
            }
            w.bus = None;
            violations
        });
        prop_assert!(report.is_empty(), "{report:#?}");
    }
}
