// The managed side of the script delegate example (SD7): binds to the sample components of
// libscript_host.so through the generated bindings (Bindings.g.cs) and checks every behaviour
// issue 5 lists; then loads scripts into generations it unloads (SD8: Mono AppDomains). Prints one line per check and "ALL CHECKS PASSED"; exits 1 on the first failure.
// Built by tests/csharp_host.rs with `mcs Host.cs Bindings.g.cs`, run with `mono`.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using Lumina.Generated;

static class Engine
{
    const string Library = "script_host";

    [DllImport(Library)] public static extern ulong script_host_rigid_body_new(float mass);
    [DllImport(Library)] public static extern ulong script_host_rigid_body_clone(ulong id);
    [DllImport(Library)] public static extern float script_host_rigid_body_mass(ulong id);
    [DllImport(Library)] public static extern int script_host_rigid_body_hit(ulong id, CollisionEvent hit);
    [DllImport(Library)] public static extern uint script_host_native_hits();
    [DllImport(Library)] public static extern ulong script_host_health_new(int current);
    [DllImport(Library)] public static extern int script_host_health_damage(ulong id, int amount);
    [DllImport(Library)] public static extern IntPtr script_host_component_ptr(ulong id);
    [DllImport(Library)] public static extern int script_host_destroy(ulong id);

    // The message bus (GB8).
    [DllImport(Library)] public static extern IntPtr script_host_bus();
    [DllImport(Library)] public static extern int script_host_bus_send_hit(CollisionEvent hit);
    [DllImport(Library)] public static extern uint script_host_bus_heard();
    [DllImport(Library)] public static extern CollisionEvent script_host_bus_last_heard();
    [DllImport(Library)] public static extern int script_host_bus_last_hit(out CollisionEvent hit);
    [DllImport(Library)] public static extern int script_host_bus_drop();

    // Script generations (SD8).
    [DllImport(Library)] public static extern LuminaStatus lumina_script_generation_begin(out ulong generation);
    [DllImport(Library)] public static extern LuminaStatus lumina_script_generation_unload(ulong generation, out UIntPtr released);
}

// Script code: an instance lives in the AppDomain of its generation; the engine side reaches it
// through a cross-domain proxy, which throws once its domain is unloaded (a stale holder).
public class Script : MarshalByRefObject
{
    int hits;
    float impulse;
    int deaths;

    public string Domain() { return AppDomain.CurrentDomain.FriendlyName; }
    public void OnHit(float value) { hits++; impulse += value; }
    public void OnDied() { deaths++; }
    public string State() { return hits + " hit(s), impulse " + impulse + ", " + deaths + " death(s)"; }
}

// One generation: a fresh AppDomain with the scripts in it, and the lumina generation its
// bindings belong to.
class ScriptGeneration
{
    public readonly ulong Id;
    public readonly AppDomain Domain;
    public readonly Script Script;

    public ScriptGeneration(int number)
    {
        LuminaHost.Check(Engine.lumina_script_generation_begin(out Id), "lumina_script_generation_begin");
        Domain = AppDomain.CreateDomain("scripts-" + number);
        Script = (Script)Domain.CreateInstanceAndUnwrap(typeof(Script).Assembly.FullName, typeof(Script).FullName);
    }

    // Tells lumina first (its release hook frees this generation's GC handles), then unloads the
    // domain. Returns how many bindings lumina released.
    public ulong Unload()
    {
        UIntPtr released;
        LuminaHost.Check(Engine.lumina_script_generation_unload(Id, out released), "lumina_script_generation_unload");
        AppDomain.Unload(Domain);
        return released.ToUInt64();
    }
}

static class Host
{
    static int checks;

    static void Check(bool condition, string what)
    {
        if (!condition)
        {
            Console.WriteLine("FAILED: " + what);
            Environment.Exit(1);
        }
        checks++;
        Console.WriteLine("ok: " + what);
    }

    static CollisionEvent SampleHit()
    {
        var hit = new CollisionEvent();
        hit.OtherEntity = 0x1122334455667788UL;
        hit.Impulse = 12.5f;
        hit.Normal = new Vec3 { X = 0f, Y = 1f, Z = -0.5f };
        hit.Point = new Vec3 { X = 3.25f, Y = -7f, Z = 1e-3f };
        hit.Material = 0xBEEF;
        hit.IsTrigger = 1;
        hit.RelativeSpeed = -123.456789012345;
        return hit;
    }

    static bool SameHit(CollisionEvent a, CollisionEvent b)
    {
        return a.OtherEntity == b.OtherEntity && a.Impulse == b.Impulse
            && a.Normal.X == b.Normal.X && a.Normal.Y == b.Normal.Y && a.Normal.Z == b.Normal.Z
            && a.Point.X == b.Point.X && a.Point.Y == b.Point.Y && a.Point.Z == b.Point.Z
            && a.Material == b.Material && a.IsTrigger == b.IsTrigger && a.RelativeSpeed == b.RelativeSpeed;
    }

    // SD8: scripts load into a generation (an AppDomain) that the host unloads and reloads.
    static void ScriptGenerations()
    {
        ulong bodyId = Engine.script_host_rigid_body_new(50f);
        var body = new RigidBody(Engine.script_host_component_ptr(bodyId));
        ulong healthId = Engine.script_host_health_new(1);
        var health = new Health(Engine.script_host_component_ptr(healthId));
        var hit = SampleHit();
        int releasedBefore = LuminaHost.ReleasedByHook;
        int exceptionsBefore = LuminaHost.HandlerExceptions;

        var first = new ScriptGeneration(1);
        Check(first.Script.Domain() == "scripts-1", "generation 1's scripts run in their own AppDomain");
        var script1 = first.Script;
        body.OnHit.Bind(h => script1.OnHit(h.Impulse));
        body.OnHit.Bind(h => script1.OnHit(h.Impulse));
        health.OnDied.Bind(() => script1.OnDied());
        Engine.script_host_rigid_body_hit(bodyId, hit);
        Check(script1.State() == "2 hit(s), impulse 25, 0 death(s)", "generation 1's bindings reach its scripts");
        Check(LuminaHost.LiveHandles == 3, "three GC handles for generation 1");

        ulong released = first.Unload();
        Console.WriteLine("generation 1 unloaded: " + released + " binding(s) released, live GC handles: " + LuminaHost.LiveHandles);
        Check(released == 3 && LuminaHost.ReleasedByHook - releasedBefore == 3, "unloading generation 1 released its three bindings through the hook, once each");
        Check(LuminaHost.LiveHandles == 0, "no GC handle of generation 1 is left");
        Check(!body.OnHit.IsBound || body.OnHit.ManagedCount == 0, "on_hit has no managed binding of generation 1 left");
        UIntPtr again;
        Check(Engine.lumina_script_generation_unload(first.Id, out again) == LuminaStatus.UnknownId, "a generation unloads once");

        Engine.script_host_rigid_body_hit(bodyId, hit);
        Engine.script_host_health_damage(healthId, 5);
        Check(LuminaHost.HandlerExceptions == exceptionsBefore, "no binding of the unloaded generation is called (its proxies would throw)");

        var second = new ScriptGeneration(2);
        Check(second.Script.Domain() == "scripts-2", "generation 2 loads into a new AppDomain");
        var script2 = second.Script;
        body.OnHit.Bind(h => script2.OnHit(h.Impulse));
        Engine.script_host_rigid_body_hit(bodyId, hit);
        Check(script2.State() == "1 hit(s), impulse 12.5, 0 death(s)", "generation 2's binding works");
        Check(LuminaHost.HandlerExceptions == exceptionsBefore, "still nothing of generation 1 runs");
        Check(second.Unload() == 1, "unloading generation 2 releases its one binding");
        Check(LuminaHost.ReleasedByHook - releasedBefore == 4, "four bindings released in all, each once");

        Engine.script_host_destroy(bodyId);
        Engine.script_host_destroy(healthId);
        Check(LuminaHost.ReleasedByHook - releasedBefore == 4, "destroying the components releases nothing twice");
        Console.WriteLine("live GC handles after the generations: " + LuminaHost.LiveHandles);
        Check(LuminaHost.LiveHandles == 0, "no GC handle leaks across generations");
    }

    // GB8: C# listens and sends on lumina's message bus by tag name; its listeners go with
    // their script generation and through the release hook like script delegate bindings.
    static void Bus()
    {
        var bus = new LuminaBus(Engine.script_host_bus());
        var hit = SampleHit();
        int releasedBefore = LuminaHost.ReleasedByHook;
        int exceptionsBefore = LuminaHost.HandlerExceptions;

        // Combat.Spawn is declared #[script] and never used by Rust: the set's register() made it
        // findable by name.
        var spawned = new List<CollisionEvent>();
        ulong spawnListener = bus.Listen<CollisionEvent>("Combat.Spawn", (h, m) => spawned.Add(h));
        bus.Send("Combat.Spawn", hit);
        Check(spawned.Count == 1 && SameHit(spawned[0], hit), "bus: a #[script] tag no Rust code used is found by name once its set is registered");
        Check(bus.Remove(spawnListener), "bus: C# removes its Combat.Spawn listener");

        var heard = new List<CollisionEvent>();
        ulong listener = bus.Listen<CollisionEvent>("Combat.Hit", (h, m) => heard.Add(h));
        var partialTags = new List<string>();
        bus.ListenPartial("Combat", m => partialTags.Add(m.Tag() + (m.Payload != IntPtr.Zero ? " with payload" : "")));
        Engine.script_host_bus_send_hit(hit);
        Check(heard.Count == 1 && SameHit(heard[0], hit), "bus: C# hears a message Rust sends, every payload field intact");
        Check(partialTags.Count == 1 && partialTags[0] == "Combat.Hit with payload", "bus: a partial C# listener on Combat hears Combat.Hit");

        uint rustBefore = Engine.script_host_bus_heard();
        bus.Send("Combat.Hit", hit);
        Check(Engine.script_host_bus_heard() == rustBefore + 1 && SameHit(Engine.script_host_bus_last_heard(), hit), "bus: Rust hears a message C# sends, every payload field intact");
        Check(heard.Count == 2 && partialTags.Count == 2, "bus: C# listeners hear C#'s send too");

        var wrong = new Vec3 { X = 1f, Y = 2f, Z = 3f };
        var status = bus.TrySend("Combat.Hit", wrong);
        Console.WriteLine("bus: sending a Vec3 on Combat.Hit: " + status);
        Check(status == LuminaStatus.WrongPayload, "bus: a payload of the wrong type is refused (WrongPayload)");
        status = bus.TrySend("Combat.Hit", wrong, "CollisionEvent");
        Console.WriteLine("bus: sending 12 bytes as a CollisionEvent: " + status);
        Check(status == LuminaStatus.WrongLayout, "bus: a payload whose layout is not the declared one is refused (WrongLayout)");
        Check(bus.TrySend("Combat.Hti", hit) == LuminaStatus.UnknownTag, "bus: an unknown tag name is refused (UnknownTag)");
        Check(Engine.script_host_bus_heard() == rustBefore + 1 && heard.Count == 2, "bus: refused sends deliver nothing");
        Check(bus.Remove(listener) && !bus.Remove(listener), "bus: C# removes its listener, once");
        Check(LuminaHost.ReleasedByHook == releasedBefore, "bus: the host's own remove calls no hook");

        var generation = new ScriptGeneration(3);
        var script = generation.Script;
        bus.Listen<CollisionEvent>("Combat.Hit", (h, m) => script.OnHit(h.Impulse));
        Engine.script_host_bus_send_hit(hit);
        Check(script.State() == "1 hit(s), impulse 12.5, 0 death(s)", "bus: a generation's C# listener hears Rust's send");
        Check(bus.ManagedCount == 2, "bus: two managed listeners");
        ulong released = generation.Unload();
        Console.WriteLine("bus: generation 3 unloaded: " + released + " listener(s) released");
        Check(released == 1 && LuminaHost.ReleasedByHook - releasedBefore == 1, "bus: unloading the generation released its bus listener through the hook, once");
        Engine.script_host_bus_send_hit(hit);
        Check(LuminaHost.HandlerExceptions == exceptionsBefore, "bus: the unloaded generation's listener is not called");
        Check(bus.ManagedCount == 1 && partialTags.Count == 4, "bus: the listener of no generation still hears");

        // GB3: a C# listener on a child tag may consume a message (its handler returns true);
        // then no listener of a parent tag hears it, C#'s or Rust's.
        var critical = new List<CollisionEvent>();
        bool consume = false;
        ulong criticalListener = bus.ListenConsuming<CollisionEvent>("Combat.Hit.Critical", (h, m) => { critical.Add(h); return consume; });
        var parentHeard = new List<string>();
        ulong parentListener = bus.ListenPartial("Combat.Hit", m => parentHeard.Add(m.Tag()));
        int partialBefore = partialTags.Count;
        bus.Send("Combat.Hit.Critical", hit);
        Check(critical.Count == 1 && parentHeard.Count == 1 && parentHeard[0] == "Combat.Hit.Critical" && partialTags.Count == partialBefore + 1, "bus: a C# listener on Combat.Hit.Critical that does not consume lets the parent listeners hear it");
        consume = true;
        bus.Send("Combat.Hit.Critical", hit);
        Console.WriteLine("bus: consumed on Combat.Hit.Critical: the parents heard " + parentHeard.Count + " of 2");
        Check(critical.Count == 2 && parentHeard.Count == 1 && partialTags.Count == partialBefore + 1, "bus: a C# listener on Combat.Hit.Critical consumes a message: the parent listeners do not hear it");
        var partialConsumer = bus.ListenPartialConsuming("Combat.Hit", m => true);
        consume = false;
        bus.Send("Combat.Hit.Critical", hit);
        Check(critical.Count == 3 && parentHeard.Count == 2 && partialTags.Count == partialBefore + 1, "bus: a partial C# listener consumes on Combat.Hit: Combat's listener does not hear it");
        Check(bus.Remove(criticalListener) && bus.Remove(parentListener) && bus.Remove(partialConsumer), "bus: C# removes its consuming listeners");

        // GB6: C# sends on a retained tag: the message is delivered, and kept as a Rust send's is.
        var lastHits = new List<CollisionEvent>();
        ulong early = bus.Listen<CollisionEvent>("Combat.LastHit", (h, m) => lastHits.Add(h));
        var sent = bus.TrySend("Combat.LastHit", hit);
        Console.WriteLine("bus: sending on the retained Combat.LastHit: " + sent);
        Check(sent == LuminaStatus.Ok && lastHits.Count == 1 && SameHit(lastHits[0], hit), "bus: C# sends on a retained tag and its listener hears it");
        var replayed = new List<CollisionEvent>();
        bool wasReplay = false;
        ulong late = bus.Listen<CollisionEvent>("Combat.LastHit", (h, m) => { replayed.Add(h); wasReplay = m.Replay == 1; });
        Check(replayed.Count == 1 && wasReplay && SameHit(replayed[0], hit), "bus: a C# listener added later hears the retained message C# sent, at once");
        CollisionEvent kept;
        Check(Engine.script_host_bus_last_hit(out kept) == 1 && SameHit(kept, hit), "bus: Rust keeps the message C# sent on a retained tag, typed, every field intact");
        Check(bus.Remove(early) && bus.Remove(late) && bus.ManagedCount == 1, "bus: C# removes its retained-tag listeners");

        Engine.script_host_bus_drop();
        Check(LuminaHost.ReleasedByHook - releasedBefore == 2, "bus: dropping the bus released its last listener, once");
        Console.WriteLine("live GC handles after the bus: " + LuminaHost.LiveHandles);
        Check(LuminaHost.LiveHandles == 0, "bus: no GC handle leaks");
    }

    static int Main()
    {
        LuminaHost.Install();
        LuminaBindings.Verify();
        Check(true, "payload mirrors match the reflected sizes and field offsets");

        ulong bodyId = Engine.script_host_rigid_body_new(80f);
        var body = new RigidBody(Engine.script_host_component_ptr(bodyId));
        Check(body.OnHit.IsBound, "the native listener makes on_hit bound before any managed binding");

        // Binds by property; records every payload; checks native listeners ran first (SD3).
        var received = new List<CollisionEvent>();
        uint nativeHitsBefore = Engine.script_host_native_hits();
        bool nativeFirst = true;
        ulong recorder = body.OnHit.Bind(hit => {
            received.Add(hit);
            if (Engine.script_host_native_hits() != nativeHitsBefore + (uint)received.Count) nativeFirst = false;
        });

        // A handler that unbinds itself during the broadcast.
        int selfUnbinderCalls = 0;
        ulong selfUnbinder = 0;
        bool unbindResult = false;
        selfUnbinder = body.OnHit.Bind(hit => {
            selfUnbinderCalls++;
            unbindResult = body.OnHit.Unbind(selfUnbinder);
        });

        // A handler that throws: the exception must stay on the managed side.
        int throwerCalls = 0;
        body.OnHit.Bind(hit => { throwerCalls++; throw new InvalidOperationException("handler failure"); });

        // Bound after the thrower: still runs.
        int lastCalls = 0;
        body.OnHit.Bind(hit => lastCalls++);
        Check(body.OnHit.ManagedCount == 4, "four managed bindings on on_hit");
        Check(LuminaHost.LiveHandles == 4, "one GC handle per binding");

        LuminaHost.HandlerException = e => Console.WriteLine("caught in handler: " + e.Message);
        var sent = SampleHit();
        Check(Engine.script_host_rigid_body_hit(bodyId, sent) == 0, "broadcast returned normally to Rust and back");
        Check(received.Count == 1 && SameHit(received[0], sent), "every payload field arrives intact");
        Check(nativeFirst, "native listeners ran before managed ones");
        Check(selfUnbinderCalls == 1 && unbindResult, "a handler unbinds itself during the broadcast");
        Check(throwerCalls == 1 && LuminaHost.HandlerExceptions == 1, "a managed exception in a handler does not cross into Rust");
        Check(lastCalls == 1, "a handler after the throwing one still ran");
        Check(LuminaHost.LiveHandles == 3, "the self-unbound handler's GC handle is released");

        Engine.script_host_rigid_body_hit(bodyId, sent);
        Check(selfUnbinderCalls == 1, "the self-unbound handler does not run again");
        Check(received.Count == 2 && lastCalls == 2, "the remaining handlers run on the next broadcast");
        Check(!body.OnHit.Unbind(selfUnbinder), "unbinding a stale id is refused");

        // A cloned component starts unbound (SD4).
        ulong cloneId = Engine.script_host_rigid_body_clone(bodyId);
        var clone = new RigidBody(Engine.script_host_component_ptr(cloneId));
        Check(Engine.script_host_rigid_body_mass(cloneId) == 80f, "the clone copies the component's data");
        Check(clone.OnHit.ManagedCount == 0, "the clone has no managed bindings");
        Engine.script_host_rigid_body_hit(cloneId, sent);
        Check(received.Count == 2 && lastCalls == 2 && throwerCalls == 2, "hitting the clone does not fire the original's handlers");
        Check(!clone.OnHit.Unbind(recorder), "another delegate's id is refused");

        // Binding off the game thread is refused and leaks nothing.
        LuminaStatus offThread = LuminaStatus.Ok;
        var worker = new Thread(() => {
            try { body.OnHit.Bind(hit => { }); }
            catch (LuminaException e) { offThread = e.Status; }
        });
        worker.Start();
        worker.Join();
        Check(offThread == LuminaStatus.NotGameThread, "bind off the game thread is refused (NotGameThread)");
        Check(LuminaHost.LiveHandles == 3, "the refused binding's GC handle was freed");

        // A void delegate: the handler gets no payload.
        ulong healthId = Engine.script_host_health_new(10);
        var health = new Health(Engine.script_host_component_ptr(healthId));
        int died = 0;
        health.OnDied.Bind(() => died++);
        health.OnDied.Bind(() => died++);
        Engine.script_host_health_damage(healthId, 4);
        Check(died == 0, "on_died does not fire while alive");
        Engine.script_host_health_damage(healthId, 6);
        Check(died == 2, "on_died (void payload) reaches both handlers");

        // Dropping components releases every GC handle through the destroyed hook (SD4).
        Check(LuminaHost.LiveHandles == 5, "five live GC handles before destroying");
        Engine.script_host_destroy(bodyId);
        Engine.script_host_destroy(cloneId);
        Engine.script_host_destroy(healthId);
        Check(LuminaHost.ReleasedByHook == 5, "the destroyed hook released all five bindings");
        Console.WriteLine("live GC handles: " + LuminaHost.LiveHandles);
        Check(LuminaHost.LiveHandles == 0, "no GC handle leaks");

        ScriptGenerations();
        Bus();

        Console.WriteLine("ALL CHECKS PASSED (" + checks + " checks)");
        return 0;
    }
}
