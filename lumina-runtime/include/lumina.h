/* lumina.h: the C ABI of lumina's script delegates (rule SD5).
 * Generated from lumina-runtime/src/{ffi,script_delegate,reflect,bus/script}.rs by tests/c_header.rs;
 * do not edit: run `LUMINA_BLESS=1 cargo test --test c_header` after changing the ABI.
 * Every function returns a LuminaStatus and never unwinds; see ffi.rs for the contracts. */
#ifndef LUMINA_H
#define LUMINA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque: any ScriptDelegate<P>, through its base at offset 0 (SD1). */
typedef struct LuminaScriptDelegate LuminaScriptDelegate;

/* Opaque: a MessageBus (of u64 entities) the engine keeps at a stable address (GB8). */
typedef struct LuminaMessageBus LuminaMessageBus;

#define LUMINA_FIELD_I8 1
#define LUMINA_FIELD_U8 2
#define LUMINA_FIELD_I16 3
#define LUMINA_FIELD_U16 4
#define LUMINA_FIELD_I32 5
#define LUMINA_FIELD_U32 6
#define LUMINA_FIELD_I64 7
#define LUMINA_FIELD_U64 8
#define LUMINA_FIELD_ISIZE 9
#define LUMINA_FIELD_USIZE 10
#define LUMINA_FIELD_F32 11
#define LUMINA_FIELD_F64 12
#define LUMINA_FIELD_STRUCT 13

/* PropertyFlags::EDITABLE */
#define LUMINA_PROPERTY_EDITABLE 1u

/* A managed listener's entry point: thunk(context, payload). payload points at the payload for the duration of the call (null for the void payload). The thunk must not unwind (a managed exception must be caught on the managed side). */
typedef void (*LuminaManagedThunk)(void *context, const void *payload);

/* One managed binding, as handed to the destroyed hook. */
typedef struct LuminaManagedBinding {
    /* The id bind_managed returned. */
    uint64_t id;
    /* The thunk it was bound with. */
    LuminaManagedThunk thunk;
    /* The context it was bound with (for a .NET host, typically a GCHandle as a pointer). */
    void *context;
} LuminaManagedBinding;

/* Why the destroyed hook is called: the bindings it receives are gone either way. */
typedef enum LuminaReleaseReason {
    /* The delegate was dropped (its component was destroyed), or the message bus the managed listener listened on (GB8). */
    LUMINA_RELEASE_REASON_DESTROYED = 0,
    /* The delegate, or the message bus, was cleared by clear() on the Rust side. */
    LUMINA_RELEASE_REASON_CLEARED = 1,
    /* The host unloaded the script generation the bindings were made in (SD8, see script_generation). The hook's delegate is null then. */
    LUMINA_RELEASE_REASON_GENERATION_UNLOADED = 2,
    /* A managed listener of the message bus was removed from Rust: by its handle, a guard, or forget_entity (GB8); or a managed binding whose thunk lies in a game module's library was removed by the module's unload (MB4). The hook's delegate is null. */
    LUMINA_RELEASE_REASON_REMOVED = 3,
} LuminaReleaseReason;

/* The host's destroyed hook (the C++ GOnScriptDelegateDestroyed), also called the release hook: hook(delegate, bindings, count, reason). */
typedef void (*LuminaDestroyedHook)(const LuminaScriptDelegate *delegate, const LuminaManagedBinding *bindings, size_t count, LuminaReleaseReason reason);

/* What a managed listener's thunk receives as its payload argument: a pointer to this, valid for the duration of the call only (so are the tag name and payload it points at). */
typedef struct LuminaBusMessage {
    /* The id of the tag the message was sent on (Tag::id). */
    uint32_t tag_id;
    /* 1 when the message is addressed to entity, else 0. */
    uint8_t has_entity;
    /* 1 when this is a retained message heard by a listener added later (GB6). */
    uint8_t replay;
    /* The thunk writes 1 here to consume the message: nothing after it hears it (GB3). */
    uint8_t consume;
    /* Reserved, 0. */
    uint8_t reserved;
    /* The entity the message is addressed to (0 when has_entity is 0). */
    uint64_t entity;
    /* The tag's full name, UTF-8, not NUL-terminated. */
    const uint8_t *tag_name;
    /* Its length in bytes. */
    size_t tag_name_len;
    /* The payload, laid out as the tag's reflected payload type; null when the tag is not #script (a partial listener hearing a descendant scripts cannot see) or carries no payload. */
    const void *payload;
    /* The payload's size in bytes (0 with a null payload). */
    size_t payload_size;
} LuminaBusMessage;

/* The result of every C ABI call. */
typedef enum LuminaStatus {
    /* Success; the out pointer was written. */
    LUMINA_STATUS_OK = 0,
    /* A required pointer argument was null. */
    LUMINA_STATUS_NULL_POINTER = 1,
    /* The call came from another thread than the delegate's (the game thread). */
    LUMINA_STATUS_NOT_GAME_THREAD = 2,
    /* lumina_script_delegate_bind got a null thunk. */
    LUMINA_STATUS_NULL_THUNK = 3,
    /* The binding id is 0, already unbound, or belongs to another delegate. */
    LUMINA_STATUS_UNKNOWN_ID = 4,
    /* No reflected type or property has that name, or the handle was not issued by the registry. */
    LUMINA_STATUS_NOT_FOUND = 5,
    /* An index past the end of a list. */
    LUMINA_STATUS_OUT_OF_RANGE = 6,
    /* A name was not valid UTF-8. */
    LUMINA_STATUS_INVALID_UTF8 = 7,
    /* lumina panicked; the panic was caught and logged, and did not reach the host. */
    LUMINA_STATUS_PANICKED = 8,
    /* The delegate is being dropped (the destroyed hook tried to bind to it). */
    LUMINA_STATUS_DESTROYED = 9,
    /* No gameplay tag of that name is registered, or the name is not a tag name (GB1, GB8). */
    LUMINA_STATUS_UNKNOWN_TAG = 10,
    /* The gameplay tag was not declared #script: scripts cannot send it or hear it exactly. */
    LUMINA_STATUS_NOT_SCRIPT_VISIBLE = 11,
    /* The payload type the sender named is not the one declared with the tag (GB2, GB8). */
    LUMINA_STATUS_WRONG_PAYLOAD = 12,
    /* The sender's payload layout (size, alignment, field count) or byte count differs from the declared payload type's: the managed mirror is out of date (SD6, GB8). */
    LUMINA_STATUS_WRONG_LAYOUT = 13,
    /* Not returned any more: scripts send on retained tags like Rust does (GB6, GB8). Kept so that the numbers of the statuses stay what hosts compiled against. */
    LUMINA_STATUS_RETAINED = 14,
} LuminaStatus;

/* A borrowed UTF-8 string that lives as long as the program (reflection names). */
typedef struct LuminaStr {
    /* First byte (not NUL-terminated). */
    const uint8_t *ptr;
    /* Length in bytes. */
    size_t len;
} LuminaStr;

/* A reflected payload, as lumina_reflect_find_payload reports it. */
typedef struct LuminaPayloadInfo {
    /* Opaque handle, for lumina_reflect_payload_field. */
    const void *handle;
    /* The payload's name. */
    LuminaStr name;
    /* Size in bytes. */
    size_t size;
    /* Alignment in bytes. */
    size_t align;
    /* Number of fields. */
    size_t field_count;
} LuminaPayloadInfo;

/* One field of a reflected payload. */
typedef struct LuminaFieldInfo {
    /* The field's name. */
    LuminaStr name;
    /* LUMINA_FIELD_* type code (see FieldType::code). */
    uint32_t type_code;
    /* The Rust type's name, or the nested payload's name for LUMINA_FIELD_STRUCT. */
    LuminaStr type_name;
    /* Byte offset in the payload. */
    size_t offset;
    /* Size in bytes. */
    size_t size;
} LuminaFieldInfo;

/* A reflected component, as lumina_reflect_find_component reports it. */
typedef struct LuminaComponentInfo {
    /* Opaque handle, for lumina_reflect_component_property. */
    const void *handle;
    /* The component's name. */
    LuminaStr name;
    /* Size in bytes. */
    size_t size;
    /* Alignment in bytes. */
    size_t align;
    /* Number of delegate properties. */
    size_t property_count;
} LuminaComponentInfo;

/* A reflected delegate property of a component. */
typedef struct LuminaPropertyInfo {
    /* The property's name (the Rust field name). */
    LuminaStr name;
    /* Its category. */
    LuminaStr category;
    /* LUMINA_PROPERTY_EDITABLE and future flags. */
    uint32_t flags;
    /* Byte offset of the delegate (and so of its base) in the component. */
    size_t offset;
    /* Opaque handle of the payload, for lumina_reflect_payload_field. */
    const void *payload;
    /* The payload's name (void for none). */
    LuminaStr payload_name;
    /* The payload's size in bytes (0 for void). */
    size_t payload_size;
} LuminaPropertyInfo;

/* Binds a managed listener (thunk, context) to delegate; writes its id (never 0) to out_id (SD2). NullThunk for a null thunk, NotGameThread off the delegate's thread. */
LuminaStatus lumina_script_delegate_bind(const LuminaScriptDelegate *delegate, LuminaManagedThunk thunk, void *context, uint64_t *out_id);

/* Removes the managed binding id from delegate (SD2). Safe during a broadcast, also from the binding's own thunk. UnknownId for 0, a stale id, or an id of another delegate. */
LuminaStatus lumina_script_delegate_unbind(const LuminaScriptDelegate *delegate, uint64_t id);

/* Writes 1 to out_bound if either side of delegate has a live listener, else 0 (SD4). */
LuminaStatus lumina_script_delegate_is_bound(const LuminaScriptDelegate *delegate, uint8_t *out_bound);

/* Writes how many managed bindings delegate holds to out_count. */
LuminaStatus lumina_script_delegate_managed_count(const LuminaScriptDelegate *delegate, size_t *out_count);

/* Installs the host's destroyed hook (null removes it); see DestroyedHook for what it receives (SD4). */
LuminaStatus lumina_set_destroyed_hook(LuminaDestroyedHook hook);

/* Starts a new script generation on the calling (game) thread and writes its id (never 0) to out_generation: managed bindings made on this thread from now on belong to it (SD8). */
LuminaStatus lumina_script_generation_begin(uint64_t *out_generation);

/* The host unloads script generation generation (call it before unloading the generation's code): every managed binding made in it that is still bound, in every script delegate of this thread, is removed and handed to the destroyed hook once, with reason GenerationUnloaded; writes how many to out_released (SD8). UnknownId for a generation not begun on this thread, or already unloaded. */
LuminaStatus lumina_script_generation_unload(uint64_t generation, size_t *out_released);

/* Looks up a gameplay tag by name (GB1) and writes its id to out_tag. UnknownTag (and a log line saying why) for a name no one registered or that is not a tag name. A declared tag is registered once its set's generated register() ran (the engine calls it at start-up, a game module when it loads) or Rust used its key. */
LuminaStatus lumina_bus_find_tag(const uint8_t *name, size_t name_len, uint32_t *out_tag);

/* Adds a managed listener (thunk, context) to the tag named (name, name_len) of bus (GB8): exactly, or with partial = 1 every descendant too; with has_entity = 1 only messages addressed to (or bubbling through) entity. Writes its id (never 0) to out_id. The thunk gets a pointer to a LuminaBusMessage, valid during the call only. The listener belongs to the current script generation; it reaches the release hook exactly once unless removed with lumina_bus_remove. */
LuminaStatus lumina_bus_listen(const LuminaMessageBus *bus, const uint8_t *name, size_t name_len, uint8_t partial, uint8_t has_entity, uint64_t entity, LuminaManagedThunk thunk, void *context, uint64_t *out_id);

/* Removes the managed listener id from bus (GB8); the host releases its own handle (no hook call). Safe during a send, also from the listener's own thunk. UnknownId for 0, a stale id, or a Rust listener's handle. */
LuminaStatus lumina_bus_remove(const LuminaMessageBus *bus, uint64_t id);

/* Sends a message on the tag named (name, name_len) of bus now (GB5, GB8), addressed to entity when has_entity is 1. payload points at payload_len bytes laid out as layout says (what lumina_reflect_find_payload reports for the managed mirror's type); they are checked against the tag's declared payload type before a byte is read: NotScriptVisible, WrongPayload (another type), WrongLayout (size, alignment, field count or payload_len differ), each with a log line saying what differs. Every matching listener, Rust or managed, hears it before this returns; on a retained tag the payload is kept as its last message (GB6). */
LuminaStatus lumina_bus_send(const LuminaMessageBus *bus, const uint8_t *name, size_t name_len, uint8_t has_entity, uint64_t entity, const void *payload, size_t payload_len, const LuminaPayloadInfo *layout);

/* Writes how many managed listeners bus has to out_count (GB8). */
LuminaStatus lumina_bus_managed_count(const LuminaMessageBus *bus, size_t *out_count);

/* Looks up a reflected payload by name (void for none). */
LuminaStatus lumina_reflect_find_payload(const uint8_t *name, size_t name_len, LuminaPayloadInfo *out);

/* Looks up a reflected component by name. */
LuminaStatus lumina_reflect_find_component(const uint8_t *name, size_t name_len, LuminaComponentInfo *out);

/* Reads field index of the payload payload (a handle from LuminaPayloadInfo or LuminaPropertyInfo). */
LuminaStatus lumina_reflect_payload_field(const void *payload, size_t index, LuminaFieldInfo *out);

/* Reads property index of the component component (a handle from LuminaComponentInfo). */
LuminaStatus lumina_reflect_component_property(const void *component, size_t index, LuminaPropertyInfo *out);

/* Looks up the property property of the component component by name: what generated C# bindings call to find a delegate's offset in its component. */
LuminaStatus lumina_reflect_find_property(const uint8_t *component, size_t component_len, const uint8_t *property, size_t property_len, LuminaPropertyInfo *out);

#ifdef __cplusplus
}
#endif

#endif /* LUMINA_H */
