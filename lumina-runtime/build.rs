//! Build script of the runtime: records the compiler that builds it, for the build check of game
//! modules (rule MB3). A module compiled by another rustc than the engine is refused at load.

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-env-changed=RUSTC");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|version| version.trim().to_owned())
        .unwrap_or_else(|| "unknown rustc".to_owned());
    println!("cargo::rustc-env=LUMINA_RUSTC_VERSION={version}");
}
