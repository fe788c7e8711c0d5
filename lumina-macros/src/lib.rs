//! Procedural macros of [lumina](https://docs.rs/lumina-notify). Use them through the `lumina` facade,
//! which re-exports each of them; expansions name the runtime as `::lumina::__private::...`.
//!
//! Each macro is split the way thiserror splits its derive: *parse* into a typed model that keeps
//! the user's tokens for spans, *validate* with one function per rule (errors collected in a
//! `ctxt::Ctxt` so every mistake shows at once), and *expand*, which cannot fail.

#[allow(dead_code)] // used by the macros as they land
mod ctxt;
mod delegate_decl;
mod event_class;
mod gameplay_tags;
mod script_delegate;

/// Declares a named multicast delegate type: any number of subscribers, called in the order
/// they were added.
///
/// ```text
/// declare_multicast_delegate!(pub ProjectLoaded);
/// declare_multicast_delegate!(pub WindowResize(window: &Window, size: UVec2));
/// declare_multicast_delegate!(pub Query(value: i32) -> bool);
/// ```
///
/// Use it through the facade, `lumina::declare_multicast_delegate!`, whose documentation has
/// the full, tested examples and lists the generated methods. Attributes and doc comments pass
/// through to the type; parameter names are optional; owned parameter types must be `Clone`.
#[proc_macro]
pub fn declare_multicast_delegate(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    delegate_decl::multicast(input.into()).into()
}

/// Declares a named single-cast delegate type: one callable or nothing.
///
/// ```text
/// declare_delegate!(pub Predicate(value: i32) -> bool);
/// declare_delegate!(pub Notify());
/// ```
///
/// Use it through the facade, `lumina::declare_delegate!`, whose documentation has the full,
/// tested examples and lists the generated methods.
#[proc_macro]
pub fn declare_delegate(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    delegate_decl::single(input.into()).into()
}

/// Makes a struct an event class (rules E2, E5, B6).
///
/// Implements `lumina::event::EventClass` (`static_type()`, `event_type()`, `name()`, and the
/// struct's name as `CLASS_NAME`) and leaves the struct exactly as written: its fields, struct
/// literals, derives and constructors stay yours. The handled flag lives in the
/// `lumina::event::Envelope` the processor dispatches the event in, not in your struct.
///
/// A game's own event class is declared with a bare `#[event_class]` (B6); its event type is
/// `EventType::None`. An input or window event class names its `EventType` variant, such as
/// `#[event_class(KeyPressed)]`. (`#[event_class(None)]` is the bare form spelled out, and stays
/// valid.) Classes are told apart by their Rust type, so a game's own class never collides with
/// a built-in one, whatever its event type. An unknown name is an error on that name that
/// suggests the closest valid one, or the bare form when no variant is close (a game's class
/// name, such as `#[event_class(PlayerDied)]`).
///
/// ```
/// use lumina::event::{Event, EventClass, EventProcessor, EventType, InputLayer};
/// use lumina::event_class;
///
/// /// A game's own event: dispatched like any input event.
/// #[event_class]
/// #[derive(Debug, Clone)]
/// pub struct ScoreChanged {
///     pub score: u32,
/// }
///
/// /// An input event class of the game: a key chord.
/// #[event_class(KeyPressed)]
/// pub struct Chord {
///     pub keys: [u32; 2],
/// }
///
/// assert_eq!(ScoreChanged::static_type(), EventType::None);
/// assert_eq!(Chord::static_type(), EventType::KeyPressed);
/// let processor = EventProcessor::new();
/// let hud = std::rc::Rc::new(|event: &mut dyn Event| {
///     event.downcast_ref::<ScoreChanged>().is_some_and(|changed| changed.score > 10)
/// });
/// assert!(processor.register_event_handler(&hud, InputLayer::Default));
/// assert!(processor.dispatch(ScoreChanged { score: 12 }));
/// assert!(!processor.dispatch(ScoreChanged { score: 3 }));
/// ```
#[proc_macro_attribute]
pub fn event_class(
    args: proc_macro::TokenStream,
    item: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    event_class::event_class(args.into(), item.into()).into()
}

/// Makes a struct a reflected, blittable script delegate payload (rule SD6).
///
/// The struct gets `#[repr(C)]` (the layout its C# mirror declares), implements
/// `lumina::ScriptPayload`, and registers itself at link time, so `lumina::reflect` and the C ABI
/// report its name, size, alignment and fields (name, type, offset). Every field must be
/// blittable: a fixed-size number or another `#[script_delegate]` struct. `String`, `Vec`, `Box`,
/// references, raw pointers, `char`, `bool`, `Option`, tuples and arrays are compile errors on the
/// field, saying why (see `lumina::reflect` for the table).
///
/// ```
/// use lumina::{ScriptDelegate, script_delegate};
///
/// #[script_delegate]
/// #[derive(Clone, Copy, Debug)]
/// pub struct Vec3 {
///     pub x: f32,
///     pub y: f32,
///     pub z: f32,
/// }
///
/// #[script_delegate]
/// pub struct Collision {
///     pub other_entity: u64,
///     pub impulse: f32,
///     pub normal: Vec3,
/// }
///
/// let on_hit: ScriptDelegate<Collision> = ScriptDelegate::new();
/// let _ = on_hit.add_lambda(|hit| println!("hit {} with {}", hit.other_entity, hit.impulse));
/// on_hit.broadcast(&Collision {
///     other_entity: 7,
///     impulse: 2.5,
///     normal: Vec3 { x: 0.0, y: 1.0, z: 0.0 },
/// });
/// let info = lumina::reflect::PayloadInfo::find("Collision").unwrap();
/// assert_eq!(info.field("normal").unwrap().offset, 12);
/// ```
#[proc_macro_attribute]
pub fn script_delegate(
    args: proc_macro::TokenStream,
    input: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    script_delegate::payload::expand_attribute(args.into(), input.into()).into()
}

/// Reflects a component's script delegate properties (rule SD6), the spec's
/// `PROPERTY(Editable, Category = "Events")`.
///
/// Mark each `ScriptDelegate<P>` field with `#[property]`, optionally with `editable` and
/// `category = ".."` (default `"Default"`). The component implements `lumina::ScriptComponent`
/// and registers itself at link time; `lumina::reflect` and the C ABI report each property's name,
/// category, flags, payload and byte offset in the component, which is how a managed host finds
/// the delegate.
///
/// ```
/// use lumina::{ScriptComponent, ScriptDelegate, reflect, script_delegate};
///
/// #[script_delegate]
/// pub struct Damage {
///     pub amount: f32,
/// }
///
/// #[derive(ScriptComponent, Default)]
/// pub struct Health {
///     pub current: f32,
///     #[property(editable, category = "Events")]
///     pub on_damaged: ScriptDelegate<Damage>,
///     #[property(category = "Events")]
///     pub on_died: ScriptDelegate<()>,
/// }
///
/// let health = reflect::ComponentInfo::find("Health").unwrap();
/// let on_died = health.property("on_died").unwrap();
/// assert_eq!(on_died.payload.name, "void");
/// assert!(!on_died.flags.contains(reflect::PropertyFlags::EDITABLE));
/// assert_eq!(on_died.offset, std::mem::offset_of!(Health, on_died));
/// ```
#[proc_macro_derive(ScriptComponent, attributes(property))]
pub fn derive_script_component(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    script_delegate::component::expand_derive(input.into()).into()
}

/// Declares gameplay tags, each with the payload type its messages carry (rules GB1, GB2).
///
/// ```text
/// gameplay_tags! {
///     pub mod tags {
///         Combat { Damage: Damage { Critical: Damage } },
///         #[retained] Match.State: MatchState,
///     }
/// }
/// ```
///
/// Use it through the facade, `lumina::gameplay_tags!`, whose documentation has the full, tested
/// example. Each tag becomes a typed `static` (`tags::COMBAT_DAMAGE_CRITICAL`); the module form
/// also gets `register()`, which registers every tag of the set so it is found by name before
/// use, and `all()`, which lists the set's keys.
#[proc_macro]
pub fn gameplay_tags(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    gameplay_tags::gameplay_tags(input.into()).into()
}
