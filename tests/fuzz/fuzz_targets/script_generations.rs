//! Fuzz target (R6): an operation stream over the C ABI of script delegates (bind, unbind,
//! is_bound, managed_count, generations begun and unloaded) and of the message bus (listen,
//! remove, script sends checked against a layout; GB8), and the Rust calls a host's engine
//! makes around it (delegates made, moved, dropped, cleared, broadcast; the bus's Rust sends,
//! clears and drops), decoded from the fuzz input. Managed thunks and the release hook act too (unload a generation, clear, bind, unbind,
//! drop a delegate). Checked, as in the model test (`tests/script_delegate_model.rs`): every
//! managed binding reaches the release hook exactly once unless the host unbound it, never
//! while its thunk runs, and no thunk runs after its binding was unbound or released.
//!
//! Against the runtime before the one release path (issue 18), the seed `moves_and_hook_drops`
//! crashes at once (AddressSanitizer: heap-use-after-free in a generation unload, D1), and
//! without that seed the fuzzer found the same within about 14 000 runs (10 s).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lumina::bus::{BusMessage, MessageBus};
use lumina::ffi::{
    LuminaPayloadInfo, LuminaStatus, lumina_bus_listen, lumina_bus_remove, lumina_bus_send,
    lumina_reflect_find_payload, lumina_script_delegate_bind, lumina_script_delegate_is_bound,
    lumina_script_delegate_managed_count, lumina_script_delegate_unbind,
    lumina_script_generation_begin, lumina_script_generation_unload, lumina_set_destroyed_hook,
};
use lumina::script_delegate::{ManagedBinding, ReleaseReason, ScriptDelegateBase};
use lumina::{ScriptDelegate, gameplay_tags, script_delegate};
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

const SLOTS: usize = 4;

#[script_delegate]
#[derive(Clone, Copy)]
struct FuzzHit {
    key: u32,
    crit: f64,
}

gameplay_tags! {
    mod tags {
        Fuzz {
            #[script]
            Hit: FuzzHit,
        },
    }
}

const HIT: &str = "Fuzz.Hit";

/// What user code (a thunk, the release hook) does, or a top-level operation.
#[derive(Clone, Copy, Debug)]
enum Op {
    Nothing,
    New(usize),
    Bind(usize, u8),
    Unbind(usize),
    Clear(usize),
    Broadcast(usize),
    Query(usize),
    Begin,
    Unload(usize),
    Drop(usize),
    Move(usize),
    Replace(usize),
    OnRelease(u8),
    /// Listen on the bus (partially when the flag is set), with the act its thunk does.
    BusListen(bool, u8),
    /// Remove a bus listener by the host.
    BusRemove(usize),
    /// Send on the bus from Rust, or (flag) from a script through the C ABI; a script send with
    /// a wrong layout when the second flag is set.
    BusSend(bool, bool),
    BusClear,
    BusDrop,
}

/// A bus operation, from the argument byte of kind 15.
fn decode_bus(arg: u8) -> Op {
    match arg % 8 {
        0 | 1 => Op::BusListen(arg & 0x80 != 0, arg >> 3),
        2 => Op::BusRemove(usize::from(arg >> 3)),
        3 | 4 => Op::BusSend(arg & 0x80 != 0, arg & 0x40 != 0),
        5 => Op::BusClear,
        6 => Op::BusDrop,
        _ => Op::Unload(usize::from(arg >> 3) % 8),
    }
}

/// What a bus listener's thunk does.
fn decode_bus_inner(code: u8) -> Op {
    match code % 8 {
        0 | 1 => Op::Nothing,
        2 => Op::BusSend(code & 0x10 != 0, false),
        3 => Op::BusRemove(usize::from(code >> 3)),
        4 => Op::BusClear,
        5 => Op::Unload(usize::from(code >> 4) % 8),
        6 => Op::BusListen(false, 0),
        _ => decode_inner(code >> 3),
    }
}

/// Decodes one operation from two bytes; `inner` is the act a thunk or the hook gets.
fn decode(kind: u8, arg: u8) -> Op {
    let slot = usize::from(arg) % SLOTS;
    match kind % 13 {
        0 => Op::Nothing,
        1 => Op::New(slot),
        2 | 3 => Op::Bind(slot, arg / 4),
        4 => Op::Unbind(usize::from(arg)),
        5 => Op::Clear(slot),
        6 => Op::Broadcast(slot),
        7 => Op::Query(slot),
        8 => Op::Begin,
        9 => Op::Unload(usize::from(arg) % 8),
        10 => Op::Drop(slot),
        11 => Op::Move(slot),
        _ => Op::Replace(slot),
    }
}

/// An act of user code: a smaller set (no moves: the delegate it runs for is borrowed).
fn decode_inner(code: u8) -> Op {
    let slot = usize::from(code >> 4) % SLOTS;
    match code % 8 {
        0 | 1 => Op::Nothing,
        2 => Op::Bind(slot, 0),
        3 => Op::Unbind(usize::from(code >> 3)),
        4 => Op::Clear(slot),
        5 => Op::Unload(usize::from(code >> 4) % 8),
        6 => Op::Drop(slot),
        _ => Op::Broadcast(slot),
    }
}

struct Binding {
    id: u64,
    act: Op,
    unbound: bool,
    released: u32,
}

#[derive(Default)]
struct World {
    slots: Vec<Option<Rc<ScriptDelegate<()>>>>,
    generations: Vec<u64>,
    bindings: Vec<Binding>,
    running: Vec<usize>,
    on_release: Option<Op>,
    depth: usize,
    bus: Option<Rc<MessageBus>>,
    /// The sends in flight: their keys, for the payload check.
    sends: u32,
}

thread_local! {
    static WORLD: RefCell<World> = RefCell::new(World::default());
}

fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
    WORLD.with_borrow_mut(f)
}

fn base(delegate: &ScriptDelegate<()>) -> *const ScriptDelegateBase {
    std::ptr::from_ref(delegate.base())
}

extern "C" fn thunk(context: *mut c_void, _payload: *const c_void) {
    let key = context.addr();
    let act = with(|w| {
        let binding = &w.bindings[key];
        assert!(
            !binding.unbound,
            "binding {key} ran after the host unbound it"
        );
        assert_eq!(binding.released, 0, "binding {key} ran after its release");
        w.running.push(key);
        binding.act
    });
    run(act);
    with(|w| {
        let at = w.running.iter().rposition(|&k| k == key).expect("running");
        w.running.remove(at);
    });
}

extern "C" fn bus_thunk(context: *mut c_void, message: *const c_void) {
    // SAFETY: the bus passes a `BusMessage` valid for the call; `Fuzz.Hit` is `#[script]`, so its
    // payload is a `FuzzHit`, aligned, valid for the call.
    let sent = unsafe {
        let message = &*message.cast::<BusMessage>();
        assert_eq!(message.payload_size, size_of::<FuzzHit>());
        message.payload.cast::<FuzzHit>().read()
    };
    assert!(sent.key < with(|w| w.sends), "the payload arrives intact");
    assert_eq!(sent.crit, 1.5);
    thunk(context, std::ptr::null());
}

fn hit_layout() -> LuminaPayloadInfo {
    let name = "FuzzHit";
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

fn bus() -> Option<Rc<MessageBus>> {
    with(|w| w.bus.clone())
}

extern "C" fn hook(
    _delegate: *const ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    _reason: ReleaseReason,
) {
    // SAFETY: the hook's contract: `count` bindings at `bindings` for the call.
    let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
    let then = with(|w| {
        for released in bindings {
            let key = released.context.addr();
            assert!(
                !w.running.contains(&key),
                "binding {key} released while its thunk runs"
            );
            let binding = &mut w.bindings[key];
            assert_eq!(binding.id, released.id);
            assert!(
                !binding.unbound,
                "binding {key} released after the host unbound it"
            );
            binding.released += 1;
            assert_eq!(binding.released, 1, "binding {key} released twice");
        }
        w.on_release.take()
    });
    if let Some(act) = then {
        run(act);
    }
}

/// A clone of the delegate in `slot`.
fn delegate(slot: usize) -> Option<Rc<ScriptDelegate<()>>> {
    with(|w| w.slots[slot].clone())
}

/// Takes the delegate out of `slot` if nothing else holds it (safe code cannot move or drop a
/// delegate that a running call borrows).
fn take_unique(slot: usize) -> Option<ScriptDelegate<()>> {
    let taken = with(|w| match &w.slots[slot] {
        Some(d) if Rc::strong_count(d) == 1 => w.slots[slot].take(),
        _ => None,
    })?;
    Rc::try_unwrap(taken).ok()
}

fn run(op: Op) {
    if with(|w| w.depth) > 4 {
        return;
    }
    with(|w| w.depth += 1);
    run_at_depth(op);
    with(|w| w.depth -= 1);
}

fn run_at_depth(op: Op) {
    match op {
        Op::Nothing => {}
        Op::New(slot) => with(|w| {
            if w.slots[slot].is_none() {
                w.slots[slot] = Some(Rc::new(ScriptDelegate::new()));
            }
        }),
        Op::Bind(slot, act) => {
            let Some(d) = delegate(slot) else { return };
            let key = with(|w| {
                w.bindings.push(Binding {
                    id: 0,
                    act: decode_inner(act),
                    unbound: true,
                    released: 0,
                });
                w.bindings.len() - 1
            });
            let mut id = 0;
            // SAFETY: a live delegate's base, on its thread; `id` is valid for a write.
            let status = unsafe {
                lumina_script_delegate_bind(
                    base(&d),
                    Some(thunk),
                    std::ptr::without_provenance_mut(key),
                    &mut id,
                )
            };
            assert_eq!(status, LuminaStatus::Ok);
            with(|w| {
                w.bindings[key].id = id;
                w.bindings[key].unbound = false;
            });
        }
        Op::Unbind(key) => {
            let Some(id) = with(|w| w.bindings.get(key).map(|b| b.id)) else {
                return;
            };
            for slot in 0..SLOTS {
                let Some(d) = delegate(slot) else { continue };
                // SAFETY: a live delegate's base, on its thread.
                let status = unsafe { lumina_script_delegate_unbind(base(&d), id) };
                if status == LuminaStatus::Ok {
                    with(|w| {
                        let binding = &mut w.bindings[key];
                        assert_eq!(binding.released, 0, "unbound a released binding");
                        assert!(!binding.unbound, "unbound twice");
                        binding.unbound = true;
                    });
                } else {
                    assert_eq!(status, LuminaStatus::UnknownId);
                }
            }
        }
        Op::Clear(slot) => {
            if let Some(d) = delegate(slot) {
                d.clear();
            }
        }
        Op::Broadcast(slot) => {
            if let Some(d) = delegate(slot) {
                d.broadcast(&());
            }
        }
        Op::Query(slot) => {
            let Some(d) = delegate(slot) else { return };
            let (mut bound, mut count) = (0_u8, 0_usize);
            // SAFETY: a live delegate's base, on its thread; the outs are valid for writes.
            unsafe {
                assert_eq!(
                    lumina_script_delegate_is_bound(base(&d), &mut bound),
                    LuminaStatus::Ok
                );
                assert_eq!(
                    lumina_script_delegate_managed_count(base(&d), &mut count),
                    LuminaStatus::Ok
                );
            }
            assert_eq!(bound != 0, count > 0, "only managed listeners here");
        }
        Op::Begin => {
            let mut generation = 0;
            // SAFETY: `generation` is valid for a write.
            let status = unsafe { lumina_script_generation_begin(&mut generation) };
            assert_eq!(status, LuminaStatus::Ok);
            with(|w| w.generations.push(generation));
        }
        Op::Unload(index) => {
            let Some(generation) = with(|w| w.generations.get(index).copied()) else {
                return;
            };
            let mut released = 0;
            // SAFETY: `released` is valid for a write.
            let status = unsafe { lumina_script_generation_unload(generation, &mut released) };
            assert!(matches!(status, LuminaStatus::Ok | LuminaStatus::UnknownId));
        }
        Op::Drop(slot) => drop(take_unique(slot)),
        Op::Move(slot) => {
            if let Some(d) = take_unique(slot) {
                let moved = Box::new(d);
                with(|w| w.slots[slot] = Some(Rc::new(*moved)));
            }
        }
        Op::Replace(slot) => {
            if let Some(d) = take_unique(slot) {
                let mut boxed = Box::new(d);
                let old = std::mem::replace(&mut *boxed, ScriptDelegate::new());
                with(|w| {
                    w.slots[slot] = Some(Rc::new(old));
                    let free = w.slots.iter().position(Option::is_none);
                    if let Some(free) = free {
                        w.slots[free] = Some(Rc::new(*boxed));
                    }
                });
            }
        }
        Op::OnRelease(act) => with(|w| w.on_release = Some(decode_inner(act))),
        Op::BusListen(partial, act) => {
            let Some(bus) = bus() else { return };
            let key = with(|w| {
                w.bindings.push(Binding {
                    id: 0,
                    act: decode_bus_inner(act),
                    unbound: true,
                    released: 0,
                });
                w.bindings.len() - 1
            });
            let tag = if partial { "Fuzz" } else { HIT };
            let mut id = 0;
            // SAFETY: a live bus (held), on its thread; `id` is valid for a write.
            let status = unsafe {
                lumina_bus_listen(
                    Rc::as_ptr(&bus),
                    tag.as_ptr(),
                    tag.len(),
                    u8::from(partial),
                    0,
                    0,
                    Some(bus_thunk),
                    std::ptr::without_provenance_mut(key),
                    &mut id,
                )
            };
            assert_eq!(status, LuminaStatus::Ok);
            with(|w| {
                w.bindings[key].id = id;
                w.bindings[key].unbound = false;
            });
        }
        Op::BusRemove(key) => {
            let Some(bus) = bus() else { return };
            let Some(id) = with(|w| w.bindings.get(key).map(|b| b.id)) else {
                return;
            };
            // SAFETY: a live bus (held), on its thread.
            let status = unsafe { lumina_bus_remove(Rc::as_ptr(&bus), id) };
            if status == LuminaStatus::Ok {
                with(|w| {
                    let binding = &mut w.bindings[key];
                    assert_eq!(binding.released, 0, "removed a released listener");
                    assert!(!binding.unbound, "removed twice");
                    binding.unbound = true;
                });
            } else {
                assert_eq!(status, LuminaStatus::UnknownId);
            }
        }
        Op::BusSend(script, wrong) => {
            let Some(bus) = bus() else { return };
            let key = with(|w| {
                w.sends += 1;
                w.sends - 1
            });
            let hit = FuzzHit { key, crit: 1.5 };
            if script {
                let mut layout = hit_layout();
                if wrong {
                    layout.size -= 1;
                }
                // SAFETY: a live bus (held), name, payload and layout.
                let status = unsafe {
                    lumina_bus_send(
                        Rc::as_ptr(&bus),
                        HIT.as_ptr(),
                        HIT.len(),
                        0,
                        0,
                        std::ptr::from_ref(&hit).cast(),
                        size_of::<FuzzHit>(),
                        &layout,
                    )
                };
                let expected = if wrong {
                    LuminaStatus::WrongLayout
                } else {
                    LuminaStatus::Ok
                };
                assert_eq!(status, expected);
            } else {
                bus.send(&tags::FUZZ_HIT, hit);
            }
        }
        Op::BusClear => {
            if let Some(bus) = bus() {
                bus.clear();
            }
        }
        Op::BusDrop => {
            // Only when nothing else holds it (a running thunk's send does).
            let old = with(|w| match &w.bus {
                Some(bus) if Rc::strong_count(bus) == 1 => w.bus.take(),
                _ => None,
            });
            if old.is_some() {
                drop(old);
                with(|w| w.bus = Some(Rc::new(MessageBus::new())));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    assert_eq!(lumina_set_destroyed_hook(Some(hook)), LuminaStatus::Ok);
    with(|w| {
        *w = World {
            slots: (0..SLOTS)
                .map(|_| Some(Rc::new(ScriptDelegate::new())))
                .collect(),
            ..World::default()
        };
    });
    tags::register().unwrap();
    with(|w| w.bus = Some(Rc::new(MessageBus::new())));
    for pair in data.chunks_exact(2) {
        let op = match pair[0] % 16 {
            13 | 14 => Op::OnRelease(pair[1]),
            15 => decode_bus(pair[1]),
            kind => decode(kind, pair[1]),
        };
        run(op);
    }
    // Teardown: every delegate and the bus dropped, every generation unloaded (what that runs
    // may bind again, a few rounds at most).
    for _ in 0..4 {
        with(|w| w.on_release = None);
        let bus = with(|w| w.bus.take());
        drop(bus);
        for slot in 0..SLOTS {
            run(Op::Drop(slot));
        }
        let generations = with(|w| w.generations.len());
        for index in 0..generations {
            run(Op::Unload(index));
        }
    }
    let world = with(std::mem::take);
    assert!(
        world.slots.iter().all(Option::is_none),
        "every delegate dropped"
    );
    for (key, binding) in world.bindings.iter().enumerate() {
        let expected = u32::from(!binding.unbound);
        assert_eq!(
            binding.released, expected,
            "binding {key}: exactly once (R4)"
        );
    }
});
