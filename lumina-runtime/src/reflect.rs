//! Reflection of script delegate payloads and of components' delegate properties (rule SD6).
//!
//! `#[script_delegate]` on a payload struct implements [`ScriptPayload`]; `#[derive(ScriptComponent)]`
//! on a component implements [`ScriptComponent`] for its `#[property(..)]` fields. Both register
//! their type at link time (through the [`inventory`](https://docs.rs/inventory) crate), so
//! [`PayloadInfo::all`], [`ComponentInfo::all`] and their `find(name)` (the shape of the gameplay
//! tags' `Tag::all` and `Tag::find`) see every reflected type of the program without a hand-kept
//! list. The C ABI (`crate::ffi`) answers the same queries for a
//! managed host, and [`csharp`](crate::csharp) turns them into C# bindings.
//!
//! Types are registered under their bare struct name, the name the managed side sees. Names must
//! be unique among the reflected types linked into one program: with two `Hit` payloads from
//! different modules, [`PayloadInfo::find`]`("Hit")` returns either one. [`duplicate_names`] lists
//! such clashes, so a host can refuse to start with them.
//!
//! # What is blittable
//!
//! A payload is copied bit for bit into managed memory, so every field must have the same size,
//! alignment and meaning in Rust and in C#, and own nothing. Blittable field types are:
//!
//! | Rust | C# |
//! |---|---|
//! | `i8` `u8` `i16` `u16` `i32` `u32` `i64` `u64` | `sbyte` `byte` `short` `ushort` `int` `uint` `long` `ulong` |
//! | `isize` `usize` | `IntPtr` `UIntPtr` |
//! | `f32` `f64` | `float` `double` |
//! | another `#[script_delegate]` struct | its generated mirror struct |
//!
//! Rejected, with the reason in the compile error: `String`, `Vec`, `Box`, `Rc`, `Arc` (they own
//! heap memory that managed code can neither read nor free), references and raw pointers
//! (managed code cannot know how long they live), `char` (a 4-byte Unicode scalar in Rust, a
//! 2-byte UTF-16 unit in C#: use `u32`), `bool` (1 byte in Rust, marshalled as 4 in C#, and any
//! byte other than 0 or 1 is undefined behaviour in Rust: use `u8`), `Option`, tuples, arrays,
//! slices and any type that is not itself `#[script_delegate]` (no guaranteed layout).
//!
//! ```
//! use lumina::{ScriptComponent, ScriptDelegate, reflect, script_delegate};
//!
//! #[script_delegate]
//! pub struct Landed {
//!     pub speed: f32,
//!     pub surface: u32,
//! }
//!
//! #[derive(ScriptComponent, Default)]
//! pub struct Jumper {
//!     #[property(editable, category = "Events")]
//!     pub on_landed: ScriptDelegate<Landed>,
//! }
//!
//! let landed = reflect::PayloadInfo::find("Landed").unwrap();
//! assert_eq!(landed.size, 8);
//! assert_eq!(landed.fields[1].name, "surface");
//! assert_eq!(landed.fields[1].offset, 4);
//!
//! let jumper = reflect::ComponentInfo::find("Jumper").unwrap();
//! let on_landed = jumper.property("on_landed").unwrap();
//! assert_eq!(on_landed.category, "Events");
//! assert!(on_landed.flags.contains(reflect::PropertyFlags::EDITABLE));
//! assert_eq!(on_landed.payload.name, "Landed");
//! ```

use std::fmt;

/// The type of one payload field, as the managed side needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// `i8`
    I8,
    /// `u8`
    U8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `isize`
    Isize,
    /// `usize`
    Usize,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// A nested `#[script_delegate]` struct.
    Struct(&'static PayloadInfo),
}

impl FieldType {
    /// The code of this type in the C ABI (`LUMINA_FIELD_*` in `lumina.h`).
    pub fn code(self) -> u32 {
        match self {
            FieldType::I8 => 1,
            FieldType::U8 => 2,
            FieldType::I16 => 3,
            FieldType::U16 => 4,
            FieldType::I32 => 5,
            FieldType::U32 => 6,
            FieldType::I64 => 7,
            FieldType::U64 => 8,
            FieldType::Isize => 9,
            FieldType::Usize => 10,
            FieldType::F32 => 11,
            FieldType::F64 => 12,
            FieldType::Struct(_) => 13,
        }
    }

    /// The Rust spelling of the type (the payload's name for a nested struct).
    pub fn rust_name(self) -> &'static str {
        match self {
            FieldType::I8 => "i8",
            FieldType::U8 => "u8",
            FieldType::I16 => "i16",
            FieldType::U16 => "u16",
            FieldType::I32 => "i32",
            FieldType::U32 => "u32",
            FieldType::I64 => "i64",
            FieldType::U64 => "u64",
            FieldType::Isize => "isize",
            FieldType::Usize => "usize",
            FieldType::F32 => "f32",
            FieldType::F64 => "f64",
            FieldType::Struct(payload) => payload.name,
        }
    }
}

/// One field of a reflected payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name in Rust.
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
    /// Byte offset in the payload.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A reflected, blittable payload type: what `#[script_delegate]` produces.
///
/// Each reflected type's info lives in one `static`, so `&'static PayloadInfo`s of the same type
/// compare equal with [`std::ptr::eq`] (the C ABI uses the address as a handle).
#[derive(Debug, PartialEq, Eq)]
pub struct PayloadInfo {
    /// The struct's name (`"void"` for `()`).
    pub name: &'static str,
    /// `size_of` the payload.
    pub size: usize,
    /// `align_of` the payload.
    pub align: usize,
    /// Fields in declaration order (the order of a `#[repr(C)]` layout).
    pub fields: &'static [FieldInfo],
}

impl PayloadInfo {
    /// The payload of `ScriptDelegate<()>`: managed thunks receive a null payload pointer.
    pub const VOID: PayloadInfo = PayloadInfo {
        name: "void",
        size: 0,
        align: 1,
        fields: &[],
    };

    /// Whether this is the void payload (managed thunks get a null pointer).
    pub fn is_void(&self) -> bool {
        self.size == 0
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        self.fields.iter().find(|field| field.name == name)
    }
}

/// Property flags, from the `#[property(..)]` keys (the spec's `PROPERTY(Editable, ..)`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PropertyFlags(pub u32);

impl PropertyFlags {
    /// `#[property(editable)]`: the editor shows the property and lets designers bind it.
    pub const EDITABLE: PropertyFlags = PropertyFlags(1);

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: PropertyFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    pub const fn union(self, other: PropertyFlags) -> PropertyFlags {
        PropertyFlags(self.0 | other.0)
    }
}

impl fmt::Debug for PropertyFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == PropertyFlags::EDITABLE {
            write!(f, "PropertyFlags(EDITABLE)")
        } else if self.0 == 0 {
            write!(f, "PropertyFlags(none)")
        } else {
            write!(f, "PropertyFlags({:#x})", self.0)
        }
    }
}

/// A reflected delegate property of a component (a `#[property(..)]` field).
#[derive(Debug, PartialEq, Eq)]
pub struct PropertyInfo {
    /// The field's name in Rust (`on_hit`).
    pub name: &'static str,
    /// `category = ".."`, or `"Default"` when none is given.
    pub category: &'static str,
    /// `editable` and future keys.
    pub flags: PropertyFlags,
    /// What the delegate carries.
    pub payload: &'static PayloadInfo,
    /// Byte offset of the delegate, and so of its `ScriptDelegateBase`, in the component.
    pub offset: usize,
}

/// A reflected component: what `#[derive(ScriptComponent)]` produces.
#[derive(Debug, PartialEq, Eq)]
pub struct ComponentInfo {
    /// The struct's name.
    pub name: &'static str,
    /// `size_of` the component.
    pub size: usize,
    /// `align_of` the component.
    pub align: usize,
    /// Its delegate properties, in declaration order.
    pub properties: &'static [PropertyInfo],
}

impl ComponentInfo {
    /// The property called `name`.
    pub fn property(&self, name: &str) -> Option<&'static PropertyInfo> {
        self.properties
            .iter()
            .find(|property| property.name == name)
    }
}

/// A payload a script delegate can carry; implemented by `#[script_delegate]` (and for `()`, the
/// void payload). Every field is blittable (see the [module documentation](self)).
///
/// # Safety
///
/// `PAYLOAD` describes `Self` exactly (name, `size_of`, `align_of`, each field's offset, size and
/// type), `Self` is `#[repr(C)]`, and any bytes in its fields form a valid `Self`: a managed
/// script's bytes are read as a `Self` when it sends on a `#[script]` gameplay tag (GB8).
/// `#[script_delegate]` checks all of this; implement it by hand only with the same care.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a script delegate payload",
    label = "not a `#[script_delegate]` struct",
    note = "a script delegate carries a blittable struct marked `#[script_delegate]`, or `()` for \
            no payload"
)]
pub unsafe trait ScriptPayload: 'static {
    /// The payload's reflection data.
    const PAYLOAD: &'static PayloadInfo;
}

/// The void payload's one address (a `const` may be duplicated; reflection data must not be).
static VOID_PAYLOAD: PayloadInfo = PayloadInfo::VOID;

// SAFETY: `()` has no bytes; `VOID` describes it.
unsafe impl ScriptPayload for () {
    const PAYLOAD: &'static PayloadInfo = &VOID_PAYLOAD;
}

/// A component with reflected delegate properties; implemented by `#[derive(ScriptComponent)]`.
pub trait ScriptComponent: 'static {
    /// The component's reflection data.
    const COMPONENT: &'static ComponentInfo;
}

/// Not public API; used by expansions. A type that may be a field of a payload.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not blittable, so it cannot be a field of a script delegate payload",
    label = "not blittable",
    note = "payload fields must be fixed-size numbers (i8..i64, u8..u64, isize, usize, f32, f64) \
            or another `#[script_delegate]` struct"
)]
///
/// # Safety
///
/// `FIELD_TYPE` describes `Self`, and any bytes of its size form a valid `Self` (see
/// [`ScriptPayload`]).
pub unsafe trait Blittable {
    /// How the field is described to the managed side.
    const FIELD_TYPE: FieldType;
}

macro_rules! blittable {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        // SAFETY: plain integers and floats: any bytes are a valid value, described by
        // `FIELD_TYPE`.
        $(unsafe impl Blittable for $ty {
            const FIELD_TYPE: FieldType = FieldType::$variant;
        })*
    };
}

blittable! {
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
    isize => Isize, usize => Usize, f32 => F32, f64 => F64,
}

/// Not public API; used by expansions. A field type that can be a reflected delegate property.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a script delegate, so it cannot be a `#[property]`",
    label = "expected `ScriptDelegate<Payload>`",
    note = "`#[property(..)]` marks fields of type `lumina::ScriptDelegate<P>`; remove it from \
            other fields"
)]
///
/// `ScriptDelegate<P>` implements it (in `script_delegate`, which stands above this module).
pub trait DelegateProperty {
    /// The payload the delegate carries.
    const PAYLOAD: &'static PayloadInfo;
}

/// Not public API; used by expansions. A payload's link-time registration.
#[doc(hidden)]
pub struct RegisteredPayload(pub &'static PayloadInfo);

/// Not public API; used by expansions. A component's link-time registration.
#[doc(hidden)]
pub struct RegisteredComponent(pub &'static ComponentInfo);

inventory::collect!(RegisteredPayload);
inventory::collect!(RegisteredComponent);

inventory::submit! { RegisteredPayload(&VOID_PAYLOAD) }

impl PayloadInfo {
    /// Every reflected payload of the program (the void payload included), in no particular
    /// order; as [`Tag::all`](crate::bus::Tag::all) lists the gameplay tags.
    ///
    /// ```
    /// use lumina::reflect::PayloadInfo;
    ///
    /// assert!(PayloadInfo::all().any(|payload| payload.name == "void"));
    /// ```
    pub fn all() -> impl Iterator<Item = &'static PayloadInfo> {
        inventory::iter::<RegisteredPayload>
            .into_iter()
            .map(|r| r.0)
    }

    /// The reflected payload called `name` (`"void"` for `()`); as
    /// [`Tag::find`](crate::bus::Tag::find) finds a gameplay tag by its name.
    ///
    /// ```
    /// use lumina::reflect::{PayloadInfo, ScriptPayload};
    ///
    /// assert!(std::ptr::eq(PayloadInfo::find("void").unwrap(), <()>::PAYLOAD));
    /// assert!(PayloadInfo::find("NoSuchPayload").is_none());
    /// ```
    pub fn find(name: &str) -> Option<&'static PayloadInfo> {
        PayloadInfo::all().find(|payload| payload.name == name)
    }
}

impl ComponentInfo {
    /// Every reflected component of the program, in no particular order.
    pub fn all() -> impl Iterator<Item = &'static ComponentInfo> {
        inventory::iter::<RegisteredComponent>
            .into_iter()
            .map(|r| r.0)
    }

    /// The reflected component called `name`.
    pub fn find(name: &str) -> Option<&'static ComponentInfo> {
        ComponentInfo::all().find(|component| component.name == name)
    }
}

/// Names used by more than one reflected payload, or by more than one reflected component, sorted.
/// Empty in a well-formed program (see the [module documentation](self)).
pub fn duplicate_names() -> Vec<&'static str> {
    fn duplicates(mut names: Vec<&'static str>) -> Vec<&'static str> {
        names.sort_unstable();
        let mut out: Vec<&'static str> = names
            .windows(2)
            .filter(|pair| pair[0] == pair[1])
            .map(|pair| pair[0])
            .collect();
        out.dedup();
        out
    }
    let mut out = duplicates(PayloadInfo::all().map(|payload| payload.name).collect());
    out.extend(duplicates(
        ComponentInfo::all()
            .map(|component| component.name)
            .collect(),
    ));
    out.sort_unstable();
    out.dedup();
    out
}
