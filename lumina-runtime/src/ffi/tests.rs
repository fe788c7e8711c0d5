//! The C ABI's unit tests: bind, unbind and broadcast through the functions a host calls.

use super::*;
use crate::script_delegate::ScriptDelegate;
use std::cell::Cell;

extern "C" fn count_thunk(context: *mut c_void, _payload: *const c_void) {
    // SAFETY: every test passes a pointer to a live `Cell<u32>` as the context.
    let calls = unsafe { &*context.cast::<Cell<u32>>() };
    calls.set(calls.get() + 1);
}

fn context(calls: &Cell<u32>) -> *mut c_void {
    std::ptr::from_ref(calls).cast_mut().cast()
}

/// The contract asks for out pointers "valid for one write" and a layout "valid for a
/// read", not aligned ones: a host may pass the address of a field of a packed struct.
/// Under Miri this is undefined behaviour when the library writes or reads them as aligned.
#[test]
fn r1_ffi_out_and_in_pointers_may_be_unaligned() {
    let bus = MessageBus::new();
    let mut bytes = [0xffu8; 2 * size_of::<usize>() + 1];
    let out = bytes.as_mut_ptr().wrapping_add(1).cast::<usize>();
    // SAFETY: the bus is live and on this thread; `out` is valid for one write of a
    // `usize` (inside `bytes`), though unaligned.
    let status = unsafe { lumina_bus_managed_count(&bus, out) };
    assert_eq!(status, LuminaStatus::Ok);
    // SAFETY: as above, written just now.
    assert_eq!(unsafe { out.read_unaligned() }, 0);
    let mut raw = [0u8; size_of::<LuminaPayloadInfo>() + 1];
    let layout = raw.as_mut_ptr().wrapping_add(1).cast::<LuminaPayloadInfo>();
    // SAFETY: inside `raw`; a null name is what the call must refuse.
    unsafe {
        layout.write_unaligned(LuminaPayloadInfo {
            handle: std::ptr::null(),
            name: LuminaStr::new(""),
            size: 0,
            align: 1,
            field_count: 0,
        });
    }
    let name = "R1Ffi.Unaligned";
    Tag::register(name).unwrap();
    // SAFETY: live bus; `name` readable; `layout` valid for a read, though unaligned.
    let status = unsafe {
        lumina_bus_send(
            &bus,
            name.as_ptr(),
            name.len(),
            0,
            0,
            std::ptr::null(),
            0,
            layout,
        )
    };
    assert_eq!(
        status,
        LuminaStatus::NotScriptVisible,
        "read the layout, then refused"
    );
}

#[test]
fn sd5_bind_unbind_and_is_bound_through_the_c_abi() {
    let delegate = ScriptDelegate::<()>::new();
    let calls = Cell::new(0);
    let mut id = 0;
    let mut bound = 9;
    // SAFETY: the delegate is live for the whole test; out pointers are locals.
    unsafe {
        let base = std::ptr::from_ref(delegate.base());
        assert_eq!(
            lumina_script_delegate_bind(base, Some(count_thunk), context(&calls), &mut id),
            LuminaStatus::Ok
        );
        assert_ne!(id, 0);
        assert_eq!(
            lumina_script_delegate_is_bound(base, &mut bound),
            LuminaStatus::Ok
        );
        assert_eq!(bound, 1);
        delegate.broadcast(&());
        assert_eq!(calls.get(), 1);
        assert_eq!(lumina_script_delegate_unbind(base, id), LuminaStatus::Ok);
        assert_eq!(
            lumina_script_delegate_unbind(base, id),
            LuminaStatus::UnknownId,
            "a stale id is an error result"
        );
        assert_eq!(
            lumina_script_delegate_is_bound(base, &mut bound),
            LuminaStatus::Ok
        );
        assert_eq!(bound, 0);
    }
}

#[test]
fn sd5_null_pointers_and_null_thunks_are_error_results() {
    let delegate = ScriptDelegate::<()>::new();
    let mut id = 7;
    let mut count = 0;
    // SAFETY: null pointers are the point of the test; other pointers are live locals.
    unsafe {
        let base = std::ptr::from_ref(delegate.base());
        let null = std::ptr::null();
        assert_eq!(
            lumina_script_delegate_bind(null, Some(count_thunk), std::ptr::null_mut(), &mut id),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_script_delegate_bind(base, None, std::ptr::null_mut(), &mut id),
            LuminaStatus::NullThunk
        );
        assert_eq!(id, 7, "nothing is written on error");
        assert_eq!(
            lumina_script_delegate_bind(
                base,
                Some(count_thunk),
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_script_delegate_unbind(null, 1),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_script_delegate_is_bound(base, std::ptr::null_mut()),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_script_delegate_managed_count(null, &mut count),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_script_delegate_unbind(base, 0),
            LuminaStatus::UnknownId
        );
    }
    assert!(!delegate.is_bound());
}

#[test]
fn sd2_sd5_bind_from_another_thread_is_refused() {
    let delegate = ScriptDelegate::<()>::new();
    /// The delegate's address, carried to another thread the way a host would.
    struct Foreign(*const ScriptDelegateBase);
    // SAFETY: the other thread only passes the pointer to the C ABI, which must refuse it
    // before touching anything but the immutable thread id; that is what this test checks.
    unsafe impl Send for Foreign {}
    let foreign = Foreign(std::ptr::from_ref(delegate.base()));
    let status = std::thread::spawn(move || {
        let foreign = foreign;
        let mut id = 0;
        // SAFETY: the delegate outlives the thread (joined below); the call only reads its
        // immutable thread id before refusing.
        let status = unsafe {
            lumina_script_delegate_bind(foreign.0, Some(count_thunk), std::ptr::null_mut(), &mut id)
        };
        (status, id)
    })
    .join()
    .unwrap();
    assert_eq!(status, (LuminaStatus::NotGameThread, 0));
    assert!(!delegate.is_bound());
}

#[test]
fn sd5_a_panic_becomes_an_error_result_not_an_unwind() {
    let status = guard("test", || panic!("boom"));
    assert_eq!(status, LuminaStatus::Panicked);
}

static BIND_IN_HOOK: std::sync::Mutex<Vec<LuminaStatus>> = std::sync::Mutex::new(Vec::new());

/// The delegate whose release `binding_hook` tries to bind to: the hook is process-wide, so
/// releases of other tests running meanwhile (a bus's managed listeners, a generation's unload,
/// with a null delegate, or another delegate's drop) reach it too and are passed over.
static BIND_TARGET: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Taken by every test that installs the (process-wide) release hook.
pub(crate) static HOOK_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

extern "C" fn binding_hook(
    delegate: *const ScriptDelegateBase,
    _bindings: *const crate::script_delegate::ManagedBinding,
    _count: usize,
    _reason: crate::script_delegate::ReleaseReason,
) {
    if delegate.addr() != BIND_TARGET.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let mut id = 0;
    // SAFETY: the hook gets the delegate being dropped, still valid during the call.
    let status = unsafe {
        lumina_script_delegate_bind(delegate, Some(count_thunk), std::ptr::null_mut(), &mut id)
    };
    BIND_IN_HOOK.lock().unwrap().push(status);
}

#[test]
fn sd4_sd5_a_destroyed_hook_cannot_bind_to_the_dying_delegate() {
    // Boxed: dropped where it is, at the address the hook is told to look for.
    let delegate = Box::new(ScriptDelegate::<()>::new());
    let calls = Cell::new(0);
    let _ = delegate.bind_managed(Some(count_thunk), context(&calls));
    let _lock = HOOK_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    BIND_TARGET.store(
        std::ptr::from_ref(delegate.base()).addr(),
        std::sync::atomic::Ordering::SeqCst,
    );
    let previous = set_destroyed_hook(Some(binding_hook));
    drop(delegate);
    set_destroyed_hook(previous);
    assert_eq!(*BIND_IN_HOOK.lock().unwrap(), [LuminaStatus::Destroyed]);
}

#[lumina_macros::script_delegate]
struct Probe {
    a: u8,
    b: f64,
}

#[derive(lumina_macros::ScriptComponent, Default)]
struct Prober {
    _hp: u16,
    #[property(editable, category = "Events")]
    on_probe: ScriptDelegate<Probe>,
}

fn text(s: LuminaStr) -> &'static str {
    // SAFETY: reflection strings point at `'static str` data of `s.len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    std::str::from_utf8(bytes).unwrap()
}

#[test]
fn sd6_sd5_reflection_through_the_c_abi() {
    let mut component = std::mem::MaybeUninit::<LuminaComponentInfo>::uninit();
    let mut property = std::mem::MaybeUninit::<LuminaPropertyInfo>::uninit();
    let mut field = std::mem::MaybeUninit::<LuminaFieldInfo>::uninit();
    // SAFETY: names are live byte strings; out pointers are locals, read only after Ok.
    unsafe {
        let name = b"Prober";
        assert_eq!(
            lumina_reflect_find_component(name.as_ptr(), name.len(), component.as_mut_ptr()),
            LuminaStatus::Ok
        );
        let component = component.assume_init();
        assert_eq!(text(component.name), "Prober");
        assert_eq!(component.property_count, 1);
        assert_eq!(component.size, size_of::<Prober>());
        assert_eq!(
            lumina_reflect_component_property(component.handle, 0, property.as_mut_ptr()),
            LuminaStatus::Ok
        );
        let property = property.assume_init();
        assert_eq!(text(property.name), "on_probe");
        assert_eq!(text(property.category), "Events");
        assert_eq!(property.flags, 1);
        assert_eq!(property.offset, std::mem::offset_of!(Prober, on_probe));
        assert_eq!(text(property.payload_name), "Probe");
        assert_eq!(property.payload_size, 16);
        assert_eq!(
            lumina_reflect_payload_field(property.payload, 1, field.as_mut_ptr()),
            LuminaStatus::Ok
        );
        let field = field.assume_init();
        assert_eq!(text(field.name), "b");
        assert_eq!(field.offset, 8);
        assert_eq!(field.type_code, crate::reflect::FieldType::F64.code());
        assert_eq!(
            lumina_reflect_payload_field(property.payload, 2, &mut { field }),
            LuminaStatus::OutOfRange
        );
        let mut by_name = property;
        let (c, p) = (b"Prober", b"on_probe");
        assert_eq!(
            lumina_reflect_find_property(c.as_ptr(), c.len(), p.as_ptr(), p.len(), &mut by_name),
            LuminaStatus::Ok
        );
        assert_eq!(by_name.offset, property.offset);
    }
}

#[test]
fn sd5_unknown_names_forged_handles_and_bad_utf8_are_error_results() {
    let mut payload = std::mem::MaybeUninit::<LuminaPayloadInfo>::uninit();
    let mut field = std::mem::MaybeUninit::<LuminaFieldInfo>::uninit();
    let mut property = std::mem::MaybeUninit::<LuminaPropertyInfo>::uninit();
    let forged: *const c_void = std::ptr::without_provenance(0x1000);
    // SAFETY: names are live byte strings; out pointers are locals never read on error.
    unsafe {
        let missing = b"NoSuchPayload";
        assert_eq!(
            lumina_reflect_find_payload(missing.as_ptr(), missing.len(), payload.as_mut_ptr()),
            LuminaStatus::NotFound
        );
        let invalid = [0xff_u8, 0xfe];
        assert_eq!(
            lumina_reflect_find_payload(invalid.as_ptr(), invalid.len(), payload.as_mut_ptr()),
            LuminaStatus::InvalidUtf8
        );
        assert_eq!(
            lumina_reflect_find_payload(std::ptr::null(), 3, payload.as_mut_ptr()),
            LuminaStatus::NullPointer
        );
        assert_eq!(
            lumina_reflect_payload_field(forged, 0, field.as_mut_ptr()),
            LuminaStatus::NotFound,
            "a handle the registry never issued is never dereferenced"
        );
        assert_eq!(
            lumina_reflect_component_property(forged, 0, property.as_mut_ptr()),
            LuminaStatus::NotFound
        );
        let void = b"void";
        assert_eq!(
            lumina_reflect_find_payload(void.as_ptr(), void.len(), payload.as_mut_ptr()),
            LuminaStatus::Ok
        );
        assert_eq!(payload.assume_init().size, 0);
    }
}
