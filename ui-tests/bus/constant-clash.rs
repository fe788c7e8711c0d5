// Two tags that would be the same constant are one error, on the second.
use lumina::gameplay_tags;

gameplay_tags! {
    pub mod tags {
        Match.State: u32,
        Match_State: u32,
    }
}

fn main() {
    let _ = &tags::MATCH_STATE;
    let _ = tags::register();
}
