//! Keeps `lumina-runtime/include/lumina.h` current with the C ABI (SD5).
//!
//! The header is generated from the Rust sources (the `extern "C"` functions, `#[repr(C)]`
//! structs and enums, and thunk types of `ffi.rs` and `script_delegate.rs`, and the field type
//! codes of `reflect.rs`) and compared with the committed file. Run with `LUMINA_BLESS=1` to
//! rewrite it after changing the ABI. A C compiler then checks that the header compiles and that
//! every struct has the size Rust gives it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lumina::bus::BusMessage;
use lumina::ffi::{
    LuminaComponentInfo, LuminaFieldInfo, LuminaPayloadInfo, LuminaPropertyInfo, LuminaStatus,
    LuminaStr,
};
use lumina::script_delegate::{ManagedBinding, ReleaseReason};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    root().join("lumina-runtime/include/lumina.h")
}

fn parse(path: &str) -> syn::File {
    let source = std::fs::read_to_string(root().join(path)).unwrap();
    syn::parse_file(&source).unwrap()
}

/// The C name of a Rust type name of the ABI.
fn c_name(rust: &str) -> String {
    match rust {
        "ScriptDelegateBase" => "LuminaScriptDelegate".to_owned(),
        name if name.starts_with("Lumina") => name.to_owned(),
        name => format!("Lumina{name}"),
    }
}

/// `SCREAMING_CASE` of a `CamelCase` name.
fn screaming(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn c_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Ptr(ptr) => {
            let inner = c_type(&ptr.elem);
            if ptr.const_token.is_some() {
                format!("const {inner} *")
            } else {
                format!("{inner} *")
            }
        }
        syn::Type::Path(path) => {
            let last = path.path.segments.last().unwrap();
            let name = last.ident.to_string();
            match name.as_str() {
                "c_void" => "void".to_owned(),
                "u8" => "uint8_t".to_owned(),
                "u32" => "uint32_t".to_owned(),
                "u64" => "uint64_t".to_owned(),
                "usize" => "size_t".to_owned(),
                "Option" => match &last.arguments {
                    // `Option<fn>` is a nullable function pointer.
                    syn::PathArguments::AngleBracketed(args) => match args.args.first() {
                        Some(syn::GenericArgument::Type(inner)) => c_type(inner),
                        _ => panic!("unsupported Option"),
                    },
                    _ => panic!("unsupported Option"),
                },
                other => c_name(other),
            }
        }
        other => panic!("no C mapping for `{}`", quote::quote!(#other)),
    }
}

fn c_params(inputs: impl Iterator<Item = (String, String)>) -> String {
    let params: Vec<String> = inputs
        .map(|(name, ty)| {
            if ty.ends_with('*') {
                format!("{ty}{name}")
            } else {
                format!("{ty} {name}")
            }
        })
        .collect();
    if params.is_empty() {
        "void".to_owned()
    } else {
        params.join(", ")
    }
}

fn fn_params(inputs: &syn::punctuated::Punctuated<syn::FnArg, syn::Token![,]>) -> String {
    c_params(inputs.iter().map(|arg| match arg {
        syn::FnArg::Typed(typed) => {
            let syn::Pat::Ident(name) = &*typed.pat else {
                panic!("unsupported parameter")
            };
            (name.ident.to_string(), c_type(&typed.ty))
        }
        syn::FnArg::Receiver(_) => panic!("no receivers in the C ABI"),
    }))
}

fn bare_fn_params(inputs: &syn::punctuated::Punctuated<syn::BareFnArg, syn::Token![,]>) -> String {
    c_params(inputs.iter().map(|arg| {
        let name = arg.name.as_ref().map(|(name, _)| name.to_string()).unwrap();
        (name, c_type(&arg.ty))
    }))
}

fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &nv.value
        {
            lines.push(text.value().trim().to_owned());
        }
    }
    // The first paragraph is enough for C readers.
    let first: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .take_while(|line| !line.is_empty())
        .collect();
    strip_links(&first.join(" ")).replace('`', "")
}

/// `[text](target)` and `[text]` become `text`.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        out.push_str(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
        if rest.starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
        }
    }
    out.push_str(rest);
    out
}

fn is_repr_c_like(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident("repr"))
}

fn is_exported(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let text = quote::quote!(#attr).to_string();
        text.contains("no_mangle")
    })
}

fn comment(out: &mut String, indent: &str, doc: &str) {
    if !doc.is_empty() {
        writeln!(out, "{indent}/* {doc} */").unwrap();
    }
}

fn generate() -> String {
    let script = parse("lumina-runtime/src/script_delegate.rs");
    let ffi = parse("lumina-runtime/src/ffi.rs");
    let reflect = parse("lumina-runtime/src/reflect.rs");
    let bus = parse("lumina-runtime/src/bus/script.rs");
    let mut out = String::new();
    out.push_str(
        "/* lumina.h: the C ABI of lumina's script delegates (rule SD5).\n \
         * Generated from lumina-runtime/src/{ffi,script_delegate,reflect,bus/script}.rs by tests/c_header.rs;\n \
         * do not edit: run `LUMINA_BLESS=1 cargo test --test c_header` after changing the ABI.\n \
         * Every function returns a LuminaStatus and never unwinds; see ffi.rs for the contracts. */\n\
         #ifndef LUMINA_H\n#define LUMINA_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\n\
         /* Opaque: any ScriptDelegate<P>, through its base at offset 0 (SD1). */\n\
         typedef struct LuminaScriptDelegate LuminaScriptDelegate;\n\n\
         /* Opaque: a MessageBus (of u64 entities) the engine keeps at a stable address (GB8). */\n\
         typedef struct LuminaMessageBus LuminaMessageBus;\n\n",
    );
    // Field type codes, from `FieldType::code`.
    for item in &reflect.items {
        let syn::Item::Impl(imp) = item else { continue };
        for impl_item in &imp.items {
            let syn::ImplItem::Fn(f) = impl_item else {
                continue;
            };
            if f.sig.ident != "code" {
                continue;
            }
            let Some(syn::Stmt::Expr(syn::Expr::Match(m), _)) = f.block.stmts.first() else {
                panic!("FieldType::code is a match")
            };
            for arm in &m.arms {
                let variant = arm_variant(&arm.pat);
                let body = &arm.body;
                writeln!(
                    out,
                    "#define LUMINA_FIELD_{} {}",
                    variant.to_uppercase(),
                    quote::quote!(#body)
                )
                .unwrap();
            }
            out.push('\n');
        }
    }
    out.push_str("/* PropertyFlags::EDITABLE */\n#define LUMINA_PROPERTY_EDITABLE 1u\n\n");
    for file in [&script, &bus, &ffi] {
        for item in &file.items {
            match item {
                syn::Item::Enum(e) if is_repr_c_like(&e.attrs) => {
                    let name = c_name(&e.ident.to_string());
                    comment(&mut out, "", &doc_of(&e.attrs));
                    writeln!(out, "typedef enum {name} {{").unwrap();
                    for variant in &e.variants {
                        let (_, value) = variant.discriminant.as_ref().unwrap();
                        comment(&mut out, "    ", &doc_of(&variant.attrs));
                        writeln!(
                            out,
                            "    {}_{} = {},",
                            screaming(&name),
                            screaming(&variant.ident.to_string()),
                            quote::quote!(#value)
                        )
                        .unwrap();
                    }
                    writeln!(out, "}} {name};\n").unwrap();
                }
                syn::Item::Type(alias) => {
                    let syn::Type::BareFn(f) = &*alias.ty else {
                        continue;
                    };
                    comment(&mut out, "", &doc_of(&alias.attrs));
                    writeln!(
                        out,
                        "typedef void (*{})({});\n",
                        c_name(&alias.ident.to_string()),
                        bare_fn_params(&f.inputs)
                    )
                    .unwrap();
                }
                syn::Item::Struct(s) if is_repr_c_like(&s.attrs) => {
                    if s.ident == "ScriptDelegateBase" || !s.generics.params.is_empty() {
                        continue;
                    }
                    let name = c_name(&s.ident.to_string());
                    comment(&mut out, "", &doc_of(&s.attrs));
                    writeln!(out, "typedef struct {name} {{").unwrap();
                    for field in &s.fields {
                        comment(&mut out, "    ", &doc_of(&field.attrs));
                        let ty = c_type(&field.ty);
                        let field_name = field.ident.as_ref().unwrap();
                        if ty.ends_with('*') {
                            writeln!(out, "    {ty}{field_name};").unwrap();
                        } else {
                            writeln!(out, "    {ty} {field_name};").unwrap();
                        }
                    }
                    writeln!(out, "}} {name};\n").unwrap();
                }
                _ => {}
            }
        }
    }
    for item in &ffi.items {
        let syn::Item::Fn(f) = item else { continue };
        if !is_exported(&f.attrs) {
            continue;
        }
        comment(&mut out, "", &doc_of(&f.attrs));
        let ret = match &f.sig.output {
            syn::ReturnType::Type(_, ty) => c_type(ty),
            syn::ReturnType::Default => "void".to_owned(),
        };
        writeln!(
            out,
            "{ret} {}({});\n",
            f.sig.ident,
            fn_params(&f.sig.inputs)
        )
        .unwrap();
    }
    out.push_str("#ifdef __cplusplus\n}\n#endif\n\n#endif /* LUMINA_H */\n");
    out
}

fn arm_variant(pat: &syn::Pat) -> String {
    match pat {
        syn::Pat::Path(path) => path.path.segments.last().unwrap().ident.to_string(),
        syn::Pat::TupleStruct(ts) => ts.path.segments.last().unwrap().ident.to_string(),
        other => panic!("unexpected pattern {}", quote::quote!(#other)),
    }
}

#[test]
fn sd5_c_header_is_current() {
    let generated = generate();
    let path = header_path();
    if std::env::var_os("LUMINA_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date with the C ABI: run `LUMINA_BLESS=1 cargo test --test c_header` and \
         review the diff",
        path.display()
    );
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

#[test]
fn sd5_c_header_compiles_and_struct_sizes_match_rust() {
    let dir = std::env::temp_dir().join(format!("lumina-c-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("probe.c");
    let types = [
        ("LuminaStr", size_of::<LuminaStr>()),
        ("LuminaPayloadInfo", size_of::<LuminaPayloadInfo>()),
        ("LuminaFieldInfo", size_of::<LuminaFieldInfo>()),
        ("LuminaComponentInfo", size_of::<LuminaComponentInfo>()),
        ("LuminaPropertyInfo", size_of::<LuminaPropertyInfo>()),
        ("LuminaManagedBinding", size_of::<ManagedBinding>()),
        ("LuminaStatus", size_of::<LuminaStatus>()),
        ("LuminaReleaseReason", size_of::<ReleaseReason>()),
        ("LuminaBusMessage", size_of::<BusMessage>()),
    ];
    let mut source = format!(
        "#include \"{}\"\n#include <stdio.h>\nint main(void) {{\n",
        header_path().display()
    );
    for (name, _) in types {
        writeln!(source, "    printf(\"{name} %zu\\n\", sizeof({name}));").unwrap();
    }
    source.push_str("    return 0;\n}\n");
    std::fs::write(&probe, source).unwrap();
    let exe = dir.join("probe");
    let status = std::process::Command::new(cc())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&probe)
        .status()
        .unwrap_or_else(|error| panic!("could not run the C compiler `{}`: {error}", cc()));
    assert!(status.success(), "lumina.h does not compile cleanly as C11");
    let output = std::process::Command::new(&exe).output().unwrap();
    let printed = String::from_utf8(output.stdout).unwrap();
    let expected: String = types
        .iter()
        .map(|(name, size)| format!("{name} {size}\n"))
        .collect();
    assert_eq!(printed, expected, "a C struct's size differs from Rust's");
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
