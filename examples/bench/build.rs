//! Build script of the benchmarks (`lumina-bench`). Its only job is the Boost.Signals2 shim
//! (`benches/boost_shim.cpp`), built only with the `boost-bench` feature and only when Boost's
//! headers are present. It sets `cfg(lumina_boost_shim)` when the shim is built, and otherwise
//! `LUMINA_BOOST_SKIPPED` to the reason, which the benchmark report prints.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(lumina_boost_shim)");
    println!("cargo::rerun-if-changed=build.rs");
    match boost_shim() {
        Ok(()) => println!("cargo::rustc-cfg=lumina_boost_shim"),
        Err(reason) => println!("cargo::rustc-env=LUMINA_BOOST_SKIPPED={reason}"),
    }
}

#[cfg(not(feature = "boost-bench"))]
fn boost_shim() -> Result<(), String> {
    Err("built without the `boost-bench` feature (add `--features boost-bench`)".to_owned())
}

#[cfg(feature = "boost-bench")]
fn boost_shim() -> Result<(), String> {
    use std::path::PathBuf;

    println!("cargo::rerun-if-changed=../../benches/boost_shim.cpp");
    println!("cargo::rerun-if-env-changed=BOOST_INCLUDE_DIR");
    let candidates: Vec<PathBuf> = std::env::var_os("BOOST_INCLUDE_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/include", "/usr/local/include"].map(PathBuf::from))
        .collect();
    let Some(include) = candidates
        .iter()
        .find(|dir| dir.join("boost/signals2.hpp").is_file())
    else {
        let reason = "boost/signals2.hpp not found in $BOOST_INCLUDE_DIR, /usr/include or \
                      /usr/local/include (Debian: apt-get install libboost-dev)";
        println!("cargo::warning=Boost.Signals2 benchmark skipped: {reason}");
        return Err(reason.to_owned());
    };
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(3)
        .include(include)
        .file("../../benches/boost_shim.cpp")
        .try_compile("lumina_boost_shim")
        .map_err(|error| {
            println!("cargo::warning=Boost.Signals2 benchmark skipped: {error}");
            format!("the C++ shim failed to compile: {error}")
        })
}
