//! The tag registry against a model (GB1, GB2): random tag sets, some declaring one name with two
//! payload types, registered as a set (`register_tags`, what a generated `register()` does),
//! resolved one key at a time by first use (`TagKey::tag`), and names registered without a
//! declaration (`Tag::register`, as a data file may), in random order. After every step every name of the case is looked up and compared with the
//! model: registered or not, its payload type, its retention, its parent.
//!
//! The registry runs no user code (it stores names, type ids and layouts), so the user-code points
//! here are the keys' uses themselves, including the panicking one of a conflicting key.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

use lumina::bus::{DeclaredTag, Tag, TagConflict, TagKey, UnknownTag, register_tags};
use proptest::prelude::*;

/// The relative names a case declares under its own root (`Model<n>`).
const NAMES: [&str; 5] = ["A", "A.B", "A.B.C", "B", "B.A"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    U32,
    Str,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::U32 => std::any::type_name::<u32>(),
            Ty::Str => std::any::type_name::<String>(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Decl {
    name: usize,
    ty: Ty,
    retained: bool,
}

#[derive(Clone, Debug)]
enum Op {
    RegisterSet(usize),
    UseKey(usize, usize),
    /// `Tag::register(name)`: a name registered without a declaration.
    RegisterName(usize),
}

#[derive(Clone, Debug)]
struct Script {
    sets: Vec<Vec<Decl>>,
    ops: Vec<Op>,
}

fn script() -> impl Strategy<Value = Script> {
    let decl = (
        0..NAMES.len(),
        prop_oneof![Just(Ty::U32), Just(Ty::Str)],
        any::<bool>(),
    )
        .prop_map(|(name, ty, retained)| Decl { name, ty, retained });
    prop::collection::vec(prop::collection::vec(decl, 1..4), 1..4).prop_flat_map(|sets| {
        let set_count = sets.len();
        let op = prop_oneof![
            (0..set_count).prop_map(Op::RegisterSet),
            (0..set_count, 0..4_usize).prop_map(move |(set, key)| Op::UseKey(set, key)),
            (0..NAMES.len()).prop_map(Op::RegisterName),
        ];
        (Just(sets), prop::collection::vec(op, 1..12)).prop_map(|(sets, ops)| Script { sets, ops })
    })
}

/// A declared key, leaked like a `static` of `gameplay_tags!`.
#[derive(Clone, Copy)]
enum Key {
    U32(&'static TagKey<u32>),
    Str(&'static TagKey<String>),
}

impl Key {
    fn new(name: &'static str, decl: Decl) -> Self {
        match decl.ty {
            Ty::U32 => Key::U32(Box::leak(Box::new(TagKey::new(name, decl.retained)))),
            Ty::Str => Key::Str(Box::leak(Box::new(TagKey::new(name, decl.retained)))),
        }
    }

    fn declared(self) -> &'static dyn DeclaredTag {
        match self {
            Key::U32(key) => key,
            Key::Str(key) => key,
        }
    }

    /// First use: the tag, or the panic's message.
    fn tag(self) -> Result<Tag, String> {
        catch_unwind(AssertUnwindSafe(|| match self {
            Key::U32(key) => key.tag(),
            Key::Str(key) => key.tag(),
        }))
        .map_err(|panic| panic.downcast_ref::<String>().cloned().unwrap_or_default())
    }
}

/// What the model says one key registration gives: the tag's name, or the conflict's
/// (name, declared, conflicting).
type Outcome = Result<String, (String, &'static str, &'static str)>;

#[derive(Default)]
struct Model {
    /// Registered names, with the payload type of their first typed declaration.
    names: BTreeMap<String, Option<Ty>>,
    retained: BTreeSet<String>,
    /// Keys (set, index) that registered successfully.
    resolved: BTreeSet<(usize, usize)>,
}

impl Model {
    fn register_name(&mut self, name: &str) {
        let mut prefix = String::new();
        for segment in name.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(segment);
            self.names.entry(prefix.clone()).or_insert(None);
        }
    }

    fn register_key(&mut self, at: (usize, usize), name: &str, decl: Decl) -> Outcome {
        if self.resolved.contains(&at) {
            return Ok(name.to_owned());
        }
        self.register_name(name);
        let slot = self.names.get_mut(name).unwrap();
        match *slot {
            Some(ty) if ty != decl.ty => return Err((name.to_owned(), ty.name(), decl.ty.name())),
            _ => *slot = Some(decl.ty),
        }
        if decl.retained {
            self.retained.insert(name.to_owned());
        }
        self.resolved.insert(at);
        Ok(name.to_owned())
    }
}

fn conflict_outcome(conflict: &TagConflict) -> (String, &'static str, &'static str) {
    (
        conflict.tag.name().to_owned(),
        conflict.declared,
        conflict.conflicting,
    )
}

fn quiet_conflict_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info.payload().downcast_ref::<String>();
            if !message.is_some_and(|message| message.starts_with("lumina: gameplay tag")) {
                default(info);
            }
        }));
    });
}

fn check_names(root: &str, model: &Model) -> Result<(), TestCaseError> {
    let mut all: BTreeSet<String> = NAMES.iter().map(|name| format!("{root}.{name}")).collect();
    all.insert(root.to_owned());
    for name in all {
        match (Tag::find(&name), model.names.get(&name)) {
            (Err(error), None) => {
                prop_assert_eq!(error, UnknownTag::NotRegistered(name.clone()));
            }
            (Ok(tag), Some(ty)) => {
                prop_assert_eq!(tag.name(), name.as_str());
                prop_assert_eq!(tag.payload_type_name(), ty.map(Ty::name), "{}", name);
                prop_assert_eq!(
                    tag.is_retained(),
                    model.retained.contains(&name),
                    "{}",
                    name
                );
                let parent = name.rsplit_once('.').map(|(parent, _)| parent);
                prop_assert_eq!(tag.parent().map(Tag::name), parent);
            }
            (real, model) => {
                prop_assert!(false, "{name}: registry {real:?}, model {model:?}");
            }
        }
    }
    Ok(())
}

fn run(script: &Script) -> Result<(), TestCaseError> {
    static CASE: AtomicU32 = AtomicU32::new(0);
    let root = format!("Model{}", CASE.fetch_add(1, Ordering::Relaxed));
    let names: Vec<&'static str> = NAMES
        .iter()
        .map(|name| &*Box::leak(format!("{root}.{name}").into_boxed_str()))
        .collect();
    let sets: Vec<Vec<Key>> = script
        .sets
        .iter()
        .map(|set| {
            set.iter()
                .map(|&decl| Key::new(names[decl.name], decl))
                .collect()
        })
        .collect();
    let mut model = Model::default();
    for op in &script.ops {
        match *op {
            Op::RegisterSet(set) => {
                let declared: Vec<&dyn DeclaredTag> =
                    sets[set].iter().map(|key| key.declared()).collect();
                let real = register_tags(&declared).map_err(|conflict| conflict_outcome(&conflict));
                let mut expected = Ok(());
                for (index, &decl) in script.sets[set].iter().enumerate() {
                    let outcome = model.register_key((set, index), names[decl.name], decl);
                    if let (Err(conflict), Ok(())) = (outcome, &expected) {
                        expected = Err(conflict);
                    }
                }
                prop_assert_eq!(real, expected, "register set {}", set);
            }
            Op::UseKey(set, key) => {
                let Some(&decl) = script.sets[set].get(key) else {
                    continue;
                };
                let real = sets[set][key].tag();
                match model.register_key((set, key), names[decl.name], decl) {
                    Ok(name) => prop_assert_eq!(real.map(Tag::name), Ok(&*name)),
                    Err((name, declared, conflicting)) => {
                        let message = real.expect_err("a conflicting key panics when used");
                        let expected = format!(
                            "`{name}` is declared with payload `{declared}` and again with \
                             payload `{conflicting}`"
                        );
                        prop_assert!(message.contains(&expected), "{}", message);
                    }
                }
            }
            Op::RegisterName(name) => {
                let real = Tag::register(names[name]).map(Tag::name);
                prop_assert_eq!(real, Ok(names[name]));
                model.register_name(names[name]);
            }
        }
        check_names(&root, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn gb1_the_tag_registry_behaves_like_its_model_across_sets_uses_and_finds(script in script()) {
        quiet_conflict_panics();
        run(&script)?;
    }
}
