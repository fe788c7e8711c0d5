//! The C ABI a managed host calls (rule SD5): bind, unbind and query script delegates, install the
//! destroyed hook, read reflection data, and listen and send on a message bus by tag name (GB8,
//! the `lumina_bus_*` functions). Declared for C in `lumina-runtime/include/lumina.h`
//! (kept current by the test `tests/c_header.rs`).
//!
//! Every function returns a [`LuminaStatus`] and writes its result through an out pointer. No call
//! unwinds into the host: a panic is caught, logged through `tracing`, and returned as
//! [`LuminaStatus::Panicked`]. Null pointers, ids that are stale or belong to another delegate, and
//! reflection handles that the registry never issued give an error status, not undefined
//! behaviour. Every `unsafe` function of the C ABI is here (the bus's byte copy and its typed view of
//! a payload are in `bus`).
//!
//! What the host must guarantee (the functions are `unsafe` for it): a non-null delegate pointer
//! points at a live `ScriptDelegate` (see [`crate::script_delegate`] on stable addresses: the
//! destroyed hook tells the host when one goes away), and out pointers are valid for one write
//! (they need not be aligned: the library reads and writes every host pointer unaligned).
//! Calls may come from any thread: every call that touches a delegate first checks that it runs on
//! the delegate's thread and returns [`LuminaStatus::NotGameThread`] otherwise, before reading any
//! of its mutable state.
//!
//! (The exported symbols are not `no_mangle` in this crate's own unit-test build: that build also
//! links the normal build of this crate, through the facade dev-dependency, and the linker would
//! see every symbol twice.)

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::bus::{MessageBus, ScriptBusError, ScriptLayout, Tag};
use crate::reflect::{self, ComponentInfo, PayloadInfo, PropertyInfo};
use crate::script_delegate::{
    BindError, DestroyedHook, ManagedThunk, ScriptDelegateBase, set_destroyed_hook,
};

/// The result of every C ABI call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LuminaStatus {
    /// Success; the out pointer was written.
    Ok = 0,
    /// A required pointer argument was null.
    NullPointer = 1,
    /// The call came from another thread than the delegate's (the game thread).
    NotGameThread = 2,
    /// `lumina_script_delegate_bind` got a null thunk.
    NullThunk = 3,
    /// The binding id is 0, already unbound, or belongs to another delegate.
    UnknownId = 4,
    /// No reflected type or property has that name, or the handle was not issued by the registry.
    NotFound = 5,
    /// An index past the end of a list.
    OutOfRange = 6,
    /// A name was not valid UTF-8.
    InvalidUtf8 = 7,
    /// lumina panicked; the panic was caught and logged, and did not reach the host.
    Panicked = 8,
    /// The delegate is being dropped (the destroyed hook tried to bind to it).
    Destroyed = 9,
    /// No gameplay tag of that name is registered, or the name is not a tag name (GB1, GB8).
    UnknownTag = 10,
    /// The gameplay tag was not declared `#[script]`: scripts cannot send it or hear it exactly.
    NotScriptVisible = 11,
    /// The payload type the sender named is not the one declared with the tag (GB2, GB8).
    WrongPayload = 12,
    /// The sender's payload layout (size, alignment, field count) or byte count differs from
    /// the declared payload type's: the managed mirror is out of date (SD6, GB8).
    WrongLayout = 13,
    /// Not returned any more: scripts send on retained tags like Rust does (GB6, GB8). Kept so
    /// that the numbers of the statuses stay what hosts compiled against.
    Retained = 14,
}

/// A borrowed UTF-8 string that lives as long as the program (reflection names).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LuminaStr {
    /// First byte (not NUL-terminated).
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl LuminaStr {
    fn new(text: &'static str) -> Self {
        LuminaStr {
            ptr: text.as_ptr(),
            len: text.len(),
        }
    }
}

/// A reflected payload, as [`lumina_reflect_find_payload`] reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LuminaPayloadInfo {
    /// Opaque handle, for [`lumina_reflect_payload_field`].
    pub handle: *const c_void,
    /// The payload's name.
    pub name: LuminaStr,
    /// Size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
    /// Number of fields.
    pub field_count: usize,
}

/// One field of a reflected payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LuminaFieldInfo {
    /// The field's name.
    pub name: LuminaStr,
    /// `LUMINA_FIELD_*` type code (see `FieldType::code`).
    pub type_code: u32,
    /// The Rust type's name, or the nested payload's name for `LUMINA_FIELD_STRUCT`.
    pub type_name: LuminaStr,
    /// Byte offset in the payload.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A reflected component, as [`lumina_reflect_find_component`] reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LuminaComponentInfo {
    /// Opaque handle, for [`lumina_reflect_component_property`].
    pub handle: *const c_void,
    /// The component's name.
    pub name: LuminaStr,
    /// Size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
    /// Number of delegate properties.
    pub property_count: usize,
}

/// A reflected delegate property of a component.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LuminaPropertyInfo {
    /// The property's name (the Rust field name).
    pub name: LuminaStr,
    /// Its category.
    pub category: LuminaStr,
    /// `LUMINA_PROPERTY_EDITABLE` and future flags.
    pub flags: u32,
    /// Byte offset of the delegate (and so of its base) in the component.
    pub offset: usize,
    /// Opaque handle of the payload, for [`lumina_reflect_payload_field`].
    pub payload: *const c_void,
    /// The payload's name (`void` for none).
    pub payload_name: LuminaStr,
    /// The payload's size in bytes (0 for void).
    pub payload_size: usize,
}

/// Runs `body`, turning a panic into [`LuminaStatus::Panicked`] and a log line (SD5).
fn guard(function: &'static str, body: impl FnOnce() -> LuminaStatus) -> LuminaStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("(non-string panic)");
            tracing::error!(
                "lumina: {function} panicked; returning an error to the host: {message}"
            );
            // A user value whose `Drop` may panic again: that must not unwind into the host
            // (SD5, R2).
            crate::drops::drop_payload(panic);
            LuminaStatus::Panicked
        }
    }
}

/// Writes `value` through `out`, or reports a null out pointer.
///
/// Written unaligned: the contract asks for a pointer valid for one write, not an aligned one
/// (a host may pass a field of a packed struct).
///
/// # Safety
/// A non-null `out` must be valid for one write of `T`.
unsafe fn write_out<T>(out: *mut T, value: T) -> LuminaStatus {
    if out.is_null() {
        return LuminaStatus::NullPointer;
    }
    // SAFETY: `out` is non-null and the caller guarantees it is valid for a write of `T`;
    // `write_unaligned` needs no alignment.
    unsafe { out.write_unaligned(value) };
    LuminaStatus::Ok
}

/// The delegate behind `delegate`, if it is non-null and called on its own thread.
///
/// # Safety
/// A non-null `delegate` must point at a live `ScriptDelegateBase` (any `ScriptDelegate<P>`).
unsafe fn delegate_on_its_thread<'a>(
    delegate: *const ScriptDelegateBase,
) -> Result<&'a ScriptDelegateBase, LuminaStatus> {
    if delegate.is_null() {
        return Err(LuminaStatus::NullPointer);
    }
    // SAFETY: non-null and, by the caller's contract, pointing at a live delegate. Taking a
    // shared reference from another thread is sound here because the only thing read before the
    // thread check is the delegate's thread id, which is never written after construction.
    let delegate = unsafe { &*delegate };
    if delegate.is_owner_thread() {
        Ok(delegate)
    } else {
        tracing::error!(
            "lumina: a script delegate was called from a thread other than its game thread; \
             marshal the call to the game thread"
        );
        Err(LuminaStatus::NotGameThread)
    }
}

/// A name passed by the host as (pointer, length).
///
/// # Safety
/// A non-null `ptr` must be valid for reads of `len` bytes.
unsafe fn name_arg<'a>(ptr: *const u8, len: usize) -> Result<&'a str, LuminaStatus> {
    if ptr.is_null() {
        return Err(LuminaStatus::NullPointer);
    }
    // SAFETY: non-null, and the caller guarantees `len` readable bytes that outlive this call.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    std::str::from_utf8(bytes).map_err(|_| LuminaStatus::InvalidUtf8)
}

/// Binds a managed listener `(thunk, context)` to `delegate`; writes its id (never 0) to `out_id`
/// (SD2). `NullThunk` for a null thunk, `NotGameThread` off the delegate's thread.
///
/// # Safety
/// `delegate` is null or points at a live script delegate; `out_id` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_delegate_bind(
    delegate: *const ScriptDelegateBase,
    thunk: Option<ManagedThunk>,
    context: *mut c_void,
    out_id: *mut u64,
) -> LuminaStatus {
    guard("lumina_script_delegate_bind", || {
        if out_id.is_null() {
            return LuminaStatus::NullPointer;
        }
        // SAFETY: forwarded caller contract.
        let delegate = match unsafe { delegate_on_its_thread(delegate) } {
            Ok(delegate) => delegate,
            Err(status) => return status,
        };
        match delegate.try_bind_managed(thunk, context) {
            // SAFETY: `out_id` is non-null and valid for a write (caller contract).
            Ok(id) => unsafe { write_out(out_id, id) },
            Err(BindError::NullThunk) => LuminaStatus::NullThunk,
            Err(BindError::NotGameThread) => LuminaStatus::NotGameThread,
            Err(BindError::Destroyed) => LuminaStatus::Destroyed,
        }
    })
}

/// Removes the managed binding `id` from `delegate` (SD2). Safe during a broadcast, also from
/// the binding's own thunk. `UnknownId` for 0, a stale id, or an id of another delegate.
///
/// # Safety
/// `delegate` is null or points at a live script delegate.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_delegate_unbind(
    delegate: *const ScriptDelegateBase,
    id: u64,
) -> LuminaStatus {
    guard("lumina_script_delegate_unbind", || {
        // SAFETY: forwarded caller contract.
        match unsafe { delegate_on_its_thread(delegate) } {
            Ok(delegate) if delegate.unbind_managed(id) => LuminaStatus::Ok,
            Ok(_) => LuminaStatus::UnknownId,
            Err(status) => status,
        }
    })
}

/// Writes 1 to `out_bound` if either side of `delegate` has a live listener, else 0 (SD4).
///
/// # Safety
/// `delegate` is null or points at a live script delegate; `out_bound` is null or valid for a
/// write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_delegate_is_bound(
    delegate: *const ScriptDelegateBase,
    out_bound: *mut u8,
) -> LuminaStatus {
    guard("lumina_script_delegate_is_bound", || {
        // SAFETY: forwarded caller contract.
        match unsafe { delegate_on_its_thread(delegate) } {
            // SAFETY: forwarded caller contract.
            Ok(delegate) => unsafe { write_out(out_bound, u8::from(delegate.is_bound())) },
            Err(status) => status,
        }
    })
}

/// Writes how many managed bindings `delegate` holds to `out_count`.
///
/// # Safety
/// `delegate` is null or points at a live script delegate; `out_count` is null or valid for a
/// write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_delegate_managed_count(
    delegate: *const ScriptDelegateBase,
    out_count: *mut usize,
) -> LuminaStatus {
    guard("lumina_script_delegate_managed_count", || {
        // SAFETY: forwarded caller contract.
        match unsafe { delegate_on_its_thread(delegate) } {
            // SAFETY: forwarded caller contract.
            Ok(delegate) => unsafe { write_out(out_count, delegate.managed_len()) },
            Err(status) => status,
        }
    })
}

/// Installs the host's destroyed hook (null removes it); see
/// [`DestroyedHook`] for what it receives (SD4).
#[cfg_attr(not(test), unsafe(no_mangle))]
pub extern "C" fn lumina_set_destroyed_hook(hook: Option<DestroyedHook>) -> LuminaStatus {
    guard("lumina_set_destroyed_hook", || {
        set_destroyed_hook(hook);
        LuminaStatus::Ok
    })
}

/// Starts a new script generation on the calling (game) thread and writes its id (never 0) to
/// `out_generation`: managed bindings made on this thread from now on belong to it (SD8).
///
/// # Safety
/// `out_generation` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_generation_begin(out_generation: *mut u64) -> LuminaStatus {
    guard("lumina_script_generation_begin", || {
        if out_generation.is_null() {
            return LuminaStatus::NullPointer;
        }
        // SAFETY: non-null and valid for a write (caller contract).
        unsafe { write_out(out_generation, crate::script_generation::begin()) }
    })
}

/// The host unloads script generation `generation` (call it before unloading the generation's
/// code): every managed binding made in it that is still bound, in every script delegate of this
/// thread, is removed and handed to the destroyed hook once, with reason
/// `GenerationUnloaded`; writes how many to `out_released` (SD8). `UnknownId` for a generation not
/// begun on this thread, or already unloaded.
///
/// # Safety
/// `out_released` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_script_generation_unload(
    generation: u64,
    out_released: *mut usize,
) -> LuminaStatus {
    guard("lumina_script_generation_unload", || {
        if out_released.is_null() {
            return LuminaStatus::NullPointer;
        }
        match crate::script_generation::unload(generation) {
            // SAFETY: non-null and valid for a write (caller contract).
            Some(released) => unsafe { write_out(out_released, released) },
            None => LuminaStatus::UnknownId,
        }
    })
}

// ---- the message bus from scripts (GB8)

/// The bus behind `bus`, if it is non-null and called on its own thread.
///
/// # Safety
/// A non-null `bus` must point at a live `MessageBus` (of `u64` entities).
unsafe fn bus_on_its_thread<'a>(bus: *const MessageBus) -> Result<&'a MessageBus, LuminaStatus> {
    if bus.is_null() {
        return Err(LuminaStatus::NullPointer);
    }
    // SAFETY: non-null and, by the caller's contract, pointing at a live bus. As for a delegate,
    // the only thing read before the thread check is the bus's thread id, never written after
    // construction.
    let bus = unsafe { &*bus };
    if bus.is_owner_thread() {
        Ok(bus)
    } else {
        tracing::error!(
            "lumina: a message bus was called from a thread other than its game thread; \
             marshal the call to the game thread"
        );
        Err(LuminaStatus::NotGameThread)
    }
}

/// The bus behind `bus` (on its thread) and the registered tag named by `(name, len)`.
///
/// # Safety
/// As [`bus_on_its_thread`] and [`tag_arg`].
unsafe fn bus_and_tag<'a>(
    function: &str,
    bus: *const MessageBus,
    name: *const u8,
    len: usize,
) -> Result<(&'a MessageBus, Tag), LuminaStatus> {
    // SAFETY: forwarded caller contract.
    let bus = unsafe { bus_on_its_thread(bus) }?;
    // SAFETY: forwarded caller contract.
    let tag = unsafe { tag_arg(function, name, len) }?;
    Ok((bus, tag))
}

/// The registered tag named by `(name, len)`; an unknown or malformed name is `UnknownTag`,
/// with the reason logged.
///
/// # Safety
/// A non-null `name` must be valid for reads of `len` bytes.
unsafe fn tag_arg(function: &str, name: *const u8, len: usize) -> Result<Tag, LuminaStatus> {
    // SAFETY: forwarded caller contract.
    let name = unsafe { name_arg(name, len) }?;
    Tag::find(name).map_err(|error| {
        tracing::error!("lumina: {function}: {error}");
        LuminaStatus::UnknownTag
    })
}

/// The status of a refused bus call, with its reason logged.
fn bus_error(function: &str, error: &ScriptBusError) -> LuminaStatus {
    tracing::error!("lumina: {function}: {error}");
    match error {
        ScriptBusError::NotGameThread => LuminaStatus::NotGameThread,
        ScriptBusError::NullThunk => LuminaStatus::NullThunk,
        ScriptBusError::NullPayload => LuminaStatus::NullPointer,
        ScriptBusError::NotScriptVisible(_) => LuminaStatus::NotScriptVisible,
        ScriptBusError::WrongPayload { .. } => LuminaStatus::WrongPayload,
        ScriptBusError::WrongLayout { .. } => LuminaStatus::WrongLayout,
    }
}

/// Looks up a gameplay tag by name (GB1) and writes its id to `out_tag`. `UnknownTag` (and a
/// log line saying why) for a name no one registered or that is not a tag name. A declared tag is
/// registered once its set's generated `register()` ran (the engine calls it at start-up, a game
/// module when it loads) or Rust used its key.
///
/// # Safety
/// `name` is null or valid for reads of `name_len` bytes; `out_tag` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_bus_find_tag(
    name: *const u8,
    name_len: usize,
    out_tag: *mut u32,
) -> LuminaStatus {
    guard("lumina_bus_find_tag", || {
        if out_tag.is_null() {
            return LuminaStatus::NullPointer;
        }
        // SAFETY: forwarded caller contract.
        match unsafe { tag_arg("lumina_bus_find_tag", name, name_len) } {
            // SAFETY: forwarded caller contract.
            Ok(tag) => unsafe { write_out(out_tag, tag.id()) },
            Err(status) => status,
        }
    })
}

/// Adds a managed listener `(thunk, context)` to the tag named `(name, name_len)` of `bus`
/// (GB8): exactly, or with `partial` = 1 every descendant too; with `has_entity` = 1 only
/// messages addressed to (or bubbling through) `entity`. Writes its id (never 0) to `out_id`.
/// The thunk gets a pointer to a `LuminaBusMessage`, valid during the call only. The listener
/// belongs to the current script generation; it reaches the release hook exactly once unless
/// removed with `lumina_bus_remove`.
///
/// # Safety
/// `bus` is null or points at a live `MessageBus`; `name` is null or valid for reads of
/// `name_len` bytes; `out_id` is null or valid for a write.
#[allow(clippy::too_many_arguments)] // a C signature: flat scalars are what every host can pass
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_bus_listen(
    bus: *const MessageBus,
    name: *const u8,
    name_len: usize,
    partial: u8,
    has_entity: u8,
    entity: u64,
    thunk: Option<ManagedThunk>,
    context: *mut c_void,
    out_id: *mut u64,
) -> LuminaStatus {
    const FUNCTION: &str = "lumina_bus_listen";
    guard(FUNCTION, || {
        if out_id.is_null() {
            return LuminaStatus::NullPointer;
        }
        // SAFETY: forwarded caller contract.
        let (bus, tag) = match unsafe { bus_and_tag(FUNCTION, bus, name, name_len) } {
            Ok(found) => found,
            Err(status) => return status,
        };
        let entity = (has_entity != 0).then_some(entity);
        match bus.listen_managed(tag, partial != 0, entity, thunk, context) {
            // SAFETY: `out_id` is non-null and valid for a write (caller contract).
            Ok(id) => unsafe { write_out(out_id, id) },
            Err(error) => bus_error(FUNCTION, &error),
        }
    })
}

/// Removes the managed listener `id` from `bus` (GB8); the host releases its own handle (no
/// hook call). Safe during a send, also from the listener's own thunk. `UnknownId` for 0, a
/// stale id, or a Rust listener's handle.
///
/// # Safety
/// `bus` is null or points at a live `MessageBus`.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_bus_remove(bus: *const MessageBus, id: u64) -> LuminaStatus {
    guard("lumina_bus_remove", || {
        // SAFETY: forwarded caller contract.
        match unsafe { bus_on_its_thread(bus) } {
            Ok(bus) if bus.remove_managed(id) => LuminaStatus::Ok,
            Ok(_) => LuminaStatus::UnknownId,
            Err(status) => status,
        }
    })
}

/// Sends a message on the tag named `(name, name_len)` of `bus` now (GB5, GB8), addressed to
/// `entity` when `has_entity` is 1. `payload` points at `payload_len` bytes laid out as `layout`
/// says (what `lumina_reflect_find_payload` reports for the managed mirror's type); they are
/// checked against the tag's declared payload type before a byte is read: `NotScriptVisible`,
/// `WrongPayload` (another type), `WrongLayout` (size, alignment, field count or `payload_len`
/// differ), each with a log line saying what differs. Every matching listener, Rust or managed,
/// hears it before this returns; on a retained tag the payload is kept as its last message
/// (GB6).
///
/// # Safety
/// `bus` is null or points at a live `MessageBus`; `name` is null or valid for reads of
/// `name_len` bytes; `layout` is null or valid for a read, its name valid for reads of its
/// length; `payload` is null or valid for reads of `payload_len` bytes, every byte of a field
/// initialized.
#[allow(clippy::too_many_arguments)] // a C signature: flat scalars are what every host can pass
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_bus_send(
    bus: *const MessageBus,
    name: *const u8,
    name_len: usize,
    has_entity: u8,
    entity: u64,
    payload: *const c_void,
    payload_len: usize,
    layout: *const LuminaPayloadInfo,
) -> LuminaStatus {
    const FUNCTION: &str = "lumina_bus_send";
    guard(FUNCTION, || {
        if layout.is_null() {
            return LuminaStatus::NullPointer;
        }
        // SAFETY: forwarded caller contract.
        let (bus, tag) = match unsafe { bus_and_tag(FUNCTION, bus, name, name_len) } {
            Ok(found) => found,
            Err(status) => return status,
        };
        // SAFETY: non-null and valid for a read (caller contract), not necessarily aligned
        // (read unaligned, as every host pointer); a plain `Copy` struct.
        let claimed = unsafe { layout.read_unaligned() };
        // SAFETY: forwarded caller contract on the layout's name.
        let claimed_name = match unsafe { name_arg(claimed.name.ptr, claimed.name.len) } {
            Ok(name) => name,
            Err(status) => return status,
        };
        let layout = ScriptLayout {
            name: claimed_name,
            size: claimed.size,
            align: claimed.align,
            field_count: claimed.field_count,
        };
        let entity = (has_entity != 0).then_some(entity);
        // SAFETY: `payload` is null or valid for reads of `payload_len` bytes with initialized
        // fields (forwarded caller contract); `send_script` reads none before checking the
        // layout.
        match unsafe { bus.send_script(tag, entity, layout, payload, payload_len) } {
            Ok(()) => LuminaStatus::Ok,
            Err(error) => bus_error(FUNCTION, &error),
        }
    })
}

/// Writes how many managed listeners `bus` has to `out_count` (GB8).
///
/// # Safety
/// `bus` is null or points at a live `MessageBus`; `out_count` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_bus_managed_count(
    bus: *const MessageBus,
    out_count: *mut usize,
) -> LuminaStatus {
    guard("lumina_bus_managed_count", || {
        // SAFETY: forwarded caller contract.
        match unsafe { bus_on_its_thread(bus) } {
            // SAFETY: forwarded caller contract.
            Ok(bus) => unsafe { write_out(out_count, bus.managed_len()) },
            Err(status) => status,
        }
    })
}

fn payload_info(payload: &'static PayloadInfo) -> LuminaPayloadInfo {
    LuminaPayloadInfo {
        handle: std::ptr::from_ref(payload).cast(),
        name: LuminaStr::new(payload.name),
        size: payload.size,
        align: payload.align,
        field_count: payload.fields.len(),
    }
}

fn component_info(component: &'static ComponentInfo) -> LuminaComponentInfo {
    LuminaComponentInfo {
        handle: std::ptr::from_ref(component).cast(),
        name: LuminaStr::new(component.name),
        size: component.size,
        align: component.align,
        property_count: component.properties.len(),
    }
}

fn property_info(property: &'static PropertyInfo) -> LuminaPropertyInfo {
    LuminaPropertyInfo {
        name: LuminaStr::new(property.name),
        category: LuminaStr::new(property.category),
        flags: property.flags.0,
        offset: property.offset,
        payload: std::ptr::from_ref(property.payload).cast(),
        payload_name: LuminaStr::new(property.payload.name),
        payload_size: property.payload.size,
    }
}

/// Looks up a reflected payload by name (`void` for none).
///
/// # Safety
/// `name` is null or valid for reads of `name_len` bytes; `out` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_reflect_find_payload(
    name: *const u8,
    name_len: usize,
    out: *mut LuminaPayloadInfo,
) -> LuminaStatus {
    guard("lumina_reflect_find_payload", || {
        // SAFETY: forwarded caller contract.
        let name = match unsafe { name_arg(name, name_len) } {
            Ok(name) => name,
            Err(status) => return status,
        };
        match reflect::PayloadInfo::find(name) {
            // SAFETY: forwarded caller contract.
            Some(payload) => unsafe { write_out(out, payload_info(payload)) },
            None => LuminaStatus::NotFound,
        }
    })
}

/// Looks up a reflected component by name.
///
/// # Safety
/// `name` is null or valid for reads of `name_len` bytes; `out` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_reflect_find_component(
    name: *const u8,
    name_len: usize,
    out: *mut LuminaComponentInfo,
) -> LuminaStatus {
    guard("lumina_reflect_find_component", || {
        // SAFETY: forwarded caller contract.
        let name = match unsafe { name_arg(name, name_len) } {
            Ok(name) => name,
            Err(status) => return status,
        };
        match reflect::ComponentInfo::find(name) {
            // SAFETY: forwarded caller contract.
            Some(component) => unsafe { write_out(out, component_info(component)) },
            None => LuminaStatus::NotFound,
        }
    })
}

/// The registered payload whose handle is `handle`: handles are compared with the registry's,
/// never dereferenced, so a stale or forged handle is `NotFound`.
fn payload_by_handle(handle: *const c_void) -> Option<&'static PayloadInfo> {
    reflect::PayloadInfo::all()
        .chain(reflect::ComponentInfo::all().flat_map(|c| c.properties.iter().map(|p| p.payload)))
        .find(|payload| std::ptr::from_ref(*payload).cast() == handle)
}

fn component_by_handle(handle: *const c_void) -> Option<&'static ComponentInfo> {
    reflect::ComponentInfo::all().find(|component| std::ptr::from_ref(*component).cast() == handle)
}

/// Reads field `index` of the payload `payload` (a handle from `LuminaPayloadInfo` or
/// `LuminaPropertyInfo`).
///
/// # Safety
/// `out` is null or valid for a write. `payload` may be anything: it is never dereferenced.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_reflect_payload_field(
    payload: *const c_void,
    index: usize,
    out: *mut LuminaFieldInfo,
) -> LuminaStatus {
    guard("lumina_reflect_payload_field", || {
        if payload.is_null() {
            return LuminaStatus::NullPointer;
        }
        let Some(payload) = payload_by_handle(payload) else {
            return LuminaStatus::NotFound;
        };
        let Some(field) = payload.fields.get(index) else {
            return LuminaStatus::OutOfRange;
        };
        let info = LuminaFieldInfo {
            name: LuminaStr::new(field.name),
            type_code: field.ty.code(),
            type_name: LuminaStr::new(field.ty.rust_name()),
            offset: field.offset,
            size: field.size,
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_out(out, info) }
    })
}

/// Reads property `index` of the component `component` (a handle from `LuminaComponentInfo`).
///
/// # Safety
/// `out` is null or valid for a write. `component` may be anything: it is never dereferenced.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_reflect_component_property(
    component: *const c_void,
    index: usize,
    out: *mut LuminaPropertyInfo,
) -> LuminaStatus {
    guard("lumina_reflect_component_property", || {
        if component.is_null() {
            return LuminaStatus::NullPointer;
        }
        let Some(component) = component_by_handle(component) else {
            return LuminaStatus::NotFound;
        };
        match component.properties.get(index) {
            // SAFETY: forwarded caller contract.
            Some(property) => unsafe { write_out(out, property_info(property)) },
            None => LuminaStatus::OutOfRange,
        }
    })
}

/// Looks up the property `property` of the component `component` by name: what generated C#
/// bindings call to find a delegate's offset in its component.
///
/// # Safety
/// Each name pointer is null or valid for reads of its length; `out` is null or valid for a write.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn lumina_reflect_find_property(
    component: *const u8,
    component_len: usize,
    property: *const u8,
    property_len: usize,
    out: *mut LuminaPropertyInfo,
) -> LuminaStatus {
    guard("lumina_reflect_find_property", || {
        // SAFETY: forwarded caller contract.
        let names = unsafe {
            name_arg(component, component_len)
                .and_then(|component| Ok((component, name_arg(property, property_len)?)))
        };
        let (component, property) = match names {
            Ok(names) => names,
            Err(status) => return status,
        };
        match reflect::ComponentInfo::find(component).and_then(|c| c.property(property)) {
            // SAFETY: forwarded caller contract.
            Some(property) => unsafe { write_out(out, property_info(property)) },
            None => LuminaStatus::NotFound,
        }
    })
}

#[cfg(test)]
mod bus_tests;

#[cfg(test)]
pub(crate) mod tests;
