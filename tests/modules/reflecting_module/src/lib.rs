//! A game module with a reflected payload, registered in the engine's reflection registry when
//! the library is loaded.

/// A payload only this module declares.
#[lumina::script_delegate]
pub struct ModuleScore {
    /// Points scored.
    pub points: u32,
}

fn start_up() {
    println!(
        "reflecting: start-up; the engine's registry has ModuleScore: {}",
        lumina::reflect::PayloadInfo::find("ModuleScore").is_some()
    );
}

fn shut_down() {}

lumina::game_module!(start_up, shut_down);
