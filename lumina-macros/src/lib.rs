//! Procedural macros of [lumina](https://docs.rs/lumina). Use them through the `lumina` facade.
