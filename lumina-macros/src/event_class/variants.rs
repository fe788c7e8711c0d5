//! The names of `lumina::event::EventType`'s variants, so that an unknown name is reported on the
//! user's token with the valid ones (rule E2). The proc-macro crate cannot depend on the
//! runtime; a test below checks this list against the runtime's enum, in order.

pub(crate) const EVENT_TYPES: &[&str] = &[
    "None",
    "KeyPressed",
    "KeyReleased",
    "KeyRepeat",
    "CharInput",
    "CharInputMods",
    "MouseButtonPressed",
    "MouseButtonReleased",
    "MouseMoved",
    "MouseScrolled",
    "MouseEntered",
    "MouseLeft",
    "WindowResize",
    "WindowClose",
    "WindowFocus",
    "WindowLostFocus",
    "WindowMoved",
    "WindowMaximized",
    "WindowMinimized",
    "WindowRestored",
    "WindowRefresh",
    "WindowContentScaleChanged",
    "FramebufferResize",
    "FileDrop",
    "JoystickConnected",
    "JoystickDisconnected",
    "AppTick",
    "AppUpdate",
    "AppRender",
];

#[cfg(test)]
mod tests {
    use super::EVENT_TYPES;

    /// The runtime declares the variants in an `event_types!` table of `Variant => categories;`
    /// lines; read them from its source and compare, in order.
    #[test]
    fn e2_variant_list_matches_the_runtime_event_type() {
        // Found from the macro crate and from the facade's tests, which include this module.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|dir| dir.join("lumina-runtime/src/event/event_type.rs"))
            .find(|path| path.exists())
            .expect("lumina-runtime/src/event/event_type.rs in the workspace");
        let source = std::fs::read_to_string(path).expect("read the runtime's event_type.rs");
        let table = source
            .split("\nevent_types! {")
            .nth(1)
            .expect("the event_types! table")
            .split("\n}")
            .next()
            .unwrap();
        let runtime: Vec<&str> = table
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with("///") && !line.starts_with("#[") && !line.is_empty())
            .map(|line| line.split("=>").next().unwrap().trim())
            .collect();
        assert_eq!(runtime, EVENT_TYPES);
    }
}
