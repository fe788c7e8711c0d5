//! Gameplay tags (rule GB1): hierarchical names such as `Combat.Damage.Critical`, interned once
//! per process.
//!
//! A [`Tag`] is one pointer to the tag's entry in the process-wide registry, so copying,
//! comparing, [`parent`](Tag::parent), [`depth`](Tag::depth) and [`matches`](Tag::matches) take
//! no lock and allocate nothing. The registry is a static of the runtime: game modules link the
//! engine's own runtime (MB1), so the engine and every module see the same tags, as they see the
//! same handle counter.
//!
//! Game code declares its tags with `gameplay_tags!`, which makes a typed [`TagKey`] per tag
//! (GB2). Data files, scripts and the C ABI ask for tags by name with [`Tag::find`], which
//! returns [`UnknownTag`] for a name nobody registered. A key registers its tag when Rust first
//! uses it; so that names are found before that, the engine (and each game module, for its own
//! tags) calls the set's generated `register()` at start-up, which registers every tag of the set
//! with its payload type, retention and script layout ([`register_tags`]).

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::reflect::{FieldInfo, FieldType, PayloadInfo, ScriptPayload};

/// One tag's entry in the registry. Leaked on registration and never freed: the registry only
/// grows, so a [`Tag`] (a reference to its entry) is valid for the rest of the process.
struct TagInfo {
    /// Dense, from 0 in registration order: the bus indexes its channels by it.
    id: u32,
    /// The full dotted name; the registry's own copy (a module's string literal would go away
    /// with its library, R5).
    name: &'static str,
    parent: Option<Tag>,
    depth: u32,
    /// The payload type declared with the tag (GB2), set by the first typed declaration.
    payload: OnceLock<PayloadType>,
    /// Declared `#[retained]` (GB6) by any declaration.
    retained: AtomicBool,
    /// The reflected layout of the payload, when the tag was declared `#[script]` (GB8): the
    /// registry's own deep copy (a module's reflection statics go away with its library, R5).
    script: OnceLock<&'static PayloadInfo>,
}

/// A payload type as the registry records it: its `TypeId` and name (the registry's own copy).
#[derive(Clone, Copy)]
struct PayloadType {
    id: TypeId,
    name: &'static str,
}

/// The process-wide registry: name -> tag, and tags by id.
struct Registry {
    by_name: HashMap<&'static str, Tag>,
    by_id: Vec<Tag>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    f(registry.get_or_insert_with(|| Registry {
        by_name: HashMap::new(),
        by_id: Vec::new(),
    }))
}

/// A hierarchical gameplay tag: `Combat`, `Combat.Damage`, `Combat.Damage.Critical` (GB1).
///
/// A pointer-sized handle to the tag's entry in the process-wide registry: `Copy`, `Send`,
/// `Sync`, compared and hashed by identity. Every tag of a registered name exists once per
/// process, with all its ancestors.
///
/// ```
/// use lumina::bus::Tag;
///
/// let critical = Tag::register("Doc.Combat.Damage.Critical").unwrap();
/// let combat = Tag::find("Doc.Combat").unwrap();
/// assert_eq!(critical.depth(), 4);
/// assert_eq!(critical.parent().unwrap().name(), "Doc.Combat.Damage");
/// assert!(critical.matches(combat));
/// assert!(!combat.matches(critical));
/// assert!(Tag::find("Doc.Combat.Damag").is_err());
/// ```
#[derive(Clone, Copy)]
pub struct Tag(&'static TagInfo);

impl PartialEq for Tag {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Tag {}

impl std::hash::Hash for Tag {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl PartialOrd for Tag {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tag {
    /// By registration order.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.id.cmp(&other.0.id)
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag({})", self.0.name)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// A tag name that is not registered ([`Tag::find`]) or not well formed ([`Tag::register`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownTag {
    /// No tag of this name is registered in this process.
    NotRegistered(String),
    /// The name is not dot-separated identifiers (`Combat.Damage`): empty, an empty segment, or a
    /// character other than ASCII letters, digits and `_`.
    Malformed(String),
}

impl fmt::Display for UnknownTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownTag::NotRegistered(name) => {
                write!(f, "no gameplay tag `{name}` is registered")?;
                if let Some(closest) = self.closest() {
                    write!(f, ": did you mean `{closest}`?")?;
                }
                write!(
                    f,
                    " (declare it with `gameplay_tags!` or register it with `Tag::register`)"
                )
            }
            UnknownTag::Malformed(name) => write!(
                f,
                "`{name}` is not a gameplay tag name: expected identifiers separated by dots, \
                 like `Combat.Damage`"
            ),
        }
    }
}

impl UnknownTag {
    /// For a name that is not registered, the registered tag whose name is closest to it (at
    /// most one edit per three characters, as rustc suggests a name), if any: what the message
    /// offers as "did you mean". `None` for a malformed name.
    ///
    /// ```
    /// use lumina::bus::{Tag, UnknownTag};
    ///
    /// let reload = Tag::register("Weapon.Reload").unwrap();
    /// let error = Tag::find("Weapon.Relaod").unwrap_err();
    /// assert_eq!(error.closest(), Some(reload));
    /// assert!(error.to_string().contains("did you mean `Weapon.Reload`?"));
    /// ```
    pub fn closest(&self) -> Option<Tag> {
        let UnknownTag::NotRegistered(name) = self else {
            return None;
        };
        let limit = name.chars().count().max(3) / 3;
        with_registry(|registry| {
            registry
                .by_id
                .iter()
                .map(|tag| (edit_distance(name, tag.name()), *tag))
                .filter(|(distance, _)| *distance <= limit)
                .min_by_key(|(distance, _)| *distance)
                .map(|(_, tag)| tag)
        })
    }
}

/// The Levenshtein distance between `a` and `b`, counted in characters (a swap of two neighbours
/// counts as one edit, as in rustc's suggestions). The macros' `event_class` validation has its
/// own (case-insensitive, for variant names): a proc-macro crate can export only macros, and a
/// package cannot compile the other's files, so the two cannot share one function.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: the distance between a[..i] and b[..j]; three rows kept for the swap.
    let mut before: Vec<usize> = Vec::new();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (previous[j] + 1)
                .min(row[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut previous, row);
    }
    previous[b.len()]
}

impl std::error::Error for UnknownTag {}

/// The payload type a tag was declared with differs from the one used (GB2): what a send by
/// [`Tag`] (a name read at run time) returns instead of delivering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrongPayload {
    /// The tag.
    pub tag: Tag,
    /// The payload type declared with the tag.
    pub declared: &'static str,
    /// The payload type used.
    pub used: &'static str,
}

impl fmt::Display for WrongPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gameplay tag `{}` carries `{}`, not `{}`",
            self.tag, self.declared, self.used
        )
    }
}

impl std::error::Error for WrongPayload {}

/// One tag name declared with two payload types (GB2), in two `gameplay_tags!` sets (two game
/// modules, or a module and the engine): what [`TagKey::register`] returns for the declaration
/// that came second. The first declaration keeps the tag; the second one's key registers nothing
/// and panics with this message when used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagConflict {
    /// The tag, as the first declaration registered it.
    pub tag: Tag,
    /// The payload type of the declaration registered first.
    pub declared: &'static str,
    /// The payload type of the declaration refused.
    pub conflicting: &'static str,
}

impl fmt::Display for TagConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gameplay tag `{}` is declared with payload `{}` and again with payload `{}`: a tag \
             carries one payload type, so rename one of the two declarations",
            self.tag, self.declared, self.conflicting
        )
    }
}

impl std::error::Error for TagConflict {}

fn well_formed(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|segment| {
            !segment.is_empty()
                && segment
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        })
}

impl Tag {
    /// The tag of `name`, registered with its ancestors if it is new. Takes the registry's lock;
    /// allocates only for a new name.
    pub fn register(name: &str) -> Result<Tag, UnknownTag> {
        if !well_formed(name) {
            return Err(UnknownTag::Malformed(name.to_owned()));
        }
        Ok(with_registry(|registry| register_in(registry, name)))
    }

    /// The registered tag of `name`, or [`UnknownTag`]: what data files, scripts and the C ABI
    /// use (GB1).
    pub fn find(name: &str) -> Result<Tag, UnknownTag> {
        if !well_formed(name) {
            return Err(UnknownTag::Malformed(name.to_owned()));
        }
        with_registry(|registry| registry.by_name.get(name).copied())
            .ok_or_else(|| UnknownTag::NotRegistered(name.to_owned()))
    }

    /// Every registered tag, in registration order (parents before their children).
    pub fn all() -> Vec<Tag> {
        with_registry(|registry| registry.by_id.clone())
    }

    /// The full dotted name.
    #[inline]
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The last segment of the name (`Critical` for `Combat.Damage.Critical`).
    pub fn leaf(self) -> &'static str {
        self.0.name.rsplit('.').next().unwrap_or(self.0.name)
    }

    /// The tag one level up, `None` for a root tag. No lock, no allocation.
    #[inline]
    pub fn parent(self) -> Option<Tag> {
        self.0.parent
    }

    /// How many segments the name has: 1 for a root tag. No lock, no allocation.
    #[inline]
    pub fn depth(self) -> u32 {
        self.0.depth
    }

    /// Whether this tag is `other` or one of its descendants (`Combat.Damage` matches `Combat`).
    /// At most `depth` steps up; no lock, no allocation.
    #[inline]
    pub fn matches(self, other: Tag) -> bool {
        let mut tag = self;
        while tag.depth() > other.depth() {
            match tag.parent() {
                Some(parent) => tag = parent,
                None => return false,
            }
        }
        tag == other
    }

    /// The tag and its ancestors, nearest first.
    pub fn ancestors(self) -> impl Iterator<Item = Tag> {
        std::iter::successors(Some(self), |tag| tag.parent())
    }

    /// Dense process-wide number, from 0 in registration order.
    #[inline]
    pub fn id(self) -> u32 {
        self.0.id
    }

    /// The address of the tag's registry record: non-zero, even, and the same for two tags
    /// exactly when they are equal. What the bus's exact listeners compare (GB9).
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        const { assert!(std::mem::align_of::<TagInfo>() >= 2) };
        std::ptr::from_ref(self.0).addr()
    }

    /// Whether a declaration made this tag retained (GB6): the bus keeps its last message.
    #[inline]
    pub fn is_retained(self) -> bool {
        self.0.retained.load(Ordering::Relaxed)
    }

    /// The name of the payload type declared with the tag, if a typed declaration was made.
    pub fn payload_type_name(self) -> Option<&'static str> {
        self.0.payload.get().map(|payload| payload.name)
    }

    /// Checks that `P` is the payload type declared with this tag (GB2); declares it if none
    /// was declared yet.
    pub fn check_payload<P: 'static>(self) -> Result<(), WrongPayload> {
        let used = PayloadType {
            id: TypeId::of::<P>(),
            name: std::any::type_name::<P>(),
        };
        let declared = *self.0.payload.get_or_init(|| PayloadType {
            id: used.id,
            name: leak_str(used.name),
        });
        if declared.id == used.id {
            Ok(())
        } else {
            Err(WrongPayload {
                tag: self,
                declared: declared.name,
                used: used.name,
            })
        }
    }

    /// The reflected layout of the tag's payload when it was declared `#[script]` (GB8): what
    /// the C ABI checks a managed sender's payload against, and what managed listeners are
    /// told. `None` for a tag whose payload scripts cannot see.
    pub fn script_payload(self) -> Option<&'static PayloadInfo> {
        self.0.script.get().copied()
    }

    /// The `TypeId` of the payload type declared with the tag.
    pub(crate) fn payload_type_id(self) -> Option<TypeId> {
        self.0.payload.get().map(|payload| payload.id)
    }

    /// Whether `P` is the payload type declared with this tag.
    pub(crate) fn carries<P: 'static>(self) -> bool {
        self.carries_id(TypeId::of::<P>())
    }

    /// Whether the payload type declared with this tag has the `TypeId` `id`. Once declared, a
    /// tag's payload type never changes (it is set once).
    #[inline]
    pub(crate) fn carries_id(self, id: TypeId) -> bool {
        self.0.payload.get().is_some_and(|payload| payload.id == id)
    }
}

/// A deep copy of a reflected layout for the rest of the process: the registry's own, so a
/// `#[script]` tag declared in a game module keeps its layout after the module is unloaded (R5).
/// Bounded by the number of distinct `#[script]` tags.
fn leak_layout(info: &PayloadInfo) -> &'static PayloadInfo {
    let fields: Vec<FieldInfo> = info
        .fields
        .iter()
        .map(|field| FieldInfo {
            name: leak_str(field.name),
            ty: match field.ty {
                FieldType::Struct(nested) => FieldType::Struct(leak_layout(nested)),
                other => other,
            },
            offset: field.offset,
            size: field.size,
        })
        .collect();
    Box::leak(Box::new(PayloadInfo {
        name: leak_str(info.name),
        size: info.size,
        align: info.align,
        fields: Box::leak(fields.into_boxed_slice()),
    }))
}

/// Copies a string out for the rest of the process (the registry's names; bounded by the number
/// of distinct tags).
fn leak_str(name: &str) -> &'static str {
    Box::leak(name.to_owned().into_boxed_str())
}

fn register_in(registry: &mut Registry, name: &str) -> Tag {
    if let Some(&tag) = registry.by_name.get(name) {
        return tag;
    }
    let parent = name
        .rsplit_once('.')
        .map(|(parent, _)| register_in(registry, parent));
    let id = u32::try_from(registry.by_id.len()).expect("lumina: more than 2^32 gameplay tags");
    let info: &'static TagInfo = Box::leak(Box::new(TagInfo {
        id,
        name: leak_str(name),
        parent,
        depth: parent.map_or(1, |parent| parent.depth() + 1),
        payload: OnceLock::new(),
        retained: AtomicBool::new(false),
        script: OnceLock::new(),
    }));
    let tag = Tag(info);
    registry.by_name.insert(info.name, tag);
    registry.by_id.push(tag);
    tag
}

/// A declared tag with its payload type: what `gameplay_tags!` makes, one `static` per tag, so
/// a misspelled name is a compile error with rustc's "a static with a similar name exists"
/// (GB1), and a payload of the wrong type is a type error (GB2).
///
/// The tag is registered by [`register`](TagKey::register) (what the set's generated
/// `register()` calls for every key) or else on first use, and remembered in the key, so later
/// uses are one atomic load. `P` is `()` for a tag declared without a payload.
pub struct TagKey<P: 'static> {
    name: &'static str,
    retained: bool,
    /// The payload's reflected layout, for a tag declared `#[script]` (GB8).
    script: Option<&'static PayloadInfo>,
    /// The registered tag once resolved.
    resolved: OnceLock<Tag>,
    payload: PhantomData<fn(P) -> P>,
}

impl<P: 'static> TagKey<P> {
    /// A key for the tag `name` (dot-separated identifiers); `retained` keeps the channel's last
    /// message (GB6). Registered on first use. Game code uses `gameplay_tags!` instead.
    #[doc(hidden)]
    pub const fn new(name: &'static str, retained: bool) -> Self {
        TagKey {
            name,
            retained,
            script: None,
            resolved: OnceLock::new(),
            payload: PhantomData,
        }
    }

    /// The tag, registered on first use with this key's payload type and retention.
    ///
    /// # Panics
    ///
    /// If the name is not well formed (the macro checks it), or the tag was declared elsewhere
    /// (another module) with another payload type (GB2): the [`TagConflict`] message.
    #[inline]
    pub fn tag(&self) -> Tag {
        match self.resolved.get() {
            Some(&tag) => tag,
            None => self.resolve(),
        }
    }

    #[cold]
    #[inline(never)]
    fn resolve(&self) -> Tag {
        match self.register() {
            Ok(tag) => tag,
            Err(error) => panic!("lumina: {error}"),
        }
    }

    /// Registers the tag, with its ancestors, its payload type, its retention (GB6) and, for a
    /// `#[script]` tag, its payload's layout (GB8), so [`Tag::find`], scripts and the C ABI find
    /// it by name before Rust uses the key. Idempotent: once registered, one atomic load.
    /// Game code calls the set's generated `register()`, which calls this for every key.
    ///
    /// Returns [`TagConflict`] when the name was already registered with another payload type
    /// (another set declares it too): the first declaration stands, this key stays unregistered
    /// and [`tag`](TagKey::tag) panics with the same message.
    ///
    /// # Panics
    ///
    /// If the name is not well formed (the macro checks it).
    pub fn register(&self) -> Result<Tag, TagConflict> {
        if let Some(&tag) = self.resolved.get() {
            return Ok(tag);
        }
        let tag = match Tag::register(self.name) {
            Ok(tag) => tag,
            Err(error) => panic!("lumina: {error}"),
        };
        if let Err(error) = tag.check_payload::<P>() {
            return Err(TagConflict {
                tag,
                declared: error.declared,
                conflicting: error.used,
            });
        }
        if self.retained {
            tag.0.retained.store(true, Ordering::Relaxed);
        }
        if let Some(script) = self.script {
            tag.0.script.get_or_init(|| leak_layout(script));
        }
        Ok(*self.resolved.get_or_init(|| tag))
    }

    /// The full dotted name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the tag is declared retained.
    pub fn is_retained(&self) -> bool {
        self.retained
    }

    /// Whether the tag is declared `#[script]`: managed scripts can send and hear it (GB8).
    pub fn is_script(&self) -> bool {
        self.script.is_some()
    }
}

/// Not public API: what `#[script]` in `gameplay_tags!` expands to. A key for a tag whose payload
/// managed scripts can send and hear through the C ABI (GB8): the key carries `P`'s reflected
/// layout, so only a reflected, blittable payload can be declared so. A free function (not a
/// constructor of `TagKey<P>`), so that a payload that is not reflected is one error saying so,
/// on the payload type `gameplay_tags!` was given.
#[doc(hidden)]
pub const fn script_tag_key<P: ScriptPayload>(name: &'static str, retained: bool) -> TagKey<P> {
    TagKey {
        name,
        retained,
        script: Some(P::PAYLOAD),
        resolved: OnceLock::new(),
        payload: PhantomData,
    }
}

impl<P: 'static> fmt::Debug for TagKey<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TagKey({}: {})", self.name, std::any::type_name::<P>())
    }
}

/// A declared tag of any payload type: a [`TagKey`] seen through what a tag set lists. The
/// generated `all()` of a `gameplay_tags!` module returns every key of the set this way, so an
/// engine can register, list or check a set without naming payload types.
pub trait DeclaredTag: Sync {
    /// The full dotted name.
    fn name(&self) -> &'static str;
    /// The name of the payload type declared with the tag (`()` for none).
    fn payload_type_name(&self) -> &'static str;
    /// Whether the tag is declared retained (GB6).
    fn is_retained(&self) -> bool;
    /// Whether the tag is declared `#[script]` (GB8).
    fn is_script(&self) -> bool;
    /// Registers the tag: [`TagKey::register`].
    fn register(&self) -> Result<Tag, TagConflict>;
}

impl<P: 'static> DeclaredTag for TagKey<P> {
    fn name(&self) -> &'static str {
        TagKey::name(self)
    }

    fn payload_type_name(&self) -> &'static str {
        std::any::type_name::<P>()
    }

    fn is_retained(&self) -> bool {
        TagKey::is_retained(self)
    }

    fn is_script(&self) -> bool {
        TagKey::is_script(self)
    }

    fn register(&self) -> Result<Tag, TagConflict> {
        TagKey::register(self)
    }
}

/// Registers every tag of `set` (GB1): what the `register()` a `gameplay_tags!` module generates
/// does with its `all()`. Every tag that does not conflict is registered; the first
/// [`TagConflict`] is returned. Idempotent, and one atomic load per tag once registered.
///
/// ```
/// use lumina::bus::{register_tags, Tag};
/// use lumina::gameplay_tags;
///
/// gameplay_tags! {
///     pub mod tags {
///         DocSet { Ready, Score: u32 },
///     }
/// }
///
/// fn main() {
///     assert!(Tag::find("DocSet.Score").is_err()); // declared, not yet registered
///     register_tags(tags::all()).unwrap(); // the same as `tags::register()`
///     assert_eq!(Tag::find("DocSet.Score").unwrap().payload_type_name(), Some("u32"));
/// }
/// ```
pub fn register_tags(set: &[&dyn DeclaredTag]) -> Result<(), TagConflict> {
    let mut first = None;
    for key in set {
        if let Err(conflict) = key.register() {
            first.get_or_insert(conflict);
        }
    }
    first.map_or(Ok(()), Err)
}
