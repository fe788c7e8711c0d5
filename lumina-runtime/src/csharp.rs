//! C# bindings generated from the reflection data (SD7).
//!
//! [`generate`] writes one C# file for a managed host: P/Invoke declarations of lumina's C ABI,
//! a small runtime (`LuminaHost`: GC handles, the managed thunk, the destroyed hook;
//! `ScriptDelegate<T>` / `VoidScriptDelegate`), a mirror struct with sequential layout for every
//! payload the given components use, and for every component an accessor struct whose properties
//! reach the component's delegates at their reflected offsets. Offsets are looked up through the
//! C ABI when the bindings start (not baked in), and `LuminaBindings.Verify()` checks every mirror's
//! size and field offsets against the library it runs with.
//!
//! ```
//! use lumina::{ScriptComponent, ScriptDelegate, csharp, reflect, script_delegate};
//!
//! #[script_delegate]
//! pub struct Dashed {
//!     pub distance: f32,
//! }
//!
//! #[derive(ScriptComponent, Default)]
//! pub struct Dasher {
//!     #[property(editable, category = "Events")]
//!     pub on_dashed: ScriptDelegate<Dashed>,
//! }
//!
//! let jumper = reflect::ComponentInfo::find("Dasher").unwrap();
//! let code = csharp::generate("Game.Bindings", "game", &[jumper]);
//! assert!(code.contains("public struct Dashed"));
//! assert!(code.contains("public float Distance;"));
//! assert!(code.contains("public ScriptDelegate<Dashed> OnDashed"));
//! ```

use std::fmt::Write as _;

use crate::ffi::LuminaStatus;
use crate::reflect::{ComponentInfo, FieldType, PayloadInfo, PropertyFlags};

/// Every status, for the C# enum; the match makes a new variant a compile error here.
fn status_name(status: LuminaStatus) -> &'static str {
    match status {
        LuminaStatus::Ok => "Ok",
        LuminaStatus::NullPointer => "NullPointer",
        LuminaStatus::NotGameThread => "NotGameThread",
        LuminaStatus::NullThunk => "NullThunk",
        LuminaStatus::UnknownId => "UnknownId",
        LuminaStatus::NotFound => "NotFound",
        LuminaStatus::OutOfRange => "OutOfRange",
        LuminaStatus::InvalidUtf8 => "InvalidUtf8",
        LuminaStatus::Panicked => "Panicked",
        LuminaStatus::Destroyed => "Destroyed",
        LuminaStatus::UnknownTag => "UnknownTag",
        LuminaStatus::NotScriptVisible => "NotScriptVisible",
        LuminaStatus::WrongPayload => "WrongPayload",
        LuminaStatus::WrongLayout => "WrongLayout",
        LuminaStatus::Retained => "Retained",
    }
}

const STATUSES: [LuminaStatus; 15] = [
    LuminaStatus::Ok,
    LuminaStatus::NullPointer,
    LuminaStatus::NotGameThread,
    LuminaStatus::NullThunk,
    LuminaStatus::UnknownId,
    LuminaStatus::NotFound,
    LuminaStatus::OutOfRange,
    LuminaStatus::InvalidUtf8,
    LuminaStatus::Panicked,
    LuminaStatus::Destroyed,
    LuminaStatus::UnknownTag,
    LuminaStatus::NotScriptVisible,
    LuminaStatus::WrongPayload,
    LuminaStatus::WrongLayout,
    LuminaStatus::Retained,
];

/// The C# type of a payload field.
fn csharp_type(ty: FieldType) -> &'static str {
    match ty {
        FieldType::I8 => "sbyte",
        FieldType::U8 => "byte",
        FieldType::I16 => "short",
        FieldType::U16 => "ushort",
        FieldType::I32 => "int",
        FieldType::U32 => "uint",
        FieldType::I64 => "long",
        FieldType::U64 => "ulong",
        FieldType::Isize => "IntPtr",
        FieldType::Usize => "UIntPtr",
        FieldType::F32 => "float",
        FieldType::F64 => "double",
        FieldType::Struct(payload) => payload.name,
    }
}

/// `on_hit` -> `OnHit`.
fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect::<String>()
            })
        })
        .collect()
}

/// The payloads `components` use, nested ones first, each once, in a deterministic order.
fn payloads_of(components: &[&'static ComponentInfo]) -> Vec<&'static PayloadInfo> {
    fn visit(payload: &'static PayloadInfo, out: &mut Vec<&'static PayloadInfo>) {
        if payload.is_void() || out.iter().any(|seen| std::ptr::eq(*seen, payload)) {
            return;
        }
        for field in payload.fields {
            if let FieldType::Struct(nested) = field.ty {
                visit(nested, out);
            }
        }
        out.push(payload);
    }
    let mut out = Vec::new();
    for component in components {
        for property in component.properties {
            visit(property.payload, &mut out);
        }
    }
    out
}

/// The C# bindings for `components` (sorted by name in the output), in namespace `namespace`,
/// importing the C ABI from the native library `library` (as `DllImport` names it: `game` loads
/// `libgame.so`).
pub fn generate(namespace: &str, library: &str, components: &[&'static ComponentInfo]) -> String {
    let mut components = components.to_vec();
    components.sort_by_key(|component| component.name);
    let payloads = payloads_of(&components);
    let mut out = String::new();
    out.push_str(
        "// <auto-generated>\n\
         // C# bindings generated by lumina::csharp from lumina's reflection data.\n\
         // Do not edit: regenerate when the Rust types change.\n\
         // </auto-generated>\n\
         using System;\n\
         using System.Collections.Generic;\n\
         using System.Runtime.InteropServices;\n\
         using System.Text;\n\n",
    );
    writeln!(out, "namespace {namespace}\n{{").unwrap();
    out.push_str("    /// <summary>Result of every call into lumina's C ABI.</summary>\n");
    out.push_str("    public enum LuminaStatus : int\n    {\n");
    for status in STATUSES {
        writeln!(out, "        {} = {},", status_name(status), status as i32).unwrap();
    }
    out.push_str("    }\n\n");
    writeln!(out, "{}", RUNTIME.replace("@LIBRARY@", library).trim_end()).unwrap();
    out.push('\n');
    for payload in &payloads {
        write_payload(&mut out, payload);
    }
    for component in &components {
        write_component(&mut out, component);
    }
    out.push_str(
        "    /// <summary>Checks every generated mirror against the loaded library.</summary>\n",
    );
    out.push_str("    public static class LuminaBindings\n    {\n");
    out.push_str("        /// <summary>Throws if a payload mirror's size or a field offset differs from Rust's.</summary>\n");
    out.push_str("        public static void Verify()\n        {\n");
    for payload in &payloads {
        let fields: Vec<String> = payload
            .fields
            .iter()
            .map(|field| format!("\"{}\"", pascal_case(field.name)))
            .collect();
        writeln!(
            out,
            "            LuminaHost.VerifyPayload(\"{}\", typeof({}), new string[] {{ {} }});",
            payload.name,
            payload.name,
            fields.join(", ")
        )
        .unwrap();
    }
    out.push_str("        }\n    }\n}\n");
    out
}

fn write_payload(out: &mut String, payload: &PayloadInfo) {
    writeln!(
        out,
        "    /// <summary>Mirror of the Rust payload <c>{}</c> (size {}, align {} when generated).</summary>",
        payload.name, payload.size, payload.align
    )
    .unwrap();
    out.push_str("    [StructLayout(LayoutKind.Sequential)]\n");
    writeln!(out, "    public struct {}\n    {{", payload.name).unwrap();
    for field in payload.fields {
        writeln!(
            out,
            "        /// <summary>Rust <c>{}: {}</c>, offset {}.</summary>",
            field.name,
            field.ty.rust_name(),
            field.offset
        )
        .unwrap();
        writeln!(
            out,
            "        public {} {};",
            csharp_type(field.ty),
            pascal_case(field.name)
        )
        .unwrap();
    }
    out.push_str("    }\n\n");
}

fn write_component(out: &mut String, component: &ComponentInfo) {
    writeln!(
        out,
        "    /// <summary>Accessors of the Rust component <c>{}</c>: each property reaches its script delegate at the reflected offset.</summary>",
        component.name
    )
    .unwrap();
    writeln!(out, "    public struct {}\n    {{", component.name).unwrap();
    out.push_str("        /// <summary>The component's address in the native library.</summary>\n");
    out.push_str("        public readonly IntPtr Address;\n\n");
    for property in component.properties {
        let mirror = if property.payload.is_void() {
            "null".to_owned()
        } else {
            format!("typeof({})", property.payload.name)
        };
        writeln!(
            out,
            "        static readonly long {}Offset = LuminaHost.PropertyOffset(\"{}\", \"{}\", \"{}\", {});",
            pascal_case(property.name),
            component.name,
            property.name,
            property.payload.name,
            mirror
        )
        .unwrap();
    }
    writeln!(
        out,
        "\n        /// <summary>Wraps the component at <paramref name=\"address\"/>, which must stay valid while used.</summary>\n        public {}(IntPtr address)\n        {{\n            if (address == IntPtr.Zero) throw new ArgumentNullException(\"address\");\n            Address = address;\n        }}",
        component.name
    )
    .unwrap();
    for property in component.properties {
        let ty = if property.payload.is_void() {
            "VoidScriptDelegate".to_owned()
        } else {
            format!("ScriptDelegate<{}>", property.payload.name)
        };
        let editable = if property.flags.contains(PropertyFlags::EDITABLE) {
            "Editable, "
        } else {
            ""
        };
        let name = pascal_case(property.name);
        writeln!(
            out,
            "\n        /// <summary>Rust <c>{}</c> ({editable}Category = \"{}\").</summary>\n        public {ty} {name}\n        {{\n            get {{ return new {ty}(new IntPtr(Address.ToInt64() + {name}Offset)); }}\n        }}",
            property.name, property.category
        )
        .unwrap();
    }
    out.push_str("    }\n\n");
}

/// The payload-independent part of the bindings.
const RUNTIME: &str = r#"    /// <summary>An error status from lumina's C ABI.</summary>
    public sealed class LuminaException : Exception
    {
        /// <summary>The status the call returned.</summary>
        public readonly LuminaStatus Status;

        /// <summary>Wraps <paramref name="status"/> from <paramref name="call"/>.</summary>
        public LuminaException(LuminaStatus status, string call)
            : base(call + " failed: " + status)
        {
            Status = status;
        }
    }

    /// <summary>A borrowed UTF-8 string that lives as long as the library.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaStr
    {
        public IntPtr Ptr;
        public UIntPtr Len;

        public override string ToString()
        {
            var bytes = new byte[(int)Len.ToUInt64()];
            if (bytes.Length > 0) Marshal.Copy(Ptr, bytes, 0, bytes.Length);
            return Encoding.UTF8.GetString(bytes);
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaPayloadInfo
    {
        public IntPtr Handle;
        public LuminaStr Name;
        public UIntPtr Size;
        public UIntPtr Align;
        public UIntPtr FieldCount;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaFieldInfo
    {
        public LuminaStr Name;
        public uint TypeCode;
        public LuminaStr TypeName;
        public UIntPtr Offset;
        public UIntPtr Size;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaPropertyInfo
    {
        public LuminaStr Name;
        public LuminaStr Category;
        public uint Flags;
        public UIntPtr Offset;
        public IntPtr Payload;
        public LuminaStr PayloadName;
        public UIntPtr PayloadSize;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaManagedBinding
    {
        public ulong Id;
        public IntPtr Thunk;
        public IntPtr Context;
    }

    /// <summary>What a message bus listener's thunk receives (GB8); valid during the call only.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct LuminaBusMessage
    {
        public uint TagId;
        public byte HasEntity;
        public byte Replay;
        /// <summary>1 when a listener consumed the message; set it through the <c>ListenConsuming</c> forms of <see cref="LuminaBus"/> (a handler returning true), not on this copy.</summary>
        public byte Consume;
        public byte Reserved;
        public ulong Entity;
        public IntPtr TagName;
        public UIntPtr TagNameLen;
        public IntPtr Payload;
        public UIntPtr PayloadSize;

        /// <summary>The tag the message was sent on.</summary>
        public string Tag()
        {
            return new LuminaStr { Ptr = TagName, Len = TagNameLen }.ToString();
        }
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    public delegate void LuminaManagedThunk(IntPtr context, IntPtr payload);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    public delegate void LuminaDestroyedHook(IntPtr scriptDelegate, IntPtr bindings, UIntPtr count, uint reason);

    /// <summary>P/Invoke declarations of lumina's C ABI (lumina.h).</summary>
    public static class LuminaNative
    {
        public const string Library = "@LIBRARY@";

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_script_delegate_bind(IntPtr scriptDelegate, LuminaManagedThunk thunk, IntPtr context, out ulong id);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_script_delegate_unbind(IntPtr scriptDelegate, ulong id);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_script_delegate_is_bound(IntPtr scriptDelegate, out byte bound);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_script_delegate_managed_count(IntPtr scriptDelegate, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_set_destroyed_hook(LuminaDestroyedHook hook);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_reflect_find_payload(byte[] name, UIntPtr nameLen, out LuminaPayloadInfo info);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_reflect_payload_field(IntPtr payload, UIntPtr index, out LuminaFieldInfo info);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_bus_find_tag(byte[] name, UIntPtr nameLen, out uint tag);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_bus_listen(IntPtr bus, byte[] name, UIntPtr nameLen, byte partial, byte hasEntity, ulong entity, LuminaManagedThunk thunk, IntPtr context, out ulong id);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_bus_remove(IntPtr bus, ulong id);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_bus_send(IntPtr bus, byte[] name, UIntPtr nameLen, byte hasEntity, ulong entity, IntPtr payload, UIntPtr payloadLen, ref LuminaPayloadInfo layout);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_bus_managed_count(IntPtr bus, out UIntPtr count);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern LuminaStatus lumina_reflect_find_property(byte[] component, UIntPtr componentLen, byte[] property, UIntPtr propertyLen, out LuminaPropertyInfo info);
    }

    /// <summary>
    /// The managed side of script delegates: one GC handle per binding, the thunk every binding
    /// goes through, and the destroyed hook that releases handles of delegates Rust drops or clears.
    /// </summary>
    public static class LuminaHost
    {
        static readonly Dictionary<ulong, GCHandle> handles = new Dictionary<ulong, GCHandle>();
        // Kept in static fields so the function pointers handed to Rust stay valid.
        static readonly LuminaManagedThunk thunk = Thunk;
        static readonly LuminaDestroyedHook destroyedHook = OnDestroyed;

        /// <summary>Called with an exception a handler threw; it never crosses into Rust.</summary>
        public static Action<Exception> HandlerException = e => Console.Error.WriteLine("lumina: a script delegate handler threw: " + e.Message);

        /// <summary>GC handles currently held for bindings.</summary>
        public static int LiveHandles { get { lock (handles) return handles.Count; } }

        /// <summary>Handles released by the destroyed hook so far.</summary>
        public static int ReleasedByHook;

        /// <summary>Exceptions caught in handlers so far.</summary>
        public static int HandlerExceptions;

        /// <summary>Installs the destroyed hook. Call once, on the game thread, before binding.</summary>
        public static void Install()
        {
            Check(LuminaNative.lumina_set_destroyed_hook(destroyedHook), "lumina_set_destroyed_hook");
        }

        /// <summary>Throws a <see cref="LuminaException"/> unless <paramref name="status"/> is Ok.</summary>
        public static void Check(LuminaStatus status, string call)
        {
            if (status != LuminaStatus.Ok) throw new LuminaException(status, call);
        }

        internal static ulong Bind(IntPtr scriptDelegate, Action<IntPtr> invoke)
        {
            var handle = GCHandle.Alloc(invoke);
            ulong id;
            var status = LuminaNative.lumina_script_delegate_bind(scriptDelegate, thunk, GCHandle.ToIntPtr(handle), out id);
            if (status != LuminaStatus.Ok)
            {
                handle.Free();
                throw new LuminaException(status, "lumina_script_delegate_bind");
            }
            lock (handles) handles.Add(id, handle);
            return id;
        }

        internal static bool IsBound(IntPtr scriptDelegate)
        {
            byte bound;
            Check(LuminaNative.lumina_script_delegate_is_bound(scriptDelegate, out bound), "lumina_script_delegate_is_bound");
            return bound != 0;
        }

        internal static ulong BusListen(IntPtr bus, string tag, bool partial, bool hasEntity, ulong entity, Action<IntPtr> invoke)
        {
            var name = Encoding.UTF8.GetBytes(tag);
            var handle = GCHandle.Alloc(invoke);
            ulong id;
            var status = LuminaNative.lumina_bus_listen(bus, name, new UIntPtr((uint)name.Length), (byte)(partial ? 1 : 0), (byte)(hasEntity ? 1 : 0), entity, thunk, GCHandle.ToIntPtr(handle), out id);
            if (status != LuminaStatus.Ok)
            {
                handle.Free();
                throw new LuminaException(status, "lumina_bus_listen(" + tag + ")");
            }
            lock (handles) handles.Add(id, handle);
            return id;
        }

        internal static bool BusRemove(IntPtr bus, ulong id)
        {
            var status = LuminaNative.lumina_bus_remove(bus, id);
            if (status == LuminaStatus.UnknownId) return false;
            Check(status, "lumina_bus_remove");
            Release(id);
            return true;
        }

        internal static LuminaStatus BusSend(IntPtr bus, string tag, bool hasEntity, ulong entity, object payload, string layoutName)
        {
            var n = Encoding.UTF8.GetBytes(layoutName);
            LuminaPayloadInfo layout;
            var found = LuminaNative.lumina_reflect_find_payload(n, new UIntPtr((uint)n.Length), out layout);
            if (found != LuminaStatus.Ok) return found;
            int size = Marshal.SizeOf(payload.GetType());
            var buffer = Marshal.AllocHGlobal(Math.Max(size, 1));
            try
            {
                Marshal.StructureToPtr(payload, buffer, false);
                var name = Encoding.UTF8.GetBytes(tag);
                return LuminaNative.lumina_bus_send(bus, name, new UIntPtr((uint)name.Length), (byte)(hasEntity ? 1 : 0), entity, buffer, new UIntPtr((uint)size), ref layout);
            }
            finally
            {
                Marshal.FreeHGlobal(buffer);
            }
        }

        internal static bool Unbind(IntPtr scriptDelegate, ulong id)
        {
            var status = LuminaNative.lumina_script_delegate_unbind(scriptDelegate, id);
            if (status == LuminaStatus.UnknownId) return false;
            Check(status, "lumina_script_delegate_unbind");
            Release(id);
            return true;
        }

        static void Release(ulong id)
        {
            GCHandle handle;
            lock (handles)
            {
                if (!handles.TryGetValue(id, out handle)) return;
                handles.Remove(id);
            }
            handle.Free();
        }

        static void Thunk(IntPtr context, IntPtr payload)
        {
            try
            {
                var invoke = (Action<IntPtr>)GCHandle.FromIntPtr(context).Target;
                invoke(payload);
            }
            catch (Exception e)
            {
                // A managed exception must not unwind into Rust.
                HandlerExceptions++;
                try { HandlerException(e); } catch (Exception) { }
            }
        }

        static void OnDestroyed(IntPtr scriptDelegate, IntPtr bindings, UIntPtr count, uint reason)
        {
            try
            {
                int size = Marshal.SizeOf(typeof(LuminaManagedBinding));
                for (ulong i = 0; i < count.ToUInt64(); i++)
                {
                    var binding = (LuminaManagedBinding)Marshal.PtrToStructure(new IntPtr(bindings.ToInt64() + (long)i * size), typeof(LuminaManagedBinding));
                    Release(binding.Id);
                    ReleasedByHook++;
                }
            }
            catch (Exception e)
            {
                try { HandlerException(e); } catch (Exception) { }
            }
        }

        /// <summary>The byte offset of a component's delegate property, checked against its mirror.</summary>
        public static long PropertyOffset(string component, string property, string payload, Type mirror)
        {
            var c = Encoding.UTF8.GetBytes(component);
            var p = Encoding.UTF8.GetBytes(property);
            LuminaPropertyInfo info;
            Check(LuminaNative.lumina_reflect_find_property(c, new UIntPtr((uint)c.Length), p, new UIntPtr((uint)p.Length), out info), "lumina_reflect_find_property(" + component + "." + property + ")");
            if (info.PayloadName.ToString() != payload)
                throw new InvalidOperationException(component + "." + property + " carries " + info.PayloadName + ", the bindings expect " + payload + ": regenerate them");
            long size = mirror == null ? 0 : Marshal.SizeOf(mirror);
            if ((long)info.PayloadSize.ToUInt64() != size)
                throw new InvalidOperationException(payload + " is " + info.PayloadSize + " bytes in Rust, " + size + " in C#: regenerate the bindings");
            return (long)info.Offset.ToUInt64();
        }

        /// <summary>Throws if the mirror's size or a field offset differs from the Rust payload's.</summary>
        public static void VerifyPayload(string name, Type mirror, string[] fields)
        {
            var n = Encoding.UTF8.GetBytes(name);
            LuminaPayloadInfo info;
            Check(LuminaNative.lumina_reflect_find_payload(n, new UIntPtr((uint)n.Length), out info), "lumina_reflect_find_payload(" + name + ")");
            if ((long)info.Size.ToUInt64() != Marshal.SizeOf(mirror))
                throw new InvalidOperationException(name + ": size " + info.Size + " in Rust, " + Marshal.SizeOf(mirror) + " in C#");
            if ((int)info.FieldCount.ToUInt64() != fields.Length)
                throw new InvalidOperationException(name + ": " + info.FieldCount + " fields in Rust, " + fields.Length + " in C#");
            for (int i = 0; i < fields.Length; i++)
            {
                LuminaFieldInfo field;
                Check(LuminaNative.lumina_reflect_payload_field(info.Handle, new UIntPtr((uint)i), out field), "lumina_reflect_payload_field");
                long offset = Marshal.OffsetOf(mirror, fields[i]).ToInt64();
                if ((long)field.Offset.ToUInt64() != offset)
                    throw new InvalidOperationException(name + "." + field.Name + ": offset " + field.Offset + " in Rust, " + offset + " in C#");
            }
        }
    }

    /// <summary>
    /// A lumina message bus (GB8), reached by the address the engine hands out: listen and send by
    /// tag name. Payloads are the generated mirror structs; a send names its mirror's type, and lumina
    /// checks it against the tag's declared payload before reading a byte.
    /// </summary>
    public struct LuminaBus
    {
        /// <summary>The bus's address.</summary>
        public readonly IntPtr Address;

        /// <summary>Wraps the bus at <paramref name="address"/>.</summary>
        public LuminaBus(IntPtr address) { Address = address; }

        static Action<IntPtr> Typed<T>(Action<T, LuminaBusMessage> handler) where T : struct
        {
            return raw => {
                var message = (LuminaBusMessage)Marshal.PtrToStructure(raw, typeof(LuminaBusMessage));
                var payload = message.Payload == IntPtr.Zero ? default(T) : (T)Marshal.PtrToStructure(message.Payload, typeof(T));
                handler(payload, message);
            };
        }

        /// <summary>Listens to <paramref name="tag"/> exactly; returns the listener's id.</summary>
        public ulong Listen<T>(string tag, Action<T, LuminaBusMessage> handler) where T : struct
        {
            return LuminaHost.BusListen(Address, tag, false, false, 0, Typed(handler));
        }

        /// <summary>Listens to <paramref name="tag"/> exactly, for messages to <paramref name="entity"/> only.</summary>
        public ulong ListenEntity<T>(string tag, ulong entity, Action<T, LuminaBusMessage> handler) where T : struct
        {
            return LuminaHost.BusListen(Address, tag, false, true, entity, Typed(handler));
        }

        /// <summary>Listens to <paramref name="tag"/> and every descendant; the payload stays raw.</summary>
        public ulong ListenPartial(string tag, Action<LuminaBusMessage> handler)
        {
            return LuminaHost.BusListen(Address, tag, true, false, 0, raw => handler((LuminaBusMessage)Marshal.PtrToStructure(raw, typeof(LuminaBusMessage))));
        }

        static readonly int ConsumeOffset = (int)Marshal.OffsetOf(typeof(LuminaBusMessage), "Consume");

        /// <summary>Calls <paramref name="handler"/>; when it returns true, tells lumina the message is consumed (GB3).</summary>
        static Action<IntPtr> Consuming(Func<IntPtr, bool> handler)
        {
            return raw => { if (handler(raw)) Marshal.WriteByte(raw, ConsumeOffset, 1); };
        }

        static Func<IntPtr, bool> TypedConsuming<T>(Func<T, LuminaBusMessage, bool> handler) where T : struct
        {
            return raw => {
                var message = (LuminaBusMessage)Marshal.PtrToStructure(raw, typeof(LuminaBusMessage));
                var payload = message.Payload == IntPtr.Zero ? default(T) : (T)Marshal.PtrToStructure(message.Payload, typeof(T));
                return handler(payload, message);
            };
        }

        /// <summary>Listens to <paramref name="tag"/> exactly; a handler that returns true consumes the message: no listener after it hears it, on this tag or its parents (GB3).</summary>
        public ulong ListenConsuming<T>(string tag, Func<T, LuminaBusMessage, bool> handler) where T : struct
        {
            return LuminaHost.BusListen(Address, tag, false, false, 0, Consuming(TypedConsuming(handler)));
        }

        /// <summary>As <see cref="ListenConsuming{T}"/>, for messages to <paramref name="entity"/> only (a consumed message climbs no further up the entity hierarchy).</summary>
        public ulong ListenEntityConsuming<T>(string tag, ulong entity, Func<T, LuminaBusMessage, bool> handler) where T : struct
        {
            return LuminaHost.BusListen(Address, tag, false, true, entity, Consuming(TypedConsuming(handler)));
        }

        /// <summary>Listens to <paramref name="tag"/> and every descendant; a handler that returns true consumes the message (GB3).</summary>
        public ulong ListenPartialConsuming(string tag, Func<LuminaBusMessage, bool> handler)
        {
            return LuminaHost.BusListen(Address, tag, true, false, 0, Consuming(raw => handler((LuminaBusMessage)Marshal.PtrToStructure(raw, typeof(LuminaBusMessage)))));
        }

        /// <summary>Removes a listener this host added; false for a stale id.</summary>
        public bool Remove(ulong id) { return LuminaHost.BusRemove(Address, id); }

        /// <summary>Sends <paramref name="payload"/> on <paramref name="tag"/>; throws on a refusal.</summary>
        public void Send<T>(string tag, T payload) where T : struct
        {
            LuminaHost.Check(TrySend(tag, payload), "lumina_bus_send(" + tag + ")");
        }

        /// <summary>Sends, returning lumina's status; <paramref name="layoutName"/> names the payload type claimed (the mirror's by default).</summary>
        public LuminaStatus TrySend<T>(string tag, T payload, string layoutName = null) where T : struct
        {
            return LuminaHost.BusSend(Address, tag, false, 0, payload, layoutName ?? typeof(T).Name);
        }

        /// <summary>Sends to <paramref name="entity"/>, returning lumina's status.</summary>
        public LuminaStatus TrySendTo<T>(string tag, ulong entity, T payload) where T : struct
        {
            return LuminaHost.BusSend(Address, tag, true, entity, payload, typeof(T).Name);
        }

        /// <summary>How many managed listeners the bus has.</summary>
        public int ManagedCount
        {
            get
            {
                UIntPtr count;
                LuminaHost.Check(LuminaNative.lumina_bus_managed_count(Address, out count), "lumina_bus_managed_count");
                return (int)count.ToUInt64();
            }
        }
    }

    /// <summary>A script delegate with payload <typeparamref name="T"/>, reached by address.</summary>
    public struct ScriptDelegate<T> where T : struct
    {
        /// <summary>The delegate's address (its base is at offset 0).</summary>
        public readonly IntPtr Address;

        /// <summary>Wraps the delegate at <paramref name="address"/>.</summary>
        public ScriptDelegate(IntPtr address) { Address = address; }

        /// <summary>Binds <paramref name="handler"/>; returns the id for <see cref="Unbind"/>. Game thread only.</summary>
        public ulong Bind(Action<T> handler)
        {
            return LuminaHost.Bind(Address, payload => handler((T)Marshal.PtrToStructure(payload, typeof(T))));
        }

        /// <summary>Unbinds <paramref name="id"/>; false if it is not bound (stale or foreign). Safe during a broadcast.</summary>
        public bool Unbind(ulong id) { return LuminaHost.Unbind(Address, id); }

        /// <summary>Whether a native or managed listener is bound.</summary>
        public bool IsBound { get { return LuminaHost.IsBound(Address); } }

        /// <summary>How many managed bindings the delegate holds.</summary>
        public int ManagedCount
        {
            get
            {
                UIntPtr count;
                LuminaHost.Check(LuminaNative.lumina_script_delegate_managed_count(Address, out count), "lumina_script_delegate_managed_count");
                return (int)count.ToUInt64();
            }
        }
    }

    /// <summary>A script delegate without payload (<c>ScriptDelegate&lt;()&gt;</c> in Rust).</summary>
    public struct VoidScriptDelegate
    {
        /// <summary>The delegate's address (its base is at offset 0).</summary>
        public readonly IntPtr Address;

        /// <summary>Wraps the delegate at <paramref name="address"/>.</summary>
        public VoidScriptDelegate(IntPtr address) { Address = address; }

        /// <summary>Binds <paramref name="handler"/>; returns the id for <see cref="Unbind"/>. Game thread only.</summary>
        public ulong Bind(Action handler)
        {
            return LuminaHost.Bind(Address, payload => {
                if (payload != IntPtr.Zero) throw new InvalidOperationException("a void script delegate received a payload");
                handler();
            });
        }

        /// <summary>Unbinds <paramref name="id"/>; false if it is not bound (stale or foreign).</summary>
        public bool Unbind(ulong id) { return LuminaHost.Unbind(Address, id); }

        /// <summary>Whether a native or managed listener is bound.</summary>
        public bool IsBound { get { return LuminaHost.IsBound(Address); } }
    }
"#;
