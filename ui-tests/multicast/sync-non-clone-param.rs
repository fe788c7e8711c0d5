// Every subscriber gets its own clone of an owned argument: a parameter that is not `Clone` is
// one error at its type, also when the delegate is used (TS1, M11).
use lumina::declare_multicast_delegate;

pub struct Texture {
    pub pixels: Vec<u8>,
}

declare_multicast_delegate!(pub sync OnTextureLoaded(name: String, texture: Texture));

fn main() {
    let on_loaded = OnTextureLoaded::new();
    let _handle = on_loaded.add_lambda(|name, texture| println!("{name}: {}", texture.pixels.len()));
    on_loaded.broadcast("grass".to_string(), Texture { pixels: Vec::new() });
}
