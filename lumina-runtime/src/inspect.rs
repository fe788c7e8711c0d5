//! See who hears what (V1): an [`Inspector`] the game hands the sources it wants drawn (named
//! delegates, core delegates, script delegates, a message bus, an event processor and its
//! viewports) collects their listings into one plain value, a [`NotificationGraph`]: each source,
//! each subscriber with its bind site, owner state, priority, muted and one-shot state, and for
//! the bus each tag with its exact and partial listeners and their entity filters.
//!
//! The graph renders as Graphviz DOT ([`NotificationGraph::to_dot`], no dependency), as an SVG
//! laid out in Rust (`to_svg`, feature `svg`, no `dot` program needed), and serializes with serde
//! (feature `serde`). Nothing is registered anywhere: the inspector sees only what it is handed,
//! at the moment it is handed (rule R1: no global table of addresses).
//!
//! ```
//! use lumina::MulticastDelegate;
//! use lumina::inspect::Inspector;
//!
//! let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
//! let _hud = on_damage.add_lambda(|_| {});
//!
//! let mut inspector = Inspector::new();
//! inspector.add("on_damage", &on_damage);
//! let graph = inspector.finish();
//! assert_eq!(graph.sources[0].subscribers.len(), 1);
//! std::fs::write(std::env::temp_dir().join("on_damage.dot"), graph.to_dot()).unwrap();
//! ```

use std::fmt::{self, Write as _};

use crate::bind_site::{OwnerState, Subscription};
use crate::bus::{EntityId, MessageBus};
use crate::core_delegates::{CoreDelegates, LifecycleSignal};
use crate::event::{EventProcessor, InputLayer, InputViewportRegistry};
use crate::multicast::{MulticastDelegate, Registration};
use crate::script_delegate::{ScriptDelegate, ScriptDelegateBase};
use crate::sync_delegate::SyncMulticastDelegate;

/// Everything the inspector collected: the sources in the order they were handed to it.
///
/// ```
/// use lumina::inspect::NotificationGraph;
///
/// let empty = NotificationGraph::default();
/// assert!(empty.sources.is_empty());
/// assert!(empty.to_dot().starts_with("digraph notifications {"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NotificationGraph {
    /// Each source handed to the inspector, in that order.
    pub sources: Vec<Source>,
}

/// One thing that notifies: a delegate, a bus, a processor or a viewport registry.
///
/// ```
/// use lumina::inspect::{Inspector, SourceKind};
/// use lumina::core_delegates::LifecycleSignal;
///
/// let on_ready = LifecycleSignal::new("on_ready");
/// let mut inspector = Inspector::new();
/// inspector.add("on_ready", &on_ready);
/// let source = &inspector.graph().sources[0];
/// assert_eq!((source.name.as_str(), source.kind), ("on_ready", SourceKind::CoreDelegate));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Source {
    /// The name the game gave it.
    pub name: String,
    /// What kind of source it is.
    pub kind: SourceKind,
    /// Its subscribers in the order they run (for a bus: by tag, then entity-less before
    /// per-entity, then in dispatch order; for viewports: the order added, topmost last).
    pub subscribers: Vec<Subscriber>,
}

/// What kind of [`Source`] it is.
///
/// ```
/// use lumina::inspect::SourceKind;
///
/// assert_eq!(SourceKind::Bus.to_string(), "message bus");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SourceKind {
    /// A multicast delegate, declared or not, or a view of one.
    Delegate,
    /// One of the engine's core delegates (a lifecycle signal or a named core delegate).
    CoreDelegate,
    /// A script delegate (native and managed listeners).
    ScriptDelegate,
    /// A thread-safe delegate.
    SyncDelegate,
    /// A gameplay message bus.
    Bus,
    /// An input event processor: its subscribers are its handlers, by layer.
    Processor,
    /// An input viewport registry: its subscribers are its viewports.
    Viewports,
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SourceKind::Delegate => "delegate",
            SourceKind::CoreDelegate => "core delegate",
            SourceKind::ScriptDelegate => "script delegate",
            SourceKind::SyncDelegate => "thread-safe delegate",
            SourceKind::Bus => "message bus",
            SourceKind::Processor => "event processor",
            SourceKind::Viewports => "viewports",
        })
    }
}

/// Where a subscription was made: an owned copy of its [`BindSite`](crate::bind_site::BindSite).
/// Displays as `file:line`.
///
/// ```
/// use lumina::inspect::Site;
///
/// let site = Site { file: "src/hud.rs".into(), line: 12, column: 5 };
/// assert_eq!(site.to_string(), "src/hud.rs:12");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Site {
    /// The source file.
    pub file: String,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One subscriber of a [`Source`].
///
/// ```
/// use lumina::MulticastDelegate;
/// use lumina::inspect::Inspector;
///
/// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
/// let line = line!() + 1;
/// let handle = on_tick.add_lambda(|| {});
/// assert!(on_tick.set_priority(handle, 7));
/// let mut inspector = Inspector::new();
/// inspector.add("on_tick", &on_tick);
/// let subscriber = &inspector.graph().sources[0].subscribers[0];
/// assert_eq!(subscriber.priority, 7);
/// assert_eq!(subscriber.site.as_ref().unwrap().line, line);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Subscriber {
    /// Its handle's number (for a viewport: the viewport's id).
    pub id: u64,
    /// Where it was subscribed (`None` for viewports, and past a million distinct places).
    pub site: Option<Site>,
    /// The owner of a member binding.
    pub owner: OwnerState,
    /// Its priority (for a processor's handler: its layer's).
    pub priority: i32,
    /// Whether it is muted (blocked, X4).
    pub muted: bool,
    /// Whether it is one-shot (X3); a bus listener added with a `listen_*_once` method too.
    pub one_shot: bool,
    /// Whether it is self-aware (X6): its callable receives its own subscription (for a
    /// viewport: its handler receives its own viewport).
    pub self_aware: bool,
    /// Whether it is a pending future rather than a callable: a bus `next()` waiting on its tag
    /// (X5), which hears the next matching message once. Its site is the `next()` call's.
    #[cfg_attr(feature = "serde", serde(default))]
    pub future: bool,
    /// The game module whose code subscribed it, by the number of its
    /// [`ModuleId`](crate::module::ModuleId) (`module#N`), while that module is loaded (MB4).
    pub module: Option<u64>,
    /// For a bus listener: the tag it listens to, how, and for which entity.
    pub channel: Option<Channel>,
    /// For a viewport: its rectangle and focus.
    pub viewport: Option<Viewport>,
}

/// What a bus listener listens to.
///
/// ```
/// use lumina::inspect::Channel;
///
/// let channel = Channel { tag: "Combat.Damage".into(), partial: true, entity: Some("7".into()) };
/// assert_eq!(channel.to_string(), "partial, entity 7");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Channel {
    /// The tag's name.
    pub tag: String,
    /// Whether it hears every descendant of the tag too (a partial listener, GB2).
    pub partial: bool,
    /// The only entity it hears (its `Debug` text), if any (GB4).
    pub entity: Option<String>,
}

impl fmt::Display for Channel {
    /// `exact` or `partial`, then `, entity <id>` for an entity filter.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.partial { "partial" } else { "exact" })?;
        match &self.entity {
            Some(entity) => write!(f, ", entity {entity}"),
            None => Ok(()),
        }
    }
}

/// A viewport of an [`InputViewportRegistry`]: its rectangle in window coordinates.
///
/// ```
/// use lumina::inspect::Viewport;
///
/// let view = Viewport { x: 0.0, y: 0.0, width: 800.0, height: 600.0, focused: true };
/// assert_eq!(view.to_string(), "800x600 at (0, 0), focused");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Viewport {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub width: f32,
    /// Height.
    pub height: f32,
    /// Whether it has the keyboard focus.
    pub focused: bool,
}

impl fmt::Display for Viewport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{} at ({}, {})",
            self.width, self.height, self.x, self.y
        )?;
        if self.focused {
            f.write_str(", focused")?;
        }
        Ok(())
    }
}

impl Subscriber {
    fn from_subscription(subscription: &Subscription) -> Self {
        Subscriber {
            id: subscription.handle.id(),
            site: subscription.bind_site.map(|site| Site {
                file: site.file.to_owned(),
                line: site.line,
                column: site.column,
            }),
            owner: subscription.owner,
            priority: subscription.priority,
            muted: subscription.muted,
            one_shot: subscription.one_shot,
            self_aware: subscription.self_aware,
            future: false,
            module: crate::track::module_of(subscription.handle.id()),
            channel: None,
            viewport: None,
        }
    }

    /// Its label in a drawing: the bind site (for a future, `future: next()` before it), then
    /// what differs from a plain subscriber (`priority 5`, `muted`, `one-shot`, `self-aware`,
    /// `owner alive` / `owner dropped`, `module#N`), each on a line.
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use lumina::inspect::Inspector;
    ///
    /// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    /// let handle = on_tick.add_lambda(|| {});
    /// assert!(on_tick.block(handle));
    /// let mut inspector = Inspector::new();
    /// inspector.add("on_tick", &on_tick);
    /// let label = inspector.graph().sources[0].subscribers[0].label();
    /// assert!(label.starts_with(file!()) && label.ends_with("\nmuted"), "{label}");
    /// ```
    pub fn label(&self) -> String {
        let mut label = match (&self.site, &self.viewport) {
            (_, Some(viewport)) => format!("viewport {}\n{viewport}", self.id),
            (Some(site), None) => site.to_string(),
            (None, None) => "unknown place".to_owned(),
        };
        if self.future {
            label.insert_str(0, "future: next()\n");
        }
        if self.priority != 0 {
            let _ = write!(label, "\npriority {}", self.priority);
        }
        if self.muted {
            label.push_str("\nmuted");
        }
        if self.one_shot {
            label.push_str("\none-shot");
        }
        if self.self_aware {
            label.push_str("\nself-aware");
        }
        match self.owner {
            OwnerState::NoOwner => {}
            OwnerState::Alive => label.push_str("\nowner alive"),
            OwnerState::Dropped => label.push_str("\nowner dropped"),
        }
        if let Some(module) = self.module {
            let _ = write!(label, "\nmodule#{module}");
        }
        label
    }
}

/// Something the [`Inspector`] can draw: it lists itself as a [`Source`].
///
/// Implemented by every notifying type of lumina (multicast delegates and their views, core
/// delegates and the whole [`CoreDelegates`] set, script delegates, thread-safe delegates, the
/// bus, the processor and the viewport registry), and by a listing (`[Subscription]`), which is
/// what a declared delegate's `subscriptions()` returns.
///
/// ```
/// use lumina::MulticastDelegate;
/// use lumina::inspect::{Inspect, NotificationGraph};
///
/// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
/// let _a = on_tick.add_lambda(|| {});
/// let mut graph = NotificationGraph::default();
/// on_tick.inspect("on_tick", &mut graph);
/// assert_eq!(graph.sources[0].subscribers.len(), 1);
/// ```
pub trait Inspect {
    /// Adds `self` to `graph` as a source named `name` (several, for a set). O(n) in its
    /// subscribers; allocates.
    fn inspect(&self, name: &str, graph: &mut NotificationGraph);
}

fn listing(graph: &mut NotificationGraph, name: &str, kind: SourceKind, list: &[Subscription]) {
    graph.sources.push(Source {
        name: name.to_owned(),
        kind,
        subscribers: list.iter().map(Subscriber::from_subscription).collect(),
    });
}

impl Inspect for [Subscription] {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::Delegate, self);
    }
}

impl Inspect for Vec<Subscription> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::Delegate, self);
    }
}

impl<F: ?Sized + 'static> Inspect for MulticastDelegate<F> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::Delegate, &self.subscriptions());
    }
}

impl<F: ?Sized + 'static> Inspect for Registration<'_, F> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::Delegate, &self.subscriptions());
    }
}

impl<F: ?Sized + Send + Sync + 'static> Inspect for SyncMulticastDelegate<F> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::SyncDelegate, &self.subscriptions());
    }
}

impl Inspect for LifecycleSignal {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::CoreDelegate, &self.subscriptions());
    }
}

impl Inspect for ScriptDelegateBase {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(
            graph,
            name,
            SourceKind::ScriptDelegate,
            &self.subscriptions(),
        );
    }
}

impl<P: crate::reflect::ScriptPayload> Inspect for ScriptDelegate<P> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        self.base().inspect(name, graph);
    }
}

impl Inspect for CoreDelegates {
    /// Adds each core delegate as its own source, named `<name>.<delegate>` (for example
    /// `core.on_post_engine_init`).
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        let core: [(&str, Vec<Subscription>); 11] = [
            (
                "on_pre_engine_init",
                self.on_pre_engine_init().subscriptions(),
            ),
            (
                "on_post_engine_init",
                self.on_post_engine_init().subscriptions(),
            ),
            (
                "on_pre_engine_shutdown",
                self.on_pre_engine_shutdown().subscriptions(),
            ),
            ("on_module_loaded", self.on_module_loaded().subscriptions()),
            (
                "on_module_unloaded",
                self.on_module_unloaded().subscriptions(),
            ),
            (
                "post_world_unload",
                self.post_world_unload().subscriptions(),
            ),
            (
                "on_world_travelled",
                self.on_world_travelled().subscriptions(),
            ),
            (
                "on_content_file_modified",
                self.on_content_file_modified().subscriptions(),
            ),
            (
                "on_content_file_renamed",
                self.on_content_file_renamed().subscriptions(),
            ),
            (
                "on_settings_saved",
                self.on_settings_saved().subscriptions(),
            ),
            (
                "on_game_quit_requested",
                self.on_game_quit_requested().subscriptions(),
            ),
        ];
        for (delegate, list) in core {
            listing(
                graph,
                &format!("{name}.{delegate}"),
                SourceKind::CoreDelegate,
                &list,
            );
        }
    }
}

impl<E: EntityId> Inspect for MessageBus<E> {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        let subscribers = self
            .subscriptions()
            .iter()
            .map(|listener| Subscriber {
                channel: Some(Channel {
                    tag: listener.tag.to_string(),
                    partial: listener.partial,
                    entity: listener.entity.map(|entity| format!("{entity:?}")),
                }),
                future: listener.future,
                ..Subscriber::from_subscription(&listener.subscription)
            })
            .collect();
        graph.sources.push(Source {
            name: name.to_owned(),
            kind: SourceKind::Bus,
            subscribers,
        });
    }
}

impl Inspect for EventProcessor {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        listing(graph, name, SourceKind::Processor, &self.subscriptions());
    }
}

impl Inspect for InputViewportRegistry {
    fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
        let subscribers = self
            .listing()
            .into_iter()
            .map(|viewport| Subscriber {
                id: viewport.id,
                site: None,
                owner: OwnerState::NoOwner,
                priority: 0,
                muted: viewport.muted,
                one_shot: viewport.kind.one_shot,
                self_aware: viewport.kind.self_aware,
                future: false,
                module: None,
                channel: None,
                viewport: Some(Viewport {
                    x: viewport.rect.origin.x,
                    y: viewport.rect.origin.y,
                    width: viewport.rect.size.x,
                    height: viewport.rect.size.y,
                    focused: viewport.focused,
                }),
            })
            .collect();
        graph.sources.push(Source {
            name: name.to_owned(),
            kind: SourceKind::Viewports,
            subscribers,
        });
    }
}

/// A source behind a reference or a shared pointer (an `Rc<InputViewportRegistry>`, an
/// `Arc<SyncMulticastDelegate<..>>`) is listed as the source itself.
macro_rules! inspect_through {
    ($($pointer:ty),*) => {$(
        impl<T: Inspect + ?Sized> Inspect for $pointer {
            fn inspect(&self, name: &str, graph: &mut NotificationGraph) {
                (**self).inspect(name, graph);
            }
        }
    )*};
}
inspect_through!(&T, std::rc::Rc<T>, std::sync::Arc<T>);

/// Collects what the game hands it into a [`NotificationGraph`]. Each call lists its source at
/// once (O(n) in that source's subscribers, allocates); nothing is kept but the listing.
///
/// ```
/// use lumina::bus::{MessageBus, Tag};
/// use lumina::event::EventProcessor;
/// use lumina::inspect::Inspector;
///
/// let bus: MessageBus = MessageBus::new();
/// let processor = EventProcessor::new();
/// let mut inspector = Inspector::new();
/// inspector.add("bus", &bus).add("input", &processor);
/// assert_eq!(inspector.finish().sources.len(), 2);
/// ```
#[derive(Debug, Default)]
pub struct Inspector {
    graph: NotificationGraph,
}

impl Inspector {
    /// An inspector with nothing collected yet. O(1).
    ///
    /// ```
    /// assert!(lumina::inspect::Inspector::new().graph().sources.is_empty());
    /// ```
    pub fn new() -> Self {
        Inspector::default()
    }

    /// Lists `source` under `name`: the one way to hand the inspector anything that is
    /// [`Inspect`]. O(n) in its subscribers (a bus: plus sorting its channels).
    ///
    /// - a delegate (multicast, its [`Registration`] view, core, script or thread-safe), or a
    ///   declared delegate's listing (`on_hit.subscriptions()`): one source;
    /// - [`CoreDelegates`]: each core delegate as its own source, named `<name>.<delegate>`
    ///   (`add("core", CoreDelegates::get())` gives `core.on_post_engine_init`, ...);
    /// - a [`MessageBus`]: its listeners, with their tags, partial flags and entity filters;
    /// - an [`EventProcessor`]: its handlers, by layer;
    /// - an [`InputViewportRegistry`]: its live viewports.
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use lumina::bus::MessageBus;
    /// use lumina::core_delegates::CoreDelegates;
    /// use lumina::event::{EventProcessor, InputViewportRegistry};
    /// use lumina::inspect::{Inspector, SourceKind};
    ///
    /// lumina::main_thread::designate_game_thread();
    /// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    /// let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    /// let _hud = on_damage.add_lambda(|_| {});
    /// let bus: MessageBus = MessageBus::new();
    /// let processor = EventProcessor::new();
    /// let registry = InputViewportRegistry::new();
    /// let mut inspector = Inspector::new();
    /// inspector
    ///     .add("on_tick", &on_tick)
    ///     .add("on_damage", &on_damage.subscriptions())
    ///     .add("gameplay", &bus)
    ///     .add("input", &processor)
    ///     .add("viewports", &registry)
    ///     .add("core", CoreDelegates::get());
    /// let graph = inspector.graph();
    /// assert_eq!(graph.sources[0].name, "on_tick");
    /// assert_eq!(graph.sources[1].subscribers.len(), 1);
    /// assert_eq!(graph.sources[2].kind, SourceKind::Bus);
    /// assert_eq!(graph.sources[3].kind, SourceKind::Processor);
    /// assert_eq!(graph.sources[4].kind, SourceKind::Viewports);
    /// assert_eq!(graph.sources[6].name, "core.on_post_engine_init");
    /// ```
    pub fn add<S: Inspect + ?Sized>(&mut self, name: &str, source: &S) -> &mut Self {
        source.inspect(name, &mut self.graph);
        self
    }

    /// What was collected so far. O(1).
    ///
    /// ```
    /// assert!(lumina::inspect::Inspector::new().graph().sources.is_empty());
    /// ```
    pub fn graph(&self) -> &NotificationGraph {
        &self.graph
    }

    /// The collected graph. O(1).
    ///
    /// ```
    /// let graph = lumina::inspect::Inspector::new().finish();
    /// assert_eq!(graph, Default::default());
    /// ```
    pub fn finish(self) -> NotificationGraph {
        self.graph
    }
}

/// A DOT string literal of `text` (quotes and backslashes escaped, newlines as `\n`).
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The name of a processor layer's priority.
fn layer_name(priority: i32) -> String {
    let named = [
        InputLayer::Default,
        InputLayer::EditorChrome,
        InputLayer::Viewport,
    ]
    .into_iter()
    .find(|layer| layer.priority() == priority);
    match named {
        Some(layer) => format!("layer {layer:?} ({priority})"),
        None => format!("layer {priority}"),
    }
}

impl NotificationGraph {
    /// The graph in Graphviz's DOT language, left to right: one node per source (`s<i>`, labelled
    /// with its name and kind), one per subscriber (`s<i>_n<j>`, labelled with
    /// [`Subscriber::label`]), and an edge from the source to each subscriber labelled with its
    /// place in the call order (`#1`, `#2`...). A bus's subscribers hang under one node per tag,
    /// and a processor's under one node per layer (`s<i>_g<k>`, labelled `tag <name>` or
    /// `layer <name> (<priority>)`); a bus listener's edge adds `exact` or `partial` and its
    /// entity filter. Muted subscribers and dropped owners are filled grey; a pending future's
    /// node is dashed. O(n) in the subscribers.
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use lumina::inspect::Inspector;
    ///
    /// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    /// let _a = on_tick.add_lambda(|| {});
    /// let mut inspector = Inspector::new();
    /// inspector.add("on_tick", &on_tick);
    /// let dot = inspector.graph().to_dot();
    /// assert!(dot.contains("s0 -> s0_n0 [label=\"#1\"];"), "{dot}");
    /// ```
    pub fn to_dot(&self) -> String {
        let mut dot = String::from(
            "digraph notifications {\n  rankdir=LR;\n  node [shape=box, fontsize=12];\n",
        );
        for (i, source) in self.sources.iter().enumerate() {
            let _ = writeln!(
                dot,
                "  s{i} [label={}, shape=box, style=filled, fillcolor=\"#cfe2ff\"];",
                quoted(&format!("{}\n({})", source.name, source.kind))
            );
            // The intermediate nodes of a bus (tags) or a processor (layers), in first-seen order.
            let mut groups: Vec<String> = Vec::new();
            for (j, subscriber) in source.subscribers.iter().enumerate() {
                let group = match (source.kind, &subscriber.channel) {
                    (SourceKind::Bus, Some(channel)) => Some(format!("tag {}", channel.tag)),
                    (SourceKind::Processor, _) => Some(layer_name(subscriber.priority)),
                    _ => None,
                };
                let parent = match group {
                    Some(group) => {
                        let k = groups.iter().position(|g| *g == group).unwrap_or_else(|| {
                            let _ = writeln!(
                                dot,
                                "  s{i}_g{} [label={}, shape=box, style=filled, fillcolor=\"#fff3cd\"];\n  s{i} -> s{i}_g{};",
                                groups.len(),
                                quoted(&group),
                                groups.len()
                            );
                            groups.push(group);
                            groups.len() - 1
                        });
                        format!("s{i}_g{k}")
                    }
                    None => format!("s{i}"),
                };
                let fill = if subscriber.muted || subscriber.owner == OwnerState::Dropped {
                    "#e2e3e5"
                } else {
                    "white"
                };
                // A pending future is drawn dashed: it waits, and hears once.
                let style = if subscriber.future {
                    "\"filled,dashed\""
                } else {
                    "filled"
                };
                let _ = writeln!(
                    dot,
                    "  s{i}_n{j} [label={}, shape=box, style={style}, fillcolor=\"{fill}\"];",
                    quoted(&subscriber.label())
                );
                let edge = match &subscriber.channel {
                    Some(channel) => format!("#{} {channel}", j + 1),
                    None => format!("#{}", j + 1),
                };
                let _ = writeln!(dot, "  {parent} -> s{i}_n{j} [label={}];", quoted(&edge));
            }
        }
        dot.push_str("}\n");
        dot
    }

    /// The graph drawn as an SVG document: [`to_dot`](Self::to_dot) laid out and rendered by
    /// the `layout-rs` crate, in Rust (no Graphviz program needed). Every subscriber's
    /// [label](Subscriber::label) appears in it as text. Roughly O(n²) in the nodes (layered
    /// layout); for diagnostics.
    ///
    /// ```
    /// use lumina::MulticastDelegate;
    /// use lumina::inspect::Inspector;
    ///
    /// let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    /// let _a = on_tick.add_lambda(|| {});
    /// let mut inspector = Inspector::new();
    /// inspector.add("on_tick", &on_tick);
    /// let svg = inspector.graph().to_svg();
    /// assert!(svg.contains("<svg") && svg.contains(">on_tick</tspan>"));
    /// ```
    #[cfg(feature = "svg")]
    #[cfg_attr(docsrs, doc(cfg(feature = "svg")))]
    pub fn to_svg(&self) -> String {
        use layout::backends::svg::SVGWriter;
        use layout::gv::{DotParser, GraphBuilder};

        let dot = self.to_dot();
        let mut parser = DotParser::new(&dot);
        let ast = parser
            .process()
            // The DOT is this module's own output; a parse error is a bug here.
            .unwrap_or_else(|error| panic!("lumina: the notification graph's DOT: {error}"));
        let mut builder = GraphBuilder::new();
        builder.visit_graph(&ast);
        let mut visual = builder.get();
        let mut svg = SVGWriter::new();
        visual.do_it(false, false, false, &mut svg);
        svg.finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::Inspector;
    use crate::multicast::MulticastDelegate;
    use crate::track::{add_range, code_of, remove_range};
    use std::rc::Rc;

    /// V1, MB4: a subscription whose code a loaded game module holds is listed with that
    /// module; the others with none.
    #[test]
    fn v1_a_subscriber_of_a_module_is_listed_with_it() {
        const FAKE: u64 = u64::MAX - 36;
        let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
        let module_code: Rc<dyn Fn()> = Rc::new(|| {});
        // As the module tracker's own tests: a placeholder range that no code word falls in
        // (some module must be loaded for code to be looked at), then exactly this closure's
        // vtable, as a loaded library's range.
        #[cfg(not(miri))]
        add_range(FAKE, usize::MAX - 1, usize::MAX);
        #[cfg(miri)]
        add_range(FAKE, 0, 1);
        let vtable = code_of(&*module_code).expect("a module is loaded").vtable();
        add_range(FAKE, vtable, vtable + 1);
        let _engine = on_tick.add_lambda(|| {});
        let game = on_tick.add_shared(module_code);
        let mut inspector = Inspector::new();
        inspector.add("on_tick", &on_tick);
        assert!(on_tick.remove(game));
        remove_range(FAKE);
        let subscribers = &inspector.graph().sources[0].subscribers;
        let modules: Vec<Option<u64>> = subscribers.iter().map(|s| s.module).collect();
        assert_eq!(modules, [None, Some(FAKE)]);
        assert!(
            subscribers[1]
                .label()
                .ends_with(&format!("\nmodule#{FAKE}"))
        );
    }
}
