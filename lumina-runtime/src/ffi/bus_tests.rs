//! The message bus through the C ABI (GB8), as a host calls it; `.ci/run` runs these under Miri
//! (the `ffi` filter).

use super::*;
use crate::bus::BusMessage;
use crate::script_delegate::{ManagedBinding, ReleaseReason};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

#[lumina_macros::script_delegate]
#[derive(Clone, Copy, Debug, PartialEq)]
struct FfiHit {
    amount: u32,
    crit: f64,
}

#[lumina_macros::script_delegate]
#[derive(Clone, Copy, Debug, PartialEq)]
struct FfiOther {
    a: u32,
}

lumina_macros::gameplay_tags! {
    mod tags {
        FfiGb8 {
            #[script]
            Hit: FfiHit {
                #[script]
                Crit: FfiHit,
                Quiet: u32,
            },
            Plain: u32,
            #[retained]
            #[script]
            State: FfiHit,
        },
    }
}

lumina_macros::gameplay_tags! {
    /// Tags only `gb8_a_script_tag_is_visible_by_name_after_register_before_rust_uses_it` uses.
    mod fresh_tags {
        FfiGb8Fresh {
            #[script]
            Hit: FfiHit {
                Echo: u32,
            },
            #[script]
            Spawn: FfiHit,
        },
    }
}

/// What a test's thunk does besides recording.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Action {
    Nothing,
    Consume,
    RemoveSelf,
    UnloadGeneration(u64),
    Clear,
}

/// What a thunk heard: the tag's name, the entity, the payload.
type Heard = (String, Option<u64>, Option<FfiHit>);

/// A managed listener's state: its context points here.
struct Recorder {
    bus: *const MessageBus,
    id: Cell<u64>,
    action: Cell<Action>,
    running: Cell<bool>,
    heard: RefCell<Vec<Heard>>,
    remove_status: Cell<Option<LuminaStatus>>,
}

impl Recorder {
    fn new(bus: &MessageBus) -> Self {
        Recorder {
            bus,
            id: Cell::new(0),
            action: Cell::new(Action::Nothing),
            running: Cell::new(false),
            heard: RefCell::new(Vec::new()),
            remove_status: Cell::new(None),
        }
    }

    fn context(&self) -> *mut c_void {
        std::ptr::from_ref(self).cast_mut().cast()
    }

    fn amounts(&self) -> Vec<Option<u32>> {
        self.heard
            .borrow()
            .iter()
            .map(|(_, _, hit)| hit.map(|hit| hit.amount))
            .collect()
    }
}

extern "C" fn thunk(context: *mut c_void, message: *const c_void) {
    // SAFETY: every test passes a live `Recorder` as the context, and the bus passes a
    // `BusMessage` valid (and writable: it lives in the bus's frame) for the call.
    let (recorder, message) = unsafe {
        (
            &*context.cast::<Recorder>(),
            &mut *message.cast_mut().cast::<BusMessage>(),
        )
    };
    recorder.running.set(true);
    // SAFETY: the tag name is the registry's `'static` UTF-8 name.
    let name = unsafe { std::slice::from_raw_parts(message.tag_name, message.tag_name_len) };
    let hit = (!message.payload.is_null()).then(|| {
        assert_eq!(message.payload_size, size_of::<FfiHit>());
        // SAFETY: a non-null payload is the tag's payload, here an `FfiHit`, aligned (a Rust
        // value, or the bus's 8-aligned copy), valid during the call.
        unsafe { message.payload.cast::<FfiHit>().read() }
    });
    recorder.heard.borrow_mut().push((
        String::from_utf8(name.to_vec()).unwrap(),
        (message.has_entity != 0).then_some(message.entity),
        hit,
    ));
    match recorder.action.get() {
        Action::Nothing => {}
        Action::Consume => message.consume = 1,
        Action::RemoveSelf => {
            // SAFETY: the bus outlives its listeners' calls.
            let status = unsafe { lumina_bus_remove(recorder.bus, recorder.id.get()) };
            recorder.remove_status.set(Some(status));
        }
        Action::Clear => {
            // SAFETY: the bus outlives its listeners' calls.
            unsafe { &*recorder.bus }.clear();
        }
        Action::UnloadGeneration(generation) => {
            let mut released = 0;
            // SAFETY: a local out pointer.
            let status = unsafe { lumina_script_generation_unload(generation, &mut released) };
            assert_eq!(status, LuminaStatus::Ok);
        }
    }
    recorder.running.set(false);
}

thread_local! {
    /// What the release hook got on this thread: (id, reason), and whether a thunk of a
    /// released binding was running then.
    static RELEASED: RefCell<Vec<(u64, ReleaseReason)>> = const { RefCell::new(Vec::new()) };
    static RELEASED_WHILE_RUNNING: Cell<bool> = const { Cell::new(false) };
}

extern "C" fn hook(
    _delegate: *const crate::script_delegate::ScriptDelegateBase,
    bindings: *const ManagedBinding,
    count: usize,
    reason: ReleaseReason,
) {
    // SAFETY: the hook gets `count` bindings, valid for the call.
    let bindings = unsafe { std::slice::from_raw_parts(bindings, count) };
    for binding in bindings {
        // SAFETY: every binding of these tests has a live `Recorder` as its context.
        let recorder = unsafe { &*binding.context.cast::<Recorder>() };
        if recorder.running.get() {
            RELEASED_WHILE_RUNNING.set(true);
        }
        RELEASED.with_borrow_mut(|released| released.push((binding.id, reason)));
    }
}

/// Installs the recording hook for one test (tests run in parallel: the hook is global, so
/// tests that install one take this lock).
pub(super) fn with_hook<R>(body: impl FnOnce() -> R) -> R {
    let _lock = super::tests::HOOK_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    RELEASED.with_borrow_mut(Vec::clear);
    RELEASED_WHILE_RUNNING.set(false);
    let previous = crate::script_delegate::set_destroyed_hook(Some(hook));
    let result = body();
    crate::script_delegate::set_destroyed_hook(previous);
    assert!(
        !RELEASED_WHILE_RUNNING.get(),
        "a binding was released while its thunk ran (R4)"
    );
    result
}

fn released() -> Vec<(u64, ReleaseReason)> {
    RELEASED.with_borrow_mut(std::mem::take)
}

fn name_of(tag: &str) -> (*const u8, usize) {
    (tag.as_ptr(), tag.len())
}

/// Listens through the C ABI; returns the status and writes the id into the recorder.
fn listen(
    bus: &MessageBus,
    tag: &str,
    partial: bool,
    entity: Option<u64>,
    r: &Recorder,
) -> LuminaStatus {
    let (name, len) = name_of(tag);
    let mut id = 0;
    // SAFETY: live bus, name and recorder; a local out pointer.
    let status = unsafe {
        lumina_bus_listen(
            bus,
            name,
            len,
            u8::from(partial),
            u8::from(entity.is_some()),
            entity.unwrap_or(0),
            Some(thunk),
            r.context(),
            &mut id,
        )
    };
    r.id.set(id);
    status
}

fn layout_of(name: &'static str) -> LuminaPayloadInfo {
    let mut info = std::mem::MaybeUninit::<LuminaPayloadInfo>::uninit();
    // SAFETY: a live name; a local out pointer, read only after Ok.
    unsafe {
        assert_eq!(
            lumina_reflect_find_payload(name.as_ptr(), name.len(), info.as_mut_ptr()),
            LuminaStatus::Ok
        );
        info.assume_init()
    }
}

fn send(
    bus: &MessageBus,
    tag: &str,
    entity: Option<u64>,
    hit: &FfiHit,
    layout: &LuminaPayloadInfo,
    len: usize,
) -> LuminaStatus {
    let (name, name_len) = name_of(tag);
    // SAFETY: live bus, name, payload (of `len` <= its size bytes) and layout.
    unsafe {
        lumina_bus_send(
            bus,
            name,
            name_len,
            u8::from(entity.is_some()),
            entity.unwrap_or(0),
            std::ptr::from_ref(hit).cast(),
            len,
            layout,
        )
    }
}

const HIT: FfiHit = FfiHit {
    amount: 7,
    crit: 2.5,
};

#[test]
fn gb8_tags_are_found_by_name_and_unknown_names_are_error_results() {
    tags::register().unwrap();
    let hit = tags::FFI_GB8_HIT.tag();
    let mut id = u32::MAX;
    // SAFETY: live names; local out pointers.
    unsafe {
        let (name, len) = name_of("FfiGb8.Hit");
        assert_eq!(lumina_bus_find_tag(name, len, &mut id), LuminaStatus::Ok);
        assert_eq!(id, hit.id());
        let (name, len) = name_of("FfiGb8.Hti");
        assert_eq!(
            lumina_bus_find_tag(name, len, &mut id),
            LuminaStatus::UnknownTag
        );
        let (name, len) = name_of("FfiGb8..Hit");
        assert_eq!(
            lumina_bus_find_tag(name, len, &mut id),
            LuminaStatus::UnknownTag
        );
        assert_eq!(
            lumina_bus_find_tag(std::ptr::null(), 3, &mut id),
            LuminaStatus::NullPointer
        );
        let invalid = [0xff_u8];
        assert_eq!(
            lumina_bus_find_tag(invalid.as_ptr(), 1, &mut id),
            LuminaStatus::InvalidUtf8
        );
        assert_eq!(
            lumina_bus_find_tag(name, len, std::ptr::null_mut()),
            LuminaStatus::NullPointer
        );
    }
    assert_eq!(id, hit.id(), "nothing is written on error");
    assert_eq!(hit.script_payload().unwrap().name, "FfiHit");
    assert!(tags::FFI_GB8_PLAIN.tag().script_payload().is_none());
}

#[test]
fn gb8_a_managed_listener_hears_a_rust_send_with_its_payload() {
    with_hook(|| {
        let bus = MessageBus::new();
        let exact = Recorder::new(&bus);
        let partial = Recorder::new(&bus);
        let entity = Recorder::new(&bus);
        // Scripts see the set's tags once it is registered (the engine does so at start-up).
        tags::register().unwrap();
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, None, &exact),
            LuminaStatus::Ok
        );
        assert_eq!(
            listen(&bus, "FfiGb8", true, None, &partial),
            LuminaStatus::Ok
        );
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, Some(9), &entity),
            LuminaStatus::Ok
        );
        assert_ne!(exact.id.get(), 0);
        bus.send(&tags::FFI_GB8_HIT, HIT);
        bus.send_to(&tags::FFI_GB8_HIT, 9, FfiHit { amount: 8, ..HIT });
        bus.send(&tags::FFI_GB8_HIT_CRIT, FfiHit { amount: 50, ..HIT });
        bus.send(&tags::FFI_GB8_HIT_QUIET, 3);
        assert_eq!(
            exact.heard.borrow()[0],
            ("FfiGb8.Hit".to_owned(), None, Some(HIT))
        );
        assert_eq!(
            exact.amounts(),
            [Some(7), Some(8)],
            "exact: not the child tag"
        );
        assert_eq!(entity.amounts(), [Some(8)], "one entity only");
        assert_eq!(entity.heard.borrow()[0].1, Some(9));
        assert_eq!(
            partial.amounts(),
            [Some(7), Some(8), Some(50), None],
            "partial: every descendant; a payload scripts cannot see arrives as null"
        );
        assert_eq!(partial.heard.borrow()[3].0, "FfiGb8.Hit.Quiet");
        let mut count = 0;
        // SAFETY: a live bus and a local out pointer.
        let status = unsafe { lumina_bus_managed_count(&bus, &mut count) };
        assert_eq!(status, LuminaStatus::Ok);
        assert_eq!(count, 3);
        drop(bus);
        let mut reasons = released();
        reasons.sort_by_key(|(id, _)| *id);
        assert_eq!(
            reasons,
            [
                (exact.id.get(), ReleaseReason::Destroyed),
                (partial.id.get(), ReleaseReason::Destroyed),
                (entity.id.get(), ReleaseReason::Destroyed),
            ],
            "dropping the bus releases each once"
        );
    });
}

#[test]
fn gb8_a_script_send_reaches_rust_and_managed_listeners_and_can_be_consumed() {
    with_hook(|| {
        let bus = MessageBus::new();
        let rust_heard = std::rc::Rc::new(RefCell::new(Vec::new()));
        let sink = std::rc::Rc::clone(&rust_heard);
        let _rust = bus.listen(&tags::FFI_GB8_HIT, move |hit: &FfiHit, message| {
            sink.borrow_mut().push((*hit, message.entity()));
        });
        let managed = Recorder::new(&bus);
        let consumer = Recorder::new(&bus);
        consumer.action.set(Action::Consume);
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, Some(4), &consumer),
            LuminaStatus::Ok
        );
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, None, &managed),
            LuminaStatus::Ok
        );
        let layout = layout_of("FfiHit");
        assert_eq!(
            send(&bus, "FfiGb8.Hit", None, &HIT, &layout, size_of::<FfiHit>()),
            LuminaStatus::Ok
        );
        assert_eq!(
            *rust_heard.borrow(),
            [(HIT, None)],
            "Rust hears the script's bytes as its type"
        );
        assert_eq!(managed.amounts(), [Some(7)]);
        // Addressed to entity 4: its managed listener consumes it, so nothing after hears it.
        assert_eq!(
            send(
                &bus,
                "FfiGb8.Hit",
                Some(4),
                &HIT,
                &layout,
                size_of::<FfiHit>()
            ),
            LuminaStatus::Ok
        );
        assert_eq!(consumer.amounts(), [Some(7)]);
        assert_eq!(
            managed.amounts(),
            [Some(7)],
            "consumed by the entity's listener"
        );
        assert_eq!(rust_heard.borrow().len(), 1);
        bus.clear();
        let mut reasons = released();
        reasons.sort_by_key(|(id, _)| *id);
        assert_eq!(
            reasons,
            [
                (consumer.id.get(), ReleaseReason::Cleared),
                (managed.id.get(), ReleaseReason::Cleared)
            ]
        );
        drop(bus);
        assert!(released().is_empty(), "released once");
    });
}

#[test]
fn gb8_wrong_payloads_and_layouts_are_clear_error_results_not_reads() {
    let bus = MessageBus::new();
    let heard = Recorder::new(&bus);
    assert_eq!(
        listen(&bus, "FfiGb8.Hit", false, None, &heard),
        LuminaStatus::Ok
    );
    let good = layout_of("FfiHit");
    let other = layout_of("FfiOther");
    let size = size_of::<FfiHit>();
    tags::register().unwrap();
    assert_eq!(
        send(&bus, "FfiGb8.Hit", None, &HIT, &other, size),
        LuminaStatus::WrongPayload
    );
    assert_eq!(
        send(&bus, "FfiGb8.Hit", None, &HIT, &good, 4),
        LuminaStatus::WrongLayout,
        "too few bytes"
    );
    let mut wrong = good;
    wrong.size = 8;
    assert_eq!(
        send(&bus, "FfiGb8.Hit", None, &HIT, &wrong, 8),
        LuminaStatus::WrongLayout
    );
    let mut wrong = good;
    wrong.field_count = 3;
    assert_eq!(
        send(&bus, "FfiGb8.Hit", None, &HIT, &wrong, size),
        LuminaStatus::WrongLayout
    );
    let mut wrong = good;
    wrong.align = 4;
    assert_eq!(
        send(&bus, "FfiGb8.Hit", None, &HIT, &wrong, size),
        LuminaStatus::WrongLayout
    );
    assert_eq!(
        send(&bus, "FfiGb8.Plain", None, &HIT, &good, size),
        LuminaStatus::NotScriptVisible
    );
    assert_eq!(
        send(&bus, "FfiGb8.Nope", None, &HIT, &good, size),
        LuminaStatus::UnknownTag
    );
    assert_eq!(
        listen(&bus, "FfiGb8.Plain", false, None, &heard),
        LuminaStatus::NotScriptVisible
    );
    // SAFETY: null pointers are the point; the rest are live.
    unsafe {
        let (name, len) = name_of("FfiGb8.Hit");
        assert_eq!(
            lumina_bus_send(&bus, name, len, 0, 0, std::ptr::null(), size, &good),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_bus_send(
                &bus,
                name,
                len,
                0,
                0,
                std::ptr::from_ref(&HIT).cast(),
                size,
                std::ptr::null()
            ),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_bus_send(
                std::ptr::null(),
                name,
                len,
                0,
                0,
                std::ptr::from_ref(&HIT).cast(),
                size,
                &good
            ),
            LuminaStatus::NullPointer
        );
        let mut id = 0;
        assert_eq!(
            lumina_bus_listen(
                &bus,
                name,
                len,
                0,
                0,
                0,
                None,
                std::ptr::null_mut(),
                &mut id
            ),
            LuminaStatus::NullThunk
        );
        assert_eq!(lumina_bus_remove(&bus, 0), LuminaStatus::UnknownId);
    }
    assert!(
        heard.heard.borrow().is_empty(),
        "no refused send was delivered"
    );
    let rust = bus.listen(&tags::FFI_GB8_HIT, |_, _| {});
    // SAFETY: a live bus.
    let status = unsafe { lumina_bus_remove(&bus, rust.id()) };
    assert_eq!(
        status,
        LuminaStatus::UnknownId,
        "a Rust listener is not the host's to remove"
    );
    assert!(bus.contains(rust));
}

#[test]
fn gb8_every_removal_path_releases_once_with_its_reason_never_while_running() {
    with_hook(|| {
        let bus = MessageBus::new();
        let host_removed = Recorder::new(&bus);
        let rust_removed = Recorder::new(&bus);
        let self_removed = Recorder::new(&bus);
        let forgotten = Recorder::new(&bus);
        let unloader = Recorder::new(&bus);
        let survivor = Recorder::new(&bus);
        let generation = crate::script_generation::begin();
        for recorder in [&host_removed, &rust_removed, &self_removed, &unloader] {
            assert_eq!(
                listen(&bus, "FfiGb8.Hit", false, None, recorder),
                LuminaStatus::Ok
            );
        }
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, Some(3), &forgotten),
            LuminaStatus::Ok
        );
        let next = crate::script_generation::begin();
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, None, &survivor),
            LuminaStatus::Ok
        );

        // SAFETY: a live bus.
        let status = unsafe { lumina_bus_remove(&bus, host_removed.id.get()) };
        assert_eq!(status, LuminaStatus::Ok);
        // SAFETY: as above.
        let status = unsafe { lumina_bus_remove(&bus, host_removed.id.get()) };
        assert_eq!(status, LuminaStatus::UnknownId);
        assert!(released().is_empty(), "the host's own remove calls no hook");
        assert!(bus.remove(DelegateHandleExt::of(rust_removed.id.get())));
        assert_eq!(
            released(),
            [(rust_removed.id.get(), ReleaseReason::Removed)]
        );
        assert_eq!(bus.forget_entity(3), 1);
        assert_eq!(released(), [(forgotten.id.get(), ReleaseReason::Removed)]);

        self_removed.action.set(Action::RemoveSelf);
        unloader.action.set(Action::UnloadGeneration(generation));
        bus.send(&tags::FFI_GB8_HIT, HIT);
        assert_eq!(self_removed.remove_status.get(), Some(LuminaStatus::Ok));
        // The unloader unloaded its own generation from its thunk: released when its call
        // returned (the hook checks it was not running), with the generation's reason.
        assert_eq!(
            released(),
            [(unloader.id.get(), ReleaseReason::GenerationUnloaded)]
        );
        assert_eq!(
            survivor.amounts(),
            [Some(7)],
            "the next generation's listener still hears"
        );
        bus.send(&tags::FFI_GB8_HIT, HIT);
        assert_eq!(self_removed.amounts(), [Some(7)]);
        assert_eq!(unloader.amounts(), [Some(7)]);
        assert_eq!(survivor.amounts(), [Some(7), Some(7)]);
        let mut released_count = 0;
        assert_eq!(crate::script_generation::unload(next), Some(1));
        assert_eq!(
            released(),
            [(survivor.id.get(), ReleaseReason::GenerationUnloaded)]
        );
        // SAFETY: a local out pointer.
        let status = unsafe { lumina_script_generation_unload(generation, &mut released_count) };
        assert_eq!(status, LuminaStatus::UnknownId, "a generation unloads once");
        drop(bus);
        assert!(released().is_empty(), "nothing is released twice");
    });
}

#[test]
fn gb8_a_managed_listener_hears_a_retained_message_at_once_and_a_clear_from_it_releases_once() {
    with_hook(|| {
        let bus = MessageBus::new();
        bus.send(&tags::FFI_GB8_STATE, FfiHit { amount: 11, ..HIT });
        let late = Recorder::new(&bus);
        late.action.set(Action::Clear);
        assert_eq!(
            listen(&bus, "FfiGb8.State", false, None, &late),
            LuminaStatus::Ok
        );
        assert_eq!(
            late.amounts(),
            [Some(11)],
            "heard the retained message at once"
        );
        assert_eq!(
            released(),
            [(late.id.get(), ReleaseReason::Cleared)],
            "the clear its own replay made released it once, with its id, when the walk ended"
        );
        assert_eq!(bus.managed_len(), 0);
        drop(bus);
        assert!(released().is_empty());
    });
}

/// GB6 through the C ABI: a script's send on a retained tag is delivered and kept, as a Rust
/// send is: a later listener, managed or Rust, hears it at once, and `retained` reads it as the
/// declared type. Fails when `send_script` refuses retained tags or does not keep the bytes.
#[test]
fn gb6_a_script_send_on_a_retained_tag_is_delivered_and_kept() {
    with_hook(|| {
        let bus = MessageBus::new();
        tags::register().unwrap();
        let layout = layout_of("FfiHit");
        let size = size_of::<FfiHit>();
        let early = Recorder::new(&bus);
        assert_eq!(
            listen(&bus, "FfiGb8.State", false, None, &early),
            LuminaStatus::Ok
        );
        let first = FfiHit {
            amount: 21,
            crit: 0.5,
        };
        assert_eq!(
            send(&bus, "FfiGb8.State", None, &first, &layout, size),
            LuminaStatus::Ok
        );
        assert_eq!(early.amounts(), [Some(21)], "delivered at once");
        // Kept: a managed listener added later hears it at once, as a replay.
        let late = Recorder::new(&bus);
        assert_eq!(
            listen(&bus, "FfiGb8.State", false, None, &late),
            LuminaStatus::Ok
        );
        assert_eq!(
            late.heard.borrow().as_slice(),
            [("FfiGb8.State".to_owned(), None, Some(first))]
        );
        // A second script send replaces it (in place), addressed to an entity.
        let second = FfiHit {
            amount: 22,
            crit: 1.5,
        };
        assert_eq!(
            send(&bus, "FfiGb8.State", Some(5), &second, &layout, size),
            LuminaStatus::Ok
        );
        // A Rust listener added later hears the script's payload, typed.
        let rust_heard = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&rust_heard);
        let _rust = bus.listen(&tags::FFI_GB8_STATE, move |hit, message| {
            sink.borrow_mut()
                .push((*hit, message.entity(), message.is_replay()));
        });
        assert_eq!(*rust_heard.borrow(), [(second, Some(5), true)]);
        // `retained` gives it as the declared type.
        let kept = bus.retained(&tags::FFI_GB8_STATE).unwrap();
        assert_eq!(kept.downcast_ref::<FfiHit>(), Some(&second));
        drop(kept);
        // A Rust send replaces it, and a script send after that again.
        bus.send(&tags::FFI_GB8_STATE, HIT);
        assert_eq!(
            send(&bus, "FfiGb8.State", None, &first, &layout, size),
            LuminaStatus::Ok
        );
        assert_eq!(
            bus.retained(&tags::FFI_GB8_STATE)
                .unwrap()
                .downcast_ref::<FfiHit>(),
            Some(&first)
        );
        assert_eq!(early.amounts(), [Some(21), Some(22), Some(7), Some(21)]);
        drop(bus);
        assert_eq!(released().len(), 2);
    });
}

/// GB3 through the C ABI: a managed listener on a child tag that writes `consume` stops the
/// message before the parent's partial listeners (managed and Rust); one that does not, does
/// not. Fails when `call_managed` ignores the byte.
#[test]
fn gb3_a_managed_listener_on_a_child_tag_consumes_and_the_parent_does_not_hear() {
    with_hook(|| {
        let bus = MessageBus::new();
        tags::register().unwrap();
        let child = Recorder::new(&bus);
        let parent = Recorder::new(&bus);
        assert_eq!(
            listen(&bus, "FfiGb8.Hit.Crit", false, None, &child),
            LuminaStatus::Ok
        );
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", true, None, &parent),
            LuminaStatus::Ok
        );
        let rust_parent = Rc::new(Cell::new(0));
        let sink = Rc::clone(&rust_parent);
        let _rust = bus
            .subscribe()
            .partial()
            .listen(&tags::FFI_GB8, move |_| sink.set(sink.get() + 1));
        let layout = layout_of("FfiHit");
        let size = size_of::<FfiHit>();
        // Not consumed: it goes up.
        bus.send(&tags::FFI_GB8_HIT_CRIT, HIT);
        assert_eq!(
            send(&bus, "FfiGb8.Hit.Crit", None, &HIT, &layout, size),
            LuminaStatus::Ok
        );
        assert_eq!(child.amounts().len(), 2);
        assert_eq!(parent.amounts().len(), 2);
        assert_eq!(rust_parent.get(), 2);
        // Consumed by the child's listener: neither parent hears it, from Rust or a script.
        child.action.set(Action::Consume);
        bus.send(&tags::FFI_GB8_HIT_CRIT, HIT);
        assert_eq!(
            send(&bus, "FfiGb8.Hit.Crit", None, &HIT, &layout, size),
            LuminaStatus::Ok
        );
        assert_eq!(child.amounts().len(), 4);
        assert_eq!(parent.amounts().len(), 2, "consumed below it");
        assert_eq!(rust_parent.get(), 2, "consumed below it");
        drop(bus);
        assert_eq!(released().len(), 2);
    });
}

#[test]
fn gb8_bus_calls_from_another_thread_are_refused() {
    let bus = MessageBus::new();
    /// The bus's address, carried to another thread the way a host would.
    struct Foreign(*const MessageBus);
    // SAFETY: the other thread only passes the pointer to the C ABI, which refuses it after
    // reading the immutable thread id; that is what this test checks.
    unsafe impl Send for Foreign {}
    let foreign = Foreign(&bus);
    tags::register().unwrap();
    let statuses = std::thread::spawn(move || {
        let foreign = foreign;
        let layout = layout_of("FfiHit");
        let (name, len) = name_of("FfiGb8.Hit");
        let mut id = 0;
        // SAFETY: the bus outlives the thread (joined below); each call reads only its thread
        // id before refusing.
        unsafe {
            [
                lumina_bus_listen(
                    foreign.0,
                    name,
                    len,
                    0,
                    0,
                    0,
                    Some(thunk),
                    std::ptr::null_mut(),
                    &mut id,
                ),
                lumina_bus_send(
                    foreign.0,
                    name,
                    len,
                    0,
                    0,
                    std::ptr::from_ref(&HIT).cast(),
                    size_of::<FfiHit>(),
                    &layout,
                ),
                lumina_bus_remove(foreign.0, 1),
            ]
        }
    })
    .join()
    .unwrap();
    assert_eq!(statuses, [LuminaStatus::NotGameThread; 3]);
    assert_eq!(bus.managed_len(), 0);
}

/// `DelegateHandle::from_id` for tests.
struct DelegateHandleExt;

impl DelegateHandleExt {
    fn of(id: u64) -> crate::handle::DelegateHandle {
        crate::handle::DelegateHandle::from_id(id)
    }
}

#[test]
fn gb8_gb5_a_managed_listener_added_during_a_send_does_not_hear_it_on_a_parent_tag() {
    with_hook(|| {
        let bus = Rc::new(MessageBus::new());
        let late = Rc::new(Recorder::new(&bus));
        let _ = tags::FFI_GB8_HIT_CRIT.tag();
        let _ = tags::FFI_GB8_HIT.tag();
        // A Rust listener on the child tag (walked first) makes the script listen on the parent
        // tag (walked next) in the middle of the send: M2, the script hears the next one only.
        let adder = {
            let (bus, late) = (Rc::downgrade(&bus), Rc::clone(&late));
            move |_: &FfiHit, _: &crate::bus::Message<'_, u64>| {
                if late.id.get() == 0 {
                    let bus = bus.upgrade().unwrap();
                    assert_eq!(
                        listen(&bus, "FfiGb8.Hit", true, None, &late),
                        LuminaStatus::Ok
                    );
                }
            }
        };
        let adder = bus.listen(&tags::FFI_GB8_HIT_CRIT, adder);
        bus.send(&tags::FFI_GB8_HIT_CRIT, FfiHit { amount: 1, ..HIT });
        assert_ne!(late.id.get(), 0);
        assert_eq!(
            late.amounts(),
            [],
            "added during the send: not this message"
        );
        bus.send(&tags::FFI_GB8_HIT_CRIT, FfiHit { amount: 2, ..HIT });
        assert_eq!(late.amounts(), [Some(2)]);
        assert!(bus.remove(adder));
        drop(bus);
        assert_eq!(released(), [(late.id.get(), ReleaseReason::Destroyed)]);
    });
}

#[test]
fn gb8_a_script_tag_is_visible_by_name_after_register_before_rust_uses_it() {
    with_hook(|| {
        let bus = MessageBus::new();
        let heard = Recorder::new(&bus);
        let good = layout_of("FfiHit");
        let size = size_of::<FfiHit>();
        let mut id = u32::MAX;
        let (spawn, spawn_len) = name_of("FfiGb8Fresh.Spawn");
        // Declared, but no Rust code used it: the registry has never heard of it.
        // SAFETY: a live name; a local out pointer.
        let status = unsafe { lumina_bus_find_tag(spawn, spawn_len, &mut id) };
        assert_eq!(status, LuminaStatus::UnknownTag);
        // Rust used the child only: the `#[script]` parent exists as a name, without its layout.
        let _ = fresh_tags::FFI_GB8_FRESH_HIT_ECHO.tag();
        assert_eq!(
            listen(&bus, "FfiGb8Fresh.Hit", false, None, &heard),
            LuminaStatus::NotScriptVisible
        );
        assert_eq!(
            send(&bus, "FfiGb8Fresh.Hit", None, &HIT, &good, size),
            LuminaStatus::NotScriptVisible
        );
        fresh_tags::register().unwrap();
        // SAFETY: as above.
        let status = unsafe { lumina_bus_find_tag(spawn, spawn_len, &mut id) };
        assert_eq!(status, LuminaStatus::Ok);
        assert_eq!(id, fresh_tags::FFI_GB8_FRESH_SPAWN.tag().id());
        assert_eq!(
            listen(&bus, "FfiGb8Fresh.Hit", false, None, &heard),
            LuminaStatus::Ok
        );
        assert_eq!(
            send(&bus, "FfiGb8Fresh.Hit", None, &HIT, &good, size),
            LuminaStatus::Ok
        );
        assert_eq!(
            send(&bus, "FfiGb8Fresh.Spawn", None, &HIT, &good, size),
            LuminaStatus::Ok
        );
        assert_eq!(heard.amounts(), [Some(7)]);
        drop(bus);
        assert_eq!(released(), [(heard.id.get(), ReleaseReason::Destroyed)]);
    });
}

/// R4, GB8: a managed listener removed from Rust by a guard (`MessageBus::scoped`) reaches the
/// hook once with the reason of that path, `Removed`, as one removed by its handle does.
#[test]
fn gb8_r4_a_managed_listener_removed_by_a_guard_is_released_as_removed() {
    tags::register().unwrap();
    with_hook(|| {
        let bus = MessageBus::new();
        let guarded = Recorder::new(&bus);
        assert_eq!(
            listen(&bus, "FfiGb8.Hit", false, None, &guarded),
            LuminaStatus::Ok
        );
        let guard = bus.scoped(DelegateHandleExt::of(guarded.id.get()));
        drop(guard);
        assert_eq!(bus.managed_len(), 0);
        assert_eq!(released(), [(guarded.id.get(), ReleaseReason::Removed)]);
        drop(bus);
        assert!(released().is_empty(), "nothing is released twice");
    });
}

/// V2: a send through the C ABI that runs Rust code is traced as a Rust send is: a span `send`
/// named by the tag, with the Rust listener's call a `subscriber` span under it, named by the
/// line that listened. (The collector records span names, fields and parents only.)
#[cfg(feature = "trace")]
#[test]
fn v2_a_c_abi_send_to_a_rust_listener_is_a_send_span_over_its_call() {
    use std::sync::{Arc, Mutex};
    use tracing::span::{Attributes, Id, Record};

    /// Each span: its name, its fields as text, its parent's index.
    type Spans = Arc<Mutex<Vec<(&'static str, String, Option<usize>)>>>;
    /// Records spans; the parent is the span entered when one is made.
    #[derive(Clone, Default)]
    struct Spanned(Spans, Arc<Mutex<Vec<usize>>>);
    struct Text<'a>(&'a mut String);
    impl tracing::field::Visit for Text<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={value:?} ", field.name()));
        }
    }
    impl tracing::Subscriber for Spanned {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, attributes: &Attributes<'_>) -> Id {
            let mut text = String::new();
            attributes.record(&mut Text(&mut text));
            let parent = self.1.lock().unwrap().last().copied();
            let mut spans = self.0.lock().unwrap();
            spans.push((attributes.metadata().name(), text, parent));
            Id::from_u64(spans.len() as u64)
        }
        fn record(&self, span: &Id, values: &Record<'_>) {
            let mut spans = self.0.lock().unwrap();
            values.record(&mut Text(&mut spans[span.into_u64() as usize - 1].1));
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, span: &Id) {
            self.1.lock().unwrap().push(span.into_u64() as usize - 1);
        }
        fn exit(&self, _: &Id) {
            self.1.lock().unwrap().pop();
        }
    }

    tags::register().unwrap();
    let bus = MessageBus::new();
    let heard = Rc::new(Cell::new(0));
    let sink = Rc::clone(&heard);
    let line = line!() + 1;
    let _rust = bus.listen(&tags::FFI_GB8_HIT, move |hit: &FfiHit, _| {
        sink.set(hit.amount)
    });
    let collector = Spanned::default();
    tracing::subscriber::with_default(collector.clone(), || {
        let status = send(
            &bus,
            "FfiGb8.Hit",
            None,
            &HIT,
            &layout_of("FfiHit"),
            size_of::<FfiHit>(),
        );
        assert_eq!(status, LuminaStatus::Ok);
    });
    assert_eq!(heard.get(), HIT.amount);
    let spans = collector.0.lock().unwrap().clone();
    let send_at = spans
        .iter()
        .position(|(name, _, _)| *name == "send")
        .unwrap_or_else(|| panic!("a send span: {spans:?}"));
    assert!(spans[send_at].1.contains("tag=FfiGb8.Hit"), "{spans:?}");
    let calls: Vec<_> = spans
        .iter()
        .filter(|(name, _, _)| *name == "subscriber")
        .collect();
    assert_eq!(calls.len(), 1, "{spans:?}");
    assert!(
        calls[0].1.contains(&format!("bus_tests.rs:{line}:")),
        "{spans:?}"
    );
    assert_eq!(calls[0].2, Some(send_at), "{spans:?}");
}
