//! The real managed host (SD7): builds the `script_host` cdylib example, generates C# bindings
//! from the reflection data of its components, compiles `examples/script_host/Host.cs` with Mono's
//! `mcs` and runs it with `mono`, then asserts on its output.
//!
//! This test never skips: without `mcs`/`mono` it fails and says how to install them (`.ci/run`
//! installs them). It also keeps the committed `examples/script_host/Bindings.g.cs` current (run
//! with `LUMINA_BLESS=1` to rewrite it).

#[allow(dead_code)]
#[path = "../examples/script_host/components.rs"]
mod components;

use lumina::reflect::ScriptComponent;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bindings() -> String {
    lumina::csharp::generate(
        "Lumina.Generated",
        "script_host",
        &[
            components::RigidBody::COMPONENT,
            components::Health::COMPONENT,
        ],
    )
}

#[test]
fn sd7_generated_csharp_bindings_are_current() {
    let generated = bindings();
    let path = root().join("examples/script_host/Bindings.g.cs");
    if std::env::var_os("LUMINA_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date: run `LUMINA_BLESS=1 cargo test --test csharp_host` and review the diff",
        path.display()
    );
}

#[test]
fn sd7_generated_bindings_reach_delegates_by_reflected_property() {
    let code = bindings();
    assert!(code.contains("LuminaHost.PropertyOffset(\"RigidBody\", \"on_hit\", \"CollisionEvent\", typeof(CollisionEvent))"));
    assert!(code.contains("public ScriptDelegate<CollisionEvent> OnHit"));
    assert!(code.contains("public VoidScriptDelegate OnDied"));
    assert!(code.contains("(Editable, Category = \"Collision\")"));
    // Nested payloads come before the payloads that use them, each once.
    let vec3 = code.find("public struct Vec3").unwrap();
    let collision = code.find("public struct CollisionEvent").unwrap();
    assert!(vec3 < collision);
    assert_eq!(code.matches("public struct Vec3").count(), 1);
    assert!(code.contains("public Vec3 Normal;"));
    assert!(code.contains("public ushort Material;"));
    assert!(code.contains("public double RelativeSpeed;"));
}

/// Runs `tool --version`-like probe; a missing tool is a clear failure, never a skip.
fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "`{tool}` is not installed, so the C# host test (SD7) cannot run. Install Mono: \
         `apt-get update && apt-get install -y mono-mcs mono-runtime` (.ci/run does this)"
    );
}

/// Builds the cdylib example and returns the path of the shared library.
fn build_host_library() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .args([
            "build",
            "--quiet",
            "--example",
            "script_host",
            "--message-format=json",
        ])
        .output()
        .expect("could not run cargo to build the script_host example");
    assert!(
        output.status.success(),
        "building the script_host example failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let messages = String::from_utf8(output.stdout).unwrap();
    let marker = "libscript_host.so\"";
    let end = messages
        .find(marker)
        .expect("cargo did not report libscript_host.so")
        + marker.len()
        - 1;
    let start = messages[..end].rfind('"').unwrap() + 1;
    PathBuf::from(&messages[start..end])
}

fn run(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("could not run {what}: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    stdout + &stderr
}

/// Builds and runs the C# host once per test run; returns its output.
fn host_output() -> &'static str {
    static OUTPUT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OUTPUT.get_or_init(run_host)
}

fn run_host() -> String {
    require("mcs");
    require("mono");
    let library = build_host_library();
    let dir = std::env::temp_dir().join(format!("lumina-csharp-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&library, dir.join("libscript_host.so")).unwrap();
    std::fs::write(dir.join("Bindings.g.cs"), bindings()).unwrap();
    std::fs::copy(
        root().join("examples/script_host/Host.cs"),
        dir.join("Host.cs"),
    )
    .unwrap();
    run(
        Command::new("mcs").current_dir(&dir).args([
            "-nologo",
            "-warnaserror+",
            "-out:host.exe",
            "Host.cs",
            "Bindings.g.cs",
        ]),
        "mcs",
    );
    let output = run(
        Command::new("mono")
            .current_dir(&dir)
            .env("LD_LIBRARY_PATH", &dir)
            .arg("host.exe"),
        "mono host.exe",
    );
    let _ = std::fs::remove_dir_all(Path::new(&dir));
    output
}

#[test]
fn sd7_csharp_host_binds_broadcasts_unbinds_and_releases_every_gc_handle() {
    let output = host_output();
    println!("--- C# host output ---\n{output}--- end of C# host output ---");
    for expected in [
        "ok: every payload field arrives intact",
        "ok: a handler unbinds itself during the broadcast",
        "ok: hitting the clone does not fire the original's handlers",
        "ok: a managed exception in a handler does not cross into Rust",
        "ok: bind off the game thread is refused (NotGameThread)",
        "ok: on_died (void payload) reaches both handlers",
        "live GC handles: 0",
        "ALL CHECKS PASSED",
    ] {
        assert!(
            output.contains(expected),
            "the C# host did not report `{expected}`:\n{output}"
        );
    }
}

#[test]
fn sd8_csharp_host_unloads_a_script_generation_appdomain_and_loads_the_next() {
    let output = host_output();
    for expected in [
        "ok: generation 1's scripts run in their own AppDomain",
        "ok: generation 1's bindings reach its scripts",
        "generation 1 unloaded: 3 binding(s) released, live GC handles: 0",
        "ok: unloading generation 1 released its three bindings through the hook, once each",
        "ok: a generation unloads once",
        "ok: no binding of the unloaded generation is called (its proxies would throw)",
        "ok: generation 2 loads into a new AppDomain",
        "ok: generation 2's binding works",
        "ok: four bindings released in all, each once",
        "ok: destroying the components releases nothing twice",
        "live GC handles after the generations: 0",
        "ALL CHECKS PASSED",
    ] {
        assert!(
            output.contains(expected),
            "the C# host did not report `{expected}`:\n{output}"
        );
    }
}

#[test]
fn gb8_csharp_host_listens_and_sends_on_the_bus_and_its_generation_releases_once() {
    let output = host_output();
    for expected in [
        "ok: bus: a #[script] tag no Rust code used is found by name once its set is registered",
        "ok: bus: C# removes its Combat.Spawn listener",
        "ok: bus: C# hears a message Rust sends, every payload field intact",
        "ok: bus: a partial C# listener on Combat hears Combat.Hit",
        "ok: bus: Rust hears a message C# sends, every payload field intact",
        "bus: sending a Vec3 on Combat.Hit: WrongPayload",
        "ok: bus: a payload of the wrong type is refused (WrongPayload)",
        "bus: sending 12 bytes as a CollisionEvent: WrongLayout",
        "ok: bus: a payload whose layout is not the declared one is refused (WrongLayout)",
        "ok: bus: an unknown tag name is refused (UnknownTag)",
        "ok: bus: refused sends deliver nothing",
        "ok: bus: the host's own remove calls no hook",
        "bus: generation 3 unloaded: 1 listener(s) released",
        "ok: bus: unloading the generation released its bus listener through the hook, once",
        "ok: bus: the unloaded generation's listener is not called",
        "ok: bus: a C# listener on Combat.Hit.Critical that does not consume lets the parent listeners hear it",
        "bus: consumed on Combat.Hit.Critical: the parents heard 1 of 2",
        "ok: bus: a C# listener on Combat.Hit.Critical consumes a message: the parent listeners do not hear it",
        "ok: bus: a partial C# listener consumes on Combat.Hit: Combat's listener does not hear it",
        "bus: sending on the retained Combat.LastHit: Ok",
        "ok: bus: C# sends on a retained tag and its listener hears it",
        "ok: bus: a C# listener added later hears the retained message C# sent, at once",
        "ok: bus: Rust keeps the message C# sent on a retained tag, typed, every field intact",
        "ok: bus: dropping the bus released its last listener, once",
        "live GC handles after the bus: 0",
        "ALL CHECKS PASSED",
    ] {
        assert!(
            output.contains(expected),
            "the C# host did not report `{expected}`:\n{output}"
        );
    }
}
