// The managed side of the script delegate example (SD7): binds to the sample components of
// libscript_host.so through the generated bindings (Bindings.g.cs) and checks every behaviour
// issue 5 lists. Prints one line per check and "ALL CHECKS PASSED"; exits 1 on the first failure.
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

        Console.WriteLine("ALL CHECKS PASSED (" + checks + " checks)");
        return 0;
    }
}
