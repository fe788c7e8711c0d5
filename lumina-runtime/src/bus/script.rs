//! Managed listeners and managed senders of the message bus (rule GB8).
//!
//! A managed host (C# through the C ABI in `ffi`) listens to a tag by name with a
//! `(thunk, context)` pair, exactly or partially, optionally for one entity, and sends on a tag
//! by name with a pointer to a blittable payload and the layout it believes that payload has.
//!
//! A managed listener is the script delegates' managed binding (`Managed`), held by the bus
//! listener's callable, so it leaves by the one release path of script delegates: the path that
//! removes it marks it with its reason first, and the host's release hook gets it exactly once
//! when the last holder lets go, never while its thunk runs (R4): a running call holds the
//! callable (M4). The reasons: [`ReleaseReason::Removed`] (removed from Rust: by handle, a
//! guard, [`forget_entity`](MessageBus::forget_entity)), [`ReleaseReason::Cleared`]
//! ([`clear`](MessageBus::clear)), [`ReleaseReason::GenerationUnloaded`] (its script
//! generation, SD8), [`ReleaseReason::Destroyed`] (the bus was dropped). The host's own remove
//! ([`remove_managed`](MessageBus::remove_managed)) calls no hook: the host releases its handle
//! itself, as for `unbind_managed`.
//!
//! Which payloads cross: a tag declared `#[script]` in `gameplay_tags!`, whose payload type must
//! be a reflected `#[script_delegate]` struct (or `()`); the registry keeps its own copy of the
//! layout ([`Tag::script_payload`]). A managed send is checked against it (SD6) before a byte is
//! read.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::rc::{Rc, Weak};

use super::{Callable, EntityId, Message, MessageBus, Tag, unheard};
use crate::drops::{Drops, drop_user};
use crate::handle::DelegateHandle;
use crate::invocation::RemoveByHandle;
use crate::script_delegate::{
    Managed, ManagedBinding, ManagedThunk, Operation, ReleaseReason, Removal,
};
use crate::track;

/// What a managed listener's thunk receives as its payload argument: a pointer to this, valid
/// for the duration of the call only (so are the tag name and payload it points at).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BusMessage {
    /// The id of the tag the message was sent on ([`Tag::id`]).
    pub tag_id: u32,
    /// 1 when the message is addressed to `entity`, else 0.
    pub has_entity: u8,
    /// 1 when this is a retained message heard by a listener added later (GB6).
    pub replay: u8,
    /// The thunk writes 1 here to consume the message: nothing after it hears it (GB3).
    pub consume: u8,
    /// Reserved, 0.
    pub reserved: u8,
    /// The entity the message is addressed to (0 when `has_entity` is 0).
    pub entity: u64,
    /// The tag's full name, UTF-8, not NUL-terminated.
    pub tag_name: *const u8,
    /// Its length in bytes.
    pub tag_name_len: usize,
    /// The payload, laid out as the tag's reflected payload type; null when the tag is not
    /// `#[script]` (a partial listener hearing a descendant scripts cannot see) or carries no
    /// payload.
    pub payload: *const c_void,
    /// The payload's size in bytes (0 with a null payload).
    pub payload_size: usize,
}

/// The layout a managed sender claims for its payload, checked against the tag's (SD6).
#[derive(Clone, Copy, Debug)]
pub struct ScriptLayout<'a> {
    /// The payload type's name (the reflected struct name, `void` for none).
    pub name: &'a str,
    /// Its size in bytes.
    pub size: usize,
    /// Its alignment in bytes.
    pub align: usize,
    /// How many fields it has.
    pub field_count: usize,
}

/// Why a managed listen or send was refused (GB8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptBusError {
    /// The call came from another thread than the bus's (the game thread).
    NotGameThread,
    /// The thunk was null.
    NullThunk,
    /// The payload pointer was null for a payload of non-zero size.
    NullPayload,
    /// The tag was not declared `#[script]`: scripts can neither send it nor hear it exactly.
    NotScriptVisible(Tag),
    /// The payload type named by the sender is not the one declared with the tag.
    WrongPayload {
        /// The tag.
        tag: Tag,
        /// The payload type declared with the tag.
        declared: &'static str,
        /// The one the sender named.
        used: String,
    },
    /// The sender's layout (size, alignment, field count) or byte count differs from the
    /// declared payload type's: the managed mirror is out of date.
    WrongLayout {
        /// The tag.
        tag: Tag,
        /// `(size, align, fields)` of the declared payload type.
        declared: (usize, usize, usize),
        /// `(size, align, fields)` the sender claimed.
        used: (usize, usize, usize),
        /// How many bytes the sender passed.
        len: usize,
    },
}

impl fmt::Display for ScriptBusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptBusError::NotGameThread => f.write_str(
                "the message bus was called off its game thread; marshal the call to the game \
                 thread first",
            ),
            ScriptBusError::NullThunk => f.write_str("the managed thunk is null"),
            ScriptBusError::NullPayload => {
                f.write_str("the payload pointer is null but the tag's payload has a size")
            }
            ScriptBusError::NotScriptVisible(tag) => write!(
                f,
                "gameplay tag `{tag}` is not visible to scripts: declare it `#[script]` in \
                 `gameplay_tags!` with a `#[script_delegate]` payload"
            ),
            ScriptBusError::WrongPayload {
                tag,
                declared,
                used,
            } => write!(f, "gameplay tag `{tag}` carries `{declared}`, not `{used}`"),
            ScriptBusError::WrongLayout {
                tag,
                declared,
                used,
                len,
            } => write!(
                f,
                "gameplay tag `{tag}`: the payload is (size {}, align {}, {} fields) in Rust, \
                 but the sender claims (size {}, align {}, {} fields) and passed {len} bytes: \
                 regenerate the bindings",
                declared.0, declared.1, declared.2, used.0, used.1, used.2
            ),
        }
    }
}

impl std::error::Error for ScriptBusError {}

/// One managed listener, as the bus remembers it (weakly: its callable owns it).
struct Entry {
    id: u64,
    managed: Weak<Managed>,
    /// The list it is in, to remove it by handle on a generation unload.
    list: Weak<dyn RemoveByHandle>,
    /// The id under which the module loader knows it, when its thunk may be a game module's
    /// code (MB4, R5: see [`ScriptListeners::track`]); 0 when no module was loaded.
    record: u64,
}

/// The managed listeners of one bus: a heap block of its own, so a script generation refers to
/// it weakly (R1: never to the bus's place, which moves).
///
/// Costs (rule N4): the entries are in id order (ids grow), so finding one is a binary search,
/// O(log n) in the managed listeners (a generation's unload, which has their ids, costs that
/// per binding); dead entries go when the table has doubled since the last
/// compaction, O(1) amortized per add.
#[derive(Default)]
pub(super) struct ScriptListeners {
    entries: RefCell<Vec<Entry>>,
    /// The length after the last compaction: the next runs once it has doubled.
    compacted: Cell<usize>,
    /// The id of the entry each module record names (rebuilt by each compaction).
    records: RefCell<HashMap<u64, u64>>,
}

/// The index of the entry `id` in `entries`, which are in id order. O(log n).
fn find(entries: &[Entry], id: u64) -> Option<usize> {
    crate::steps::search(entries.len());
    entries.binary_search_by_key(&id, |entry| entry.id).ok()
}

impl ScriptListeners {
    fn add(&self, entry: Entry) {
        let mut entries = self.entries.borrow_mut();
        debug_assert!(entries.last().is_none_or(|last| last.id < entry.id));
        entries.push(entry);
        if entries.len() > 2 * self.compacted.get() + 8 {
            crate::steps::add(entries.len());
            let mut gone = Vec::new();
            entries.retain(|entry| {
                let live = entry.managed.strong_count() > 0;
                if !live && entry.record != 0 {
                    gone.push(entry.record);
                }
                live
            });
            let live = entries.len();
            entries.shrink_to(live * 2);
            self.compacted.set(entries.len());
            let mut records = self.records.borrow_mut();
            records.clear();
            for entry in entries.iter().filter(|entry| entry.record != 0) {
                records.insert(entry.record, entry.id);
            }
            records.shrink_to_fit();
            drop((entries, records));
            if !gone.is_empty() {
                track::forget(gone.into_iter());
            }
        }
    }

    /// The entry `id`'s weak references, if it is one of these. O(log n).
    fn entry(&self, id: u64) -> Option<(Weak<Managed>, Weak<dyn RemoveByHandle>)> {
        let entries = self.entries.borrow();
        let entry = &entries[find(&entries, id)?];
        Some((entry.managed.clone(), entry.list.clone()))
    }

    /// Records the managed listener `handle` (listed already) with the module loader when its
    /// `thunk` lies in a loaded game module's library (MB4, R5). Its callable is the runtime's
    /// closure, whose vtable is no module's, so the channel's list does not record it: the
    /// record names this block instead, and the unload removes the listener through
    /// the loader's removal (`ModuleRecorded`, below), marked [`ReleaseReason::Removed`] first (R4), before the
    /// library is unmapped. Without it the next send called the thunk in the unmapped library.
    /// This block forgets its records when it is dropped (R1), and those of the listeners gone
    /// when it compacts.
    fn track(self: &Rc<Self>, handle: DelegateHandle, thunk: &ManagedThunk) {
        let code = track::code_of(thunk);
        if code.is_none() {
            return;
        }
        let record = DelegateHandle::new_unique();
        {
            let mut entries = self.entries.borrow_mut();
            let Some(index) = find(&entries, handle.id()) else {
                return;
            };
            entries[index].record = record.id();
            self.records.borrow_mut().insert(record.id(), handle.id());
        }
        track::track(track::ListAccess::of(self), record, code);
    }

    /// The list and handle of the managed listener the module loader knows as `record`.
    fn recorded(&self, record: u64) -> Option<(u64, Weak<dyn RemoveByHandle>)> {
        let id = *self.records.borrow().get(&record)?;
        self.entry(id).map(|(_, list)| (id, list))
    }

    /// Marks the live managed listener `id` with `removal` (the first mark wins); whether there
    /// was one. No user code runs.
    pub(super) fn mark(&self, id: u64, removal: Removal) -> bool {
        let Some(managed) = self.entry(id).and_then(|(managed, _)| managed.upgrade()) else {
            return false;
        };
        managed.mark(removal);
        true
    }

    /// Marks every live managed listener with `reason`.
    pub(super) fn mark_all(&self, reason: ReleaseReason) {
        for entry in self.entries.borrow().iter() {
            if let Some(managed) = entry.managed.upgrade() {
                managed.mark(released(reason));
            }
        }
    }

    /// The list the managed listener `id` is in, if it is one of these.
    fn list_of(&self, id: u64) -> Option<Rc<dyn RemoveByHandle>> {
        self.entry(id).and_then(|(_, list)| list.upgrade())
    }

    fn ids(&self) -> Vec<u64> {
        self.entries
            .borrow()
            .iter()
            .filter(|entry| entry.managed.strong_count() > 0)
            .map(|entry| entry.id)
            .collect()
    }
}

impl Drop for ScriptListeners {
    /// Forgets its module records (R1: the loader never reaches this block after it is freed).
    fn drop(&mut self) {
        if track::recording() {
            let records = self.entries.get_mut().iter().map(|entry| entry.record);
            track::forget(records.filter(|&record| record != 0));
        }
    }
}

/// The module loader's access to a managed listener whose thunk is the unloading module's code
/// (see [`ScriptListeners::track`]).
// SAFETY: `ScriptListeners`'s `Drop` forgets its records, and its compaction forgets those of the
// listeners it lets go.
unsafe impl track::ModuleRecorded for ScriptListeners {
    /// Nothing: the listener is removed here, while the loader's strong reference keeps the
    /// block alive (the removal runs user code, drops and the release hook, which may drop the
    /// bus).
    type Taken = ();

    /// Whether a list of a recorded listener is broadcasting.
    fn busy(&self) -> bool {
        let lists: Vec<Weak<dyn RemoveByHandle>> = self
            .entries
            .borrow()
            .iter()
            .filter(|entry| entry.record != 0)
            .map(|entry| entry.list.clone())
            .collect();
        lists.iter().any(|list| {
            list.upgrade()
                .is_some_and(|list| list.is_broadcasting_list())
        })
    }

    /// Marks the listener [`ReleaseReason::Removed`], then removes it from its list; whether it
    /// was listening.
    fn take_recorded(&self, record: DelegateHandle) -> (bool, ()) {
        let removed = self
            .recorded(record.id())
            .is_some_and(|(id, _)| self.remove_handle(DelegateHandle::from_id(id)));
        (removed, ())
    }
}

fn released(reason: ReleaseReason) -> Removal {
    Removal::Released {
        reason,
        delegate: std::ptr::null(),
        site: 0,
    }
}

/// What a guard made for a managed listener (`MessageBus::scoped`) acts through: a removal is
/// marked [`ReleaseReason::Removed`] first, as one by the listener's handle is (R4), and
/// reaches the host's hook when it returns.
impl RemoveByHandle for ScriptListeners {
    fn remove_handle(&self, handle: DelegateHandle) -> bool {
        let _operation = Operation::begin();
        let Some(list) = self.list_of(handle.id()) else {
            return false;
        };
        self.mark(handle.id(), released(ReleaseReason::Removed));
        list.remove_handle(handle)
    }

    fn set_blocked_handle(&self, handle: DelegateHandle, blocked: bool) -> bool {
        self.list_of(handle.id())
            .is_some_and(|list| list.set_blocked_handle(handle, blocked))
    }

    fn is_blocked_handle(&self, handle: DelegateHandle) -> bool {
        self.list_of(handle.id())
            .is_some_and(|list| list.is_blocked_handle(handle))
    }

    fn set_priority_handle(&self, handle: DelegateHandle, priority: i32) -> bool {
        self.list_of(handle.id())
            .is_some_and(|list| list.set_priority_handle(handle, priority))
    }

    fn contains_handle(&self, handle: DelegateHandle) -> bool {
        self.list_of(handle.id())
            .is_some_and(|list| list.contains_handle(handle))
    }
}

impl<E: EntityId> MessageBus<E> {
    /// The remover a guard of the managed listener `id` acts through, if `id` is one (see
    /// [`ScriptListeners`]'s `RemoveByHandle`).
    pub(super) fn managed_remover(&self, id: u64) -> Option<Weak<dyn RemoveByHandle>> {
        let scripts = self.scripts.borrow();
        let scripts = scripts.as_ref()?;
        scripts.list_of(id)?;
        let weak: Weak<dyn RemoveByHandle> = Rc::downgrade(scripts) as Weak<dyn RemoveByHandle>;
        Some(weak)
    }
}

// ---- script generation hook (SD8), see `crate::script_generation`.
impl crate::script_generation::Member for ScriptListeners {
    /// Removes the managed listeners `ids` of `generation` that are still listening and releases each
    /// once through the host's hook, with [`ReleaseReason::GenerationUnloaded`] (one removed
    /// while its tag is being walked, when that walk ends). Returns how many.
    fn release_bindings(&self, generation: u64, ids: &[u64]) -> usize {
        let _operation = Operation::begin();
        // Found by id: O(log n) per binding (rule N4).
        let chosen: Vec<(u64, Weak<dyn RemoveByHandle>)> = ids
            .iter()
            .filter_map(|&id| {
                let (managed, list) = self.entry(id)?;
                let managed = managed.upgrade()?;
                if managed.generation != generation {
                    return None;
                }
                managed.mark(released(ReleaseReason::GenerationUnloaded));
                Some((id, list))
            })
            .collect();
        // Every one is marked before the first removal: a removal drops a callable, and the
        // release that follows may call the host, which may remove or unload the others.
        chosen
            .into_iter()
            .filter(|(id, list)| {
                list.upgrade()
                    .is_some_and(|list| list.remove_handle(DelegateHandle::from_id(*id)))
            })
            .count()
    }

    fn holds(&self, id: u64) -> bool {
        self.entry(id)
            .is_some_and(|(managed, _)| managed.strong_count() > 0)
    }
}
// ---- end of script generation hook

/// Calls a managed listener with `message`: its thunk gets a [`BusMessage`] on the stack, and the
/// payload's address when the message's tag is `#[script]`. Whether the thunk consumed it.
fn call_managed(managed: &Managed, message: &Message<'_, u64>) -> bool {
    let tag = message.tag;
    let (payload, payload_size) = match tag.script_payload() {
        Some(layout) if layout.size > 0 && tag.payload_type_id() == Some(message.payload_type) => (
            message.payload.as_ptr().cast_const().cast::<c_void>(),
            layout.size,
        ),
        _ => (std::ptr::null(), 0),
    };
    let mut raw = BusMessage {
        tag_id: tag.id(),
        has_entity: u8::from(message.entity.is_some()),
        replay: u8::from(message.replayed),
        consume: 0,
        reserved: 0,
        entity: message.entity.unwrap_or(0),
        tag_name: tag.name().as_ptr(),
        tag_name_len: tag.name().len(),
        payload,
        payload_size,
    };
    // The pointer is made from `&mut raw`, so the thunk may write `consume` through it.
    (managed.thunk)(
        managed.context,
        std::ptr::from_mut(&mut raw).cast_const().cast(),
    );
    raw.consume != 0
}

/// How many 8-byte words of payload a script send copies on the stack; a larger payload is
/// copied to the heap (reflected payloads this large are rare).
const INLINE_WORDS: usize = 32;

/// Copies `size` bytes of a script's payload into `words`.
///
/// # Safety
///
/// `payload` is valid for reads of `size` bytes when `size > 0`, and `words` holds at least
/// `size` bytes (it is a buffer of the caller's, so the two do not overlap).
unsafe fn copy_payload(payload: *const c_void, words: &mut [MaybeUninit<u64>], size: usize) {
    debug_assert!(size <= words.len() * 8);
    if size > 0 {
        // SAFETY: contract.
        unsafe {
            std::ptr::copy_nonoverlapping(
                payload.cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                size,
            );
        }
    }
}

/// A retained message a script sent (GB6, GB8): its bytes, 8-aligned, and the `TypeId` of the
/// tag's declared payload type they are a value of. Kept as bytes, not as that type: the bus
/// cannot make a value of a type it knows only by `TypeId` (and the value holds no game
/// module's code, so an unload has nothing to drop early, R5). A replay presents the bytes as
/// the declared type; [`MessageBus::retained`] turns them into a typed value first.
pub(super) struct ScriptRetained {
    ty: TypeId,
    words: Box<[MaybeUninit<u64>]>,
}

impl ScriptRetained {
    /// The payload's address and type, for a message.
    pub(super) fn payload(&self) -> (NonNull<()>, TypeId) {
        (NonNull::from(&*self.words).cast::<()>(), self.ty)
    }

    /// The bytes as a `P`, when `P` is the type they were sent as.
    pub(super) fn read<P: 'static>(&self) -> Option<P> {
        if self.ty != TypeId::of::<P>() || size_of::<P>() > self.words.len() * 8 {
            return None;
        }
        // SAFETY: the bytes were checked, before they were kept, against the reflected layout
        // of the tag's declared payload type, whose `TypeId` is `ty == P`'s: `P` is a
        // `ScriptPayload` (only `#[script]` tags take a script's bytes), so every field byte is
        // initialized (the sender's contract) and any such bytes form a valid `P`; `words` is
        // 8-aligned (>= `align_of::<P>()`, checked at the send) and holds `size_of::<P>()`
        // bytes (checked above). Read, not moved out: the buffer never drops a `P`.
        Some(unsafe { self.words.as_ptr().cast::<P>().read() })
    }
}

impl<E: EntityId> MessageBus<E> {
    /// Keeps a script's payload as the retained message of `tag` (GB6): in place when the last
    /// one was a script's of the same size and nothing holds it (amortized zero allocation).
    fn retain_bytes(&self, tag: Tag, entity: Option<E>, words: &[MaybeUninit<u64>], ty: TypeId) {
        let channel = self.channel_or_new(tag);
        let mut slot = channel.retained.borrow_mut();
        if let Some((sent_to, shared)) = slot.as_mut()
            && let Some(kept) =
                Rc::get_mut(shared).and_then(|value| value.downcast_mut::<ScriptRetained>())
            && kept.words.len() == words.len()
        {
            *sent_to = entity;
            kept.ty = ty;
            kept.words.copy_from_slice(words);
            return;
        }
        let kept: Rc<dyn Any> = Rc::new(ScriptRetained {
            ty,
            words: words.into(),
        });
        let old = slot.replace((entity, kept));
        drop(slot);
        if old.is_none() {
            self.note_retained(tag);
        }
        // The bytes hold no module's code: a record of the value replaced is forgotten.
        channel.track(super::RETAINED, None);
        // The previous message is user data: dropped outside the borrow, guarded.
        Drops::drop_one(old);
    }

    /// Whether the calling thread is the one that made this bus: only it may use the bus, and
    /// the C ABI refuses calls from any other (T1).
    pub fn is_owner_thread(&self) -> bool {
        std::thread::current().id() == self.thread
    }

    /// An operation that hands the managed listeners it releases to the host's hook when it
    /// ends, when the bus has managed listeners (`None`, costing nothing, when it has none).
    pub(super) fn script_operation(&self) -> Option<Operation> {
        self.scripts.borrow().is_some().then(Operation::begin)
    }

    /// Marks the managed listener `id`, if it is one, as removed from Rust.
    pub(super) fn mark_removed(&self, id: u64) {
        if let Some(scripts) = self.scripts.borrow().as_ref() {
            scripts.mark(id, released(ReleaseReason::Removed));
        }
    }

    /// Removes every listener of every tag and entity (M6); managed listeners go to the host's
    /// release hook with [`ReleaseReason::Cleared`] (GB8), when the clear returns, or, for one
    /// whose tag is being walked (its thunk may be the one that cleared), when that walk ends
    /// (M4). Retained messages and posted messages stay.
    ///
    /// One operation (M13): every listener of every channel is removed before the first
    /// listener's `Drop` runs, so a message that `Drop` sends is heard by none of them, and a
    /// listener it adds stays (M6). The listeners are dropped in the order they were added
    /// (those of a tag being walked when its walk ends, M4). Every `Drop` runs even if one
    /// panics; the first panic resumes once the clear is complete (R3).
    pub fn clear(&self) {
        let _operation = Operation::begin();
        let scripts = self.scripts.borrow().clone();
        if let Some(scripts) = &scripts {
            scripts.mark_all(ReleaseReason::Cleared);
        }
        let channels: Vec<_> = self
            .channels
            .borrow()
            .iter()
            .flatten()
            .cloned()
            .chain(
                self.entity_channels
                    .borrow()
                    .values()
                    .flat_map(|bucket| bucket.iter().map(|(_, channel)| Rc::clone(channel))),
            )
            .collect();
        self.records.borrow_mut().clear();
        super::clear_channels(channels);
    }

    /// How many managed listeners are listening (GB8).
    pub fn managed_len(&self) -> usize {
        let scripts = self.scripts.borrow().clone();
        scripts.map_or(0, |scripts| {
            scripts
                .ids()
                .into_iter()
                .filter(|id| self.contains(DelegateHandle::from_id(*id)))
                .count()
        })
    }
}

impl MessageBus<u64> {
    /// Adds a managed listener (GB8): `thunk(context, message)` with a [`BusMessage`] for every
    /// message on `tag` (every descendant too when `partial`), for `entity` only when given.
    /// Returns its id (a handle id, never 0). It belongs to the calling thread's current script
    /// generation and goes with it (SD8); it reaches the host's release hook exactly once unless
    /// the host removes it with [`remove_managed`](Self::remove_managed).
    ///
    /// An exact listener needs a `#[script]` tag; a partial one may listen to any tag and gets a
    /// null payload for descendants that are not `#[script]`.
    #[track_caller]
    pub fn listen_managed(
        &self,
        tag: Tag,
        partial: bool,
        entity: Option<u64>,
        thunk: Option<ManagedThunk>,
        context: *mut c_void,
    ) -> Result<u64, ScriptBusError> {
        if !self.is_owner_thread() {
            return Err(ScriptBusError::NotGameThread);
        }
        let thunk = thunk.ok_or(ScriptBusError::NullThunk)?;
        if !partial && tag.script_payload().is_none() {
            return Err(ScriptBusError::NotScriptVisible(tag));
        }
        let managed = Managed::new(thunk, context, tag.name());
        let generation = managed.generation;
        let held = Rc::clone(&managed);
        // Built once its handle is known: like every listener, it hears only the messages that
        // started before it was added (M2), and an exact one only its own tag.
        let make = move |handle: DelegateHandle, _| -> Callable<u64> {
            let (id, exact_tag) = (handle.id(), (!partial).then_some(tag));
            Rc::new(move |message: &Message<'_, u64>| {
                if !super::hears(id, exact_tag, message) {
                    return;
                }
                message.heard.set(true);
                if call_managed(&held, message) {
                    message.consume();
                }
            })
        };
        let scripts = Rc::clone(
            self.scripts
                .borrow_mut()
                .get_or_insert_with(|| Rc::new(ScriptListeners::default())),
        );
        // The id is recorded before any thunk runs (a binding without one is never released):
        // the retained messages it hears at once come after.
        let (handle, callable) = self.add_quietly(tag, entity, partial, 0, make);
        managed.id.set(handle.id());
        let list = self
            .channel_of(tag, entity)
            .and_then(|channel| channel.list.weak_remover());
        if let Some(list) = list {
            scripts.add(Entry {
                id: handle.id(),
                managed: Rc::downgrade(&managed),
                list,
                record: 0,
            });
            scripts.track(handle, &thunk);
        }
        if generation != 0 {
            crate::script_generation::note_binding(
                generation,
                Rc::downgrade(&scripts),
                handle.id(),
            );
        }
        // Its thunk may remove it, clear or unload meanwhile: it is recorded, so that is released.
        let _operation = Operation::begin();
        if let Some(callable) = &callable {
            self.replay_to(tag, entity, partial, handle, callable);
        }
        // Maybe the binding's last reference (removed by its replay): guarded while the thread
        // unwinds (R2).
        drop_user(callable);
        Ok(handle.id())
    }

    /// The host removes its managed listener `id` (GB8): `false` (no change) for 0, a stale id,
    /// or a Rust listener's handle. The release hook is not called for it: the host that
    /// removes releases its own handle. Safe during a send, also from the listener's own thunk.
    /// Cost: O(log m) in the managed listeners.
    pub fn remove_managed(&self, id: u64) -> bool {
        let handle = DelegateHandle::from_id(id);
        if !self.contains(handle) {
            return false;
        }
        let scripts = self.scripts.borrow().clone();
        // Marked while listed, before the removal (no user code in between).
        scripts.is_some_and(|scripts| scripts.mark(id, Removal::Unbound)) && self.remove(handle)
    }

    /// The live managed listeners, as the release hook would receive them.
    pub fn managed_bindings(&self) -> Vec<ManagedBinding> {
        let scripts = self.scripts.borrow().clone();
        let Some(scripts) = scripts else {
            return Vec::new();
        };
        scripts
            .entries
            .borrow()
            .iter()
            .filter(|entry| self.contains(DelegateHandle::from_id(entry.id)))
            .filter_map(|entry| entry.managed.upgrade())
            .map(|managed| managed.binding())
            .collect()
    }

    /// Sends a message from a script (GB8): `payload` points at `len` bytes that a managed
    /// sender claims are laid out as `layout`. Checked against the payload type declared with
    /// `tag` (SD6) before a byte is read: the name, size, alignment, field count and `len` must
    /// match. The bytes are then copied into an aligned buffer (on the stack, so a send
    /// allocates nothing, up to 256 bytes of payload) and every matching listener, Rust or
    /// managed, hears them as the declared type, at once (GB5). On a retained tag the bytes are
    /// kept as its last message, exactly as a Rust send keeps its payload (GB6): a listener added
    /// later hears them at once, and [`retained`](MessageBus::retained) reads them as the
    /// declared type.
    ///
    /// # Safety
    ///
    /// `payload` must be null or valid for reads of `len` bytes, and every byte that lies in a
    /// field of the declared payload type must be initialized (padding may be anything). Since
    /// reflected payloads have only integer and float fields, any such bytes are a valid value.
    pub unsafe fn send_script(
        &self,
        tag: Tag,
        entity: Option<u64>,
        layout: ScriptLayout<'_>,
        payload: *const c_void,
        len: usize,
    ) -> Result<(), ScriptBusError> {
        if !self.is_owner_thread() {
            return Err(ScriptBusError::NotGameThread);
        }
        let declared = tag
            .script_payload()
            .ok_or(ScriptBusError::NotScriptVisible(tag))?;
        if layout.name != declared.name {
            return Err(ScriptBusError::WrongPayload {
                tag,
                declared: declared.name,
                used: layout.name.to_owned(),
            });
        }
        let wanted = (declared.size, declared.align, declared.fields.len());
        let used = (layout.size, layout.align, layout.field_count);
        // Reflected payloads are aligned to at most 8 (their fields are at most 8 bytes); the
        // buffer below is, too.
        if wanted != used || len != declared.size || declared.align > align_of::<u64>() {
            return Err(ScriptBusError::WrongLayout {
                tag,
                declared: wanted,
                used,
                len,
            });
        }
        if payload.is_null() && declared.size > 0 {
            return Err(ScriptBusError::NullPayload);
        }
        let Some(type_id) = tag.payload_type_id() else {
            // A `#[script]` key declares its payload type before its layout.
            return Err(ScriptBusError::NotScriptVisible(tag));
        };
        let words = declared.size.div_ceil(8).max(1);
        if words <= INLINE_WORDS {
            // The common case allocates nothing (GB9): an 8-aligned buffer on the stack.
            let mut inline = [const { MaybeUninit::<u64>::uninit() }; INLINE_WORDS];
            // SAFETY: forwarded caller contract; `declared.size <= 8 * words` bytes fit.
            unsafe { copy_payload(payload, &mut inline[..words], declared.size) };
            self.deliver_bytes(tag, entity, &inline[..words], type_id, declared.size);
        } else {
            let mut heap: Vec<MaybeUninit<u64>> = Vec::new();
            heap.resize_with(words, MaybeUninit::uninit);
            // SAFETY: as above.
            unsafe { copy_payload(payload, &mut heap, declared.size) };
            self.deliver_bytes(tag, entity, &heap, type_id, declared.size);
        }
        Ok(())
    }

    /// Delivers a payload copied from a script.
    /// Delivers a payload copied from a script; keeps a copy when the tag is retained (GB6).
    fn deliver_bytes(
        &self,
        tag: Tag,
        entity: Option<u64>,
        words: &[MaybeUninit<u64>],
        ty: TypeId,
        size: usize,
    ) {
        let payload = NonNull::from(words).cast::<()>();
        // SAFETY: `ty` is the `TypeId` of the payload type declared with `tag` (`P`), and
        // `words`, borrowed for the whole message, is aligned to 8 >= `align_of::<P>()` and holds
        // `size_of::<P>()` bytes copied from the sender after `send_script` checked that the
        // sender's layout is `P`'s reflected one (name, size, alignment, fields). `P` is a
        // reflected payload (`#[script]` requires `ScriptPayload`): only integer and float
        // fields, each initialized by the caller's contract, so the bytes are a valid `P`. `P`
        // has no `Drop` glue that could run on them: nothing drops a message's payload but its
        // owner, here `words`, a buffer of `MaybeUninit<u64>`.
        let message = unsafe { Message::with_type(tag, entity, payload, ty) };
        // Kept before delivery starts, as a Rust send's payload is (GB6): a listener added
        // during the send is replayed this message. The listeners hear `words`, the same bytes.
        if tag.is_retained() {
            self.retain_bytes(tag, entity, &words[..size.div_ceil(8)], ty);
        }
        self.dispatch(&message);
        if !message.heard.get() {
            unheard(tag);
        }
    }
}
