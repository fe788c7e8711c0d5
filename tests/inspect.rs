//! V1, V3: the notification graph as a user looks at it. The tests build a world of every kind of
//! source, hand it to an `Inspector`, then read the DOT back with a small parser (nodes, edges,
//! labels) and check its structure: every source, every subscriber edge in call order, the bind
//! sites (file:line of this file's own subscriptions), priorities and flags, the bus's tags with
//! exact, partial and entity listeners, the processor's layers and the viewports. The graph
//! round-trips through JSON (feature `serde`), and the SVG (feature `svg`) holds every
//! subscriber's label.

use std::collections::HashMap;
use std::rc::Rc;

use lumina::SyncMulticastDelegate;
use lumina::bus::{MessageBus, TagKey};
use lumina::core_delegates::LifecycleSignal;
use lumina::event::{
    EventProcessor, InputLayer, InputViewportRegistry, KeyboardEvent, MouseEvent, Rect, category,
};
use lumina::inspect::{Inspector, NotificationGraph, SourceKind};
use lumina::{MulticastDelegate, ScriptDelegate, declare_multicast_delegate};

#[cfg(feature = "svg")]
mod support;

declare_multicast_delegate!(
    /// A declared delegate, listed through its `subscriptions()`.
    OnHit(amount: u32)
);

static DAMAGE: TagKey<u32> = TagKey::new("InspectTest.Damage", false);

/// Where each subscription of [`world`] was made (this file's lines), by name.
type Lines = HashMap<&'static str, u32>;

/// Everything the world holds, so its subscriptions stay alive while it is inspected.
struct World {
    _keep: Vec<Box<dyn std::any::Any>>,
    graph: NotificationGraph,
    lines: Lines,
}

/// One source of each kind, with subscribers of each flavour; their lines recorded.
fn world() -> World {
    let mut lines = Lines::new();
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();

    let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let owner = Rc::new(0_u32);
    lines.insert("plain", line!() + 1);
    let _plain = on_damage.add_lambda(|_| {});
    lines.insert("prioritized", line!() + 1);
    let prioritized = on_damage.add_lambda(|_| {});
    assert!(on_damage.set_priority(prioritized, 5));
    lines.insert("muted", line!() + 1);
    let muted = on_damage.add_lambda(|_| {});
    assert!(on_damage.block(muted));
    lines.insert("once", line!() + 1);
    let _once = on_damage.subscribe().once().add_lambda(|_| {});
    lines.insert("member", line!() + 1);
    let _member = on_damage.add_member(&owner, |_, _| {});
    keep.push(Box::new(owner));

    let on_hit = OnHit::new();
    lines.insert("declared", line!() + 1);
    let _declared = on_hit.add_lambda(|_| {});

    let on_ready = LifecycleSignal::new("on_ready");
    lines.insert("core", line!() + 1);
    let _core = on_ready.add_lambda(|| {});

    let on_spawned: ScriptDelegate<()> = ScriptDelegate::new();
    lines.insert("script", line!() + 1);
    let _script = on_spawned.add_lambda(|_| {});

    let on_loaded: SyncMulticastDelegate<dyn Fn() + Send + Sync> = SyncMulticastDelegate::new();
    lines.insert("sync", line!() + 1);
    let _sync = on_loaded.add_lambda(|| {});

    let bus: MessageBus<u32> = MessageBus::new();
    lines.insert("bus_exact", line!() + 1);
    let _exact = bus.listen(&DAMAGE, |_, _| {});
    let parent = DAMAGE.tag().parent().expect("InspectTest");
    lines.insert("bus_partial_entity", line!() + 1);
    let _partial = bus.subscribe().partial().entity(7).listen(parent, |_| {});

    let processor = EventProcessor::new();
    let viewports = Rc::new(InputViewportRegistry::new());
    lines.insert("viewports", line!() + 1);
    assert!(viewports.register(&processor));
    let view = viewports.add_viewport_handler::<category::Keyboard>(
        Rect::new(0.0, 0.0, 640.0, 480.0),
        |_: KeyboardEvent<'_>| true,
    );
    let layer = InputLayer::EditorChrome;
    lines.insert("chrome", line!() + 1);
    let chrome = processor.add_handler::<category::Mouse>(layer, |_: MouseEvent<'_>| false);

    let mut inspector = Inspector::new();
    inspector
        .add("on_damage", &on_damage)
        .add("on_hit", &on_hit.subscriptions())
        .add("on_ready", &on_ready)
        .add("on_spawned", &on_spawned)
        .add("on_loaded", &on_loaded)
        .add("bus", &bus)
        .add("input", &processor)
        .add("viewports", &viewports);
    keep.push(Box::new(view));
    keep.push(Box::new(chrome));
    World {
        _keep: keep,
        graph: inspector.finish(),
        lines,
    }
}

/// A DOT file as the tests read it: node id -> attributes, and edges with their attributes.
#[derive(Debug, Default)]
struct Dot {
    nodes: HashMap<String, HashMap<String, String>>,
    edges: Vec<(String, String, HashMap<String, String>)>,
}

impl Dot {
    fn label(&self, node: &str) -> &str {
        self.nodes[node]
            .get("label")
            .unwrap_or_else(|| panic!("{node} has a label"))
    }

    /// The edges out of `node`, in file order.
    fn out(&self, node: &str) -> Vec<&(String, String, HashMap<String, String>)> {
        self.edges
            .iter()
            .filter(|(from, _, _)| from == node)
            .collect()
    }
}

/// `key=value, key="value"...` up to the closing `]`; quoted values unescaped.
fn attributes(text: &str) -> HashMap<String, String> {
    let mut attributes = HashMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == ',') {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if key.is_empty() {
            break;
        }
        assert_eq!(chars.next(), Some('='), "attribute {key} has a value");
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(other) => value.push(other),
                        None => panic!("an escape ends the text"),
                    },
                    _ => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',' && *c != ' ')).collect();
        }
        attributes.insert(key.trim().to_owned(), value);
    }
    attributes
}

/// Parses the statements lumina writes: `a [attrs];`, `a -> b [attrs];`, `a -> b;`.
fn parse(dot: &str) -> Dot {
    let mut lines = dot.lines();
    assert_eq!(lines.next(), Some("digraph notifications {"));
    let mut parsed = Dot::default();
    for line in lines {
        let line = line.trim();
        if line == "}" || line.starts_with("rankdir") || line.starts_with("node ") {
            continue;
        }
        let statement = line
            .strip_suffix(';')
            .unwrap_or_else(|| panic!("`{line}` ends with ;"));
        let (head, attrs) = match statement.split_once(" [") {
            Some((head, rest)) => (head, attributes(rest.strip_suffix(']').expect("]"))),
            None => (statement, HashMap::new()),
        };
        match head.split_once(" -> ") {
            Some((from, to)) => parsed.edges.push((from.to_owned(), to.to_owned(), attrs)),
            None => {
                assert!(
                    parsed.nodes.insert(head.to_owned(), attrs).is_none(),
                    "{head} twice"
                );
            }
        }
    }
    parsed
}

/// The subscriber nodes under `source` (through its tag or layer nodes), in call order, with
/// their edge labels.
fn subscribers_of<'a>(dot: &'a Dot, source: &str) -> Vec<(&'a str, &'a str)> {
    let mut found: Vec<(&str, &str)> = Vec::new();
    for (_, to, attrs) in dot.out(source) {
        if to.contains("_g") {
            for (_, leaf, attrs) in dot.out(to) {
                found.push((leaf, attrs["label"].as_str()));
            }
        } else {
            found.push((to, attrs["label"].as_str()));
        }
    }
    found.sort_by_key(|(_, label)| {
        label[1..]
            .split(' ')
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .expect("#n")
    });
    found
}

/// The source node named `name`.
fn source<'a>(dot: &'a Dot, name: &str) -> &'a str {
    let mut matching = dot
        .nodes
        .keys()
        .filter(|id| !id.contains('_') && dot.label(id).split('\n').next() == Some(name));
    let id = matching
        .next()
        .unwrap_or_else(|| panic!("a source node {name}"));
    assert!(matching.next().is_none(), "one source node {name}");
    id
}

fn site(line: u32) -> String {
    format!("{}:{line}", file!())
}

#[test]
fn v1_v3_the_dot_holds_every_source_and_subscriber_with_its_bind_site() {
    let world = world();
    let dot = parse(&world.graph.to_dot());
    let lines = &world.lines;

    // Every source, labelled with its kind.
    for (name, kind) in [
        ("on_damage", "delegate"),
        ("on_hit", "delegate"),
        ("on_ready", "core delegate"),
        ("on_spawned", "script delegate"),
        ("on_loaded", "thread-safe delegate"),
        ("bus", "message bus"),
        ("input", "event processor"),
        ("viewports", "viewports"),
    ] {
        assert_eq!(dot.label(source(&dot, name)), format!("{name}\n({kind})"));
    }
    let sources = dot.nodes.keys().filter(|id| !id.contains('_')).count();
    assert_eq!(sources, 8, "{dot:?}");

    // The multicast delegate: in call order (priority 5 first), each labelled with its bind
    // site and flags, each edge with its place.
    let on_damage = subscribers_of(&dot, source(&dot, "on_damage"));
    let expected = [
        format!("{}\npriority 5", site(lines["prioritized"])),
        site(lines["plain"]),
        format!("{}\nmuted", site(lines["muted"])),
        format!("{}\none-shot", site(lines["once"])),
        format!("{}\nowner alive", site(lines["member"])),
    ];
    let labels: Vec<&str> = on_damage.iter().map(|(node, _)| dot.label(node)).collect();
    assert_eq!(labels, expected);
    let places: Vec<&str> = on_damage.iter().map(|(_, edge)| *edge).collect();
    assert_eq!(places, ["#1", "#2", "#3", "#4", "#5"]);
    // The muted one is drawn grey.
    assert_eq!(dot.nodes[on_damage[2].0]["fillcolor"], "#e2e3e5");
    assert_eq!(dot.nodes[on_damage[1].0]["fillcolor"], "white");

    // One subscriber each, at its line.
    for (name, key) in [
        ("on_hit", "declared"),
        ("on_ready", "core"),
        ("on_spawned", "script"),
        ("on_loaded", "sync"),
    ] {
        let subscribers = subscribers_of(&dot, source(&dot, name));
        let labels: Vec<&str> = subscribers
            .iter()
            .map(|(node, _)| dot.label(node))
            .collect();
        assert_eq!(labels, [site(lines[key])], "{name}");
    }

    // The bus: one node per tag, exact and partial listeners with their entity filter.
    let bus = source(&dot, "bus");
    let tags: Vec<&str> = dot
        .out(bus)
        .iter()
        .map(|(_, to, _)| dot.label(to))
        .collect();
    assert_eq!(tags, ["tag InspectTest", "tag InspectTest.Damage"]);
    let listeners: Vec<(&str, &str)> = subscribers_of(&dot, bus)
        .into_iter()
        .map(|(node, edge)| (dot.label(node), edge))
        .collect();
    assert_eq!(
        listeners,
        [
            (&*site(lines["bus_partial_entity"]), "#1 partial, entity 7"),
            (&*site(lines["bus_exact"]), "#2 exact"),
        ]
    );

    // The processor: one node per layer, the viewport registry above the chrome.
    let input = source(&dot, "input");
    let layers: Vec<&str> = dot
        .out(input)
        .iter()
        .map(|(_, to, _)| dot.label(to))
        .collect();
    assert_eq!(
        layers,
        ["layer Viewport (1000)", "layer EditorChrome (500)"]
    );
    let handlers: Vec<&str> = subscribers_of(&dot, input)
        .into_iter()
        .map(|(node, _)| dot.label(node))
        .collect();
    assert_eq!(
        handlers,
        [
            // Handlers are held weakly: their owner is the handler itself.
            format!("{}\npriority 1000\nowner alive", site(lines["viewports"])),
            format!("{}\npriority 500\nowner alive", site(lines["chrome"])),
        ]
    );

    // The viewports: the game view, with its rectangle.
    let views = subscribers_of(&dot, source(&dot, "viewports"));
    assert_eq!(views.len(), 1);
    assert!(
        dot.label(views[0].0).ends_with("\n640x480 at (0, 0)"),
        "{}",
        dot.label(views[0].0)
    );

    // Every node is a source, a group or a subscriber reached by exactly one edge.
    for id in dot.nodes.keys().filter(|id| id.contains('_')) {
        let into = dot.edges.iter().filter(|(_, to, _)| to == id).count();
        assert_eq!(into, 1, "{id} has one edge in");
    }
}

#[test]
fn v1_the_graph_holds_the_listing_values() {
    let world = world();
    let on_damage = &world.graph.sources[0];
    assert_eq!(on_damage.kind, SourceKind::Delegate);
    let flags: Vec<(i32, bool, bool)> = on_damage
        .subscribers
        .iter()
        .map(|s| (s.priority, s.muted, s.one_shot))
        .collect();
    assert_eq!(
        flags,
        [
            (5, false, false),
            (0, false, false),
            (0, true, false),
            (0, false, true),
            (0, false, false)
        ]
    );
    let bus = &world.graph.sources[5];
    let channels: Vec<String> = bus
        .subscribers
        .iter()
        .map(|s| {
            let channel = s.channel.as_ref().expect("a bus listener has a channel");
            format!("{} {channel}", channel.tag)
        })
        .collect();
    assert_eq!(
        channels,
        ["InspectTest partial, entity 7", "InspectTest.Damage exact"]
    );
}

#[cfg(feature = "serde")]
#[test]
fn v1_the_graph_round_trips_through_json() {
    let world = world();
    let json = serde_json::to_string_pretty(&world.graph).expect("serializes");
    assert!(
        json.contains(&format!("\"line\": {}", world.lines["muted"])),
        "{json}"
    );
    assert!(json.contains("\"muted\": true"));
    let back: NotificationGraph = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, world.graph);
}

#[cfg(feature = "svg")]
#[test]
fn v3_the_svg_holds_every_subscriber_label() {
    let world = world();
    let svg = world.graph.to_svg();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    let mut checked = 0;
    for source in &world.graph.sources {
        assert!(
            svg.contains(&format!(">{}</tspan>", source.name)),
            "{}",
            source.name
        );
        for subscriber in &source.subscribers {
            for line in subscriber.label().lines() {
                assert!(
                    svg.contains(&format!(">{line}</tspan>")),
                    "{line} in the SVG"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 14);
}

#[test]
fn v1_a_dropped_owner_is_drawn_as_such() {
    let on_tick: MulticastDelegate<dyn Fn()> = MulticastDelegate::new();
    let owner = Rc::new(());
    let line = line!() + 1;
    let _member = on_tick.add_member(&owner, |_| {});
    let mut inspector = Inspector::new();
    inspector.add("on_tick", &on_tick);
    drop(owner);
    inspector.add("on_tick after", &on_tick);
    let dot = parse(&inspector.graph().to_dot());
    let alive = subscribers_of(&dot, source(&dot, "on_tick"));
    assert_eq!(
        dot.label(alive[0].0),
        format!("{}\nowner alive", site(line))
    );
    // After the drop the listing is either empty (pruned) or shows the dead owner, grey.
    for (node, _) in subscribers_of(&dot, source(&dot, "on_tick after")) {
        assert_eq!(dot.label(node), format!("{}\nowner dropped", site(line)));
        assert_eq!(dot.nodes[node]["fillcolor"], "#e2e3e5");
    }
}

/// Self-aware subscribers (X6) of a delegate, a declared delegate, a script delegate and an
/// event processor are drawn `self-aware`; the bus's `listen_*_once` listeners `one-shot`. The
/// DOT, the JSON and the SVG show them.
#[test]
fn v1_self_aware_subscribers_and_one_shot_bus_listeners_are_flagged() {
    let on_damage: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let plain = line!() + 1;
    let _plain = on_damage.add_lambda(|_| {});
    let aware = line!() + 1;
    let _aware = on_damage.subscribe().self_aware().add_lambda(|_, _| {});
    let on_hit = OnHit::new();
    let declared = line!() + 1;
    let _declared = on_hit.subscribe().self_aware().add_lambda(|_, _| {});
    let on_spawned: ScriptDelegate<()> = ScriptDelegate::new();
    let script = line!() + 1;
    let _script = on_spawned.subscribe().self_aware().add_lambda(|_, _| {});
    let processor = EventProcessor::new();
    let layer = InputLayer::Viewport;
    let mouse = |_: &lumina::ThisSubscription, _: MouseEvent<'_>| false;
    // The bind site is the finish's line (`add_handler`, four lines down).
    let handler = line!() + 5;
    let _handler = processor
        .subscribe()
        .priority(layer)
        .self_aware()
        .add_handler::<category::Mouse>(mouse);
    let bus: MessageBus<u32> = MessageBus::new();
    let bus_exact = line!() + 1;
    let _exact = bus.listen(&DAMAGE, |_, _| {});
    let bus_once = line!() + 1;
    let _once = bus.subscribe().once().listen(&DAMAGE, |_, _| {});
    let parent = DAMAGE.tag().parent().expect("InspectTest");
    // The finish's line (`listen`, five lines down).
    let bus_partial_once = line!() + 6;
    let _partial_once = bus
        .subscribe()
        .partial()
        .entity(7)
        .once()
        .listen(parent, |_| {});

    let mut inspector = Inspector::new();
    inspector
        .add("on_damage", &on_damage)
        .add("on_hit", &on_hit.subscriptions())
        .add("on_spawned", &on_spawned)
        .add("input", &processor)
        .add("bus", &bus);
    let graph = inspector.finish();
    let dot = parse(&graph.to_dot());
    let labels = |name: &str| -> Vec<String> {
        subscribers_of(&dot, source(&dot, name))
            .into_iter()
            .map(|(node, _)| dot.label(node).to_owned())
            .collect()
    };

    assert_eq!(
        labels("on_damage"),
        [site(plain), format!("{}\nself-aware", site(aware))]
    );
    assert_eq!(
        labels("on_hit"),
        [format!("{}\nself-aware", site(declared))]
    );
    assert_eq!(
        labels("on_spawned"),
        [format!("{}\nself-aware", site(script))]
    );
    assert_eq!(
        labels("input"),
        [format!(
            "{}\npriority 1000\nself-aware\nowner alive",
            site(handler)
        )]
    );
    assert_eq!(
        labels("bus"),
        [
            format!("{}\none-shot", site(bus_partial_once)),
            site(bus_exact),
            format!("{}\none-shot", site(bus_once)),
        ]
    );

    let aware: Vec<bool> = graph.sources[0]
        .subscribers
        .iter()
        .map(|s| s.self_aware)
        .collect();
    assert_eq!(aware, [false, true]);
    #[cfg(feature = "serde")]
    {
        let json = serde_json::to_string(&graph).expect("serializes");
        assert_eq!(json.matches("\"self_aware\":true").count(), 4, "{json}");
        assert_eq!(json.matches("\"one_shot\":true").count(), 2, "{json}");
    }
    #[cfg(feature = "svg")]
    {
        let svg = graph.to_svg();
        assert_eq!(svg.matches(">self-aware</tspan>").count(), 4);
        assert_eq!(svg.matches(">one-shot</tspan>").count(), 2);
    }
}

/// The processor's viewports flag their handlers as their entries were made: a self-aware one
/// (X6) `self-aware`, a one-event one (X3) `one-shot`, a plain one neither. The DOT, the JSON and
/// the SVG show them.
#[test]
fn v1_self_aware_and_one_shot_viewport_handlers_are_flagged() {
    use lumina::event::{KeyPressedEvent, MouseButtonPressedEvent};
    let processor = EventProcessor::new();
    let viewports = Rc::new(InputViewportRegistry::new());
    assert!(viewports.register(&processor));
    let full = Rect::new(0.0, 0.0, 800.0, 600.0);
    let _plain = viewports.add_viewport_handler::<KeyPressedEvent>(full, |_| true);
    let _aware = viewports
        .subscribe()
        .self_aware()
        .add_viewport_handler::<MouseButtonPressedEvent>(full, |_, _| true);
    let _once = viewports
        .subscribe()
        .once()
        .add_viewport_handler::<MouseButtonPressedEvent>(full, |_| true);
    let mut inspector = Inspector::new();
    inspector.add("viewports", &viewports);
    let graph = inspector.finish();

    let flags: Vec<(bool, bool)> = graph.sources[0]
        .subscribers
        .iter()
        .map(|s| (s.self_aware, s.one_shot))
        .collect();
    assert_eq!(flags, [(false, false), (true, false), (false, true)]);
    let dot = parse(&graph.to_dot());
    let labels: Vec<&str> = subscribers_of(&dot, source(&dot, "viewports"))
        .into_iter()
        .map(|(node, _)| dot.label(node))
        .collect();
    assert_eq!(labels.len(), 3);
    assert!(labels[0].ends_with("800x600 at (0, 0)"), "{labels:?}");
    assert!(
        labels[1].ends_with("800x600 at (0, 0)\nself-aware"),
        "{labels:?}"
    );
    assert!(
        labels[2].ends_with("800x600 at (0, 0)\none-shot"),
        "{labels:?}"
    );
    #[cfg(feature = "serde")]
    {
        let json = serde_json::to_string(&graph).expect("serializes");
        assert_eq!(json.matches("\"self_aware\":true").count(), 1, "{json}");
        assert_eq!(json.matches("\"one_shot\":true").count(), 1, "{json}");
    }
    #[cfg(feature = "svg")]
    {
        let svg = graph.to_svg();
        assert_eq!(svg.matches(">self-aware</tspan>").count(), 1);
        assert_eq!(svg.matches(">one-shot</tspan>").count(), 1);
    }
}

/// A bus `next()` waiting on a tag is a listener for the picture: listed under its tag, exact
/// or partial, labelled as a future with the `next()` call's bind site, drawn dashed; gone from
/// the picture once it resolved.
#[test]
fn v1_pending_bus_futures_are_drawn_as_futures_at_their_bind_site() {
    let bus: MessageBus<u32> = MessageBus::new();
    let listener = line!() + 1;
    let _exact = bus.listen(&DAMAGE, |_, _| {});
    let exact = line!() + 1;
    let waiting = bus.next(&DAMAGE);
    let parent = DAMAGE.tag().parent().expect("InspectTest");
    let partial = line!() + 1;
    let any_below = bus.subscribe().partial().next::<u32>(parent);
    let mut inspector = Inspector::new();
    inspector.add("bus", &bus);
    let graph = inspector.finish();

    let futures: Vec<bool> = graph.sources[0]
        .subscribers
        .iter()
        .map(|s| s.future)
        .collect();
    assert_eq!(futures, [true, false, true]);
    let dot = parse(&graph.to_dot());
    let drawn: Vec<(&str, &str, &str)> = subscribers_of(&dot, source(&dot, "bus"))
        .into_iter()
        .map(|(node, edge)| (dot.label(node), edge, dot.nodes[node]["style"].as_str()))
        .collect();
    assert_eq!(
        drawn,
        [
            (
                &*format!("future: next()\n{}", site(partial)),
                "#1 partial",
                "filled,dashed"
            ),
            (&*site(listener), "#2 exact", "filled"),
            (
                &*format!("future: next()\n{}", site(exact)),
                "#3 exact",
                "filled,dashed"
            ),
        ]
    );
    #[cfg(feature = "serde")]
    {
        let json = serde_json::to_string(&graph).expect("serializes");
        assert_eq!(json.matches("\"future\":true").count(), 2, "{json}");
        let back: NotificationGraph = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, graph);
    }
    #[cfg(feature = "svg")]
    {
        let svg = graph.to_svg();
        assert_eq!(svg.matches(">future: next()</tspan>").count(), 2);
    }

    // Both resolve on one send: the picture shows the listener alone.
    bus.send(&DAMAGE, 3);
    drop((waiting, any_below));
    let mut inspector = Inspector::new();
    inspector.add("bus", &bus);
    let after = inspector.finish();
    let left: Vec<(u32, bool)> = after.sources[0]
        .subscribers
        .iter()
        .map(|s| (s.site.as_ref().map_or(0, |site| site.line), s.future))
        .collect();
    assert_eq!(left, [(listener, false)]);
}

/// The `inspect` example, run with the cargo that runs this test: its picture holds every kind
/// of source the inspector draws (core delegates, a named delegate, a script delegate, a
/// thread-safe delegate, a bus with a pending future, a processor and its viewports with a
/// self-aware one), each subscriber at its bind site in the examples; and
/// `docs/notifications.svg`, the picture the README shows, is what it makes
/// (`LUMINA_BLESS=1` rewrites it).
#[cfg(feature = "svg")]
#[test]
fn v3_the_inspect_example_draws_every_kind_of_source_and_the_readme_shows_its_picture() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let folder = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspect-example");
    support::run_example_into("inspect", "svg", &folder);
    let dot_text = std::fs::read_to_string(folder.join("notifications.dot")).expect("the DOT");
    let dot = parse(&dot_text);
    for (name, kind) in [
        ("core.on_world_travelled", "core delegate"),
        ("on_score_changed", "delegate"),
        ("on_damaged", "script delegate"),
        ("on_level_loaded", "thread-safe delegate"),
        ("gameplay bus", "message bus"),
        ("input", "event processor"),
        ("viewports", "viewports"),
    ] {
        let id = source(&dot, name);
        assert_eq!(dot.label(id), format!("{name}\n({kind})"));
        assert!(
            !subscribers_of(&dot, id).is_empty(),
            "{name} has subscribers in the picture"
        );
    }
    let labels: Vec<&str> = dot
        .nodes
        .keys()
        .filter(|id| id.contains("_n"))
        .map(|id| dot.label(id))
        .collect();
    for label in &labels {
        let place = label
            .lines()
            .find(|line| !line.starts_with("future") && !line.starts_with("viewport "))
            .expect("a label");
        assert!(
            place.starts_with("examples/inspect.rs:")
                || place.starts_with("examples/engine_loop.rs:")
                || place.contains(" at ("),
            "{label}"
        );
    }
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("future: next()\nexamples/inspect.rs:"))
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("viewport ") && l.ends_with("\nself-aware"))
    );

    let made = std::fs::read_to_string(folder.join("notifications.svg")).expect("the SVG");
    let committed = root.join("docs/notifications.svg");
    if std::env::var_os("LUMINA_BLESS").is_some() {
        std::fs::write(&committed, &made).expect("write docs/notifications.svg");
    }
    let shown = std::fs::read_to_string(&committed).expect("docs/notifications.svg");
    assert!(
        style_sorted(&shown) == style_sorted(&made),
        "docs/notifications.svg is not what `cargo run --example inspect --features svg` makes \
         now: run `LUMINA_BLESS=1 cargo test --features serde,svg --test inspect` and commit it"
    );
}

/// `svg` with the rules of its `<style>` element sorted: the SVG writer keeps its font classes in
/// a hash map, so their order changes from run to run, and nothing else does.
#[cfg(feature = "svg")]
fn style_sorted(svg: &str) -> String {
    let mut lines: Vec<&str> = svg.lines().collect();
    if let Some(start) = lines.iter().position(|line| line.ends_with("<style>"))
        && let Some(length) = lines[start..].iter().position(|line| *line == "</style>")
    {
        lines[start + 1..start + length].sort_unstable();
    }
    lines.join("\n")
}
