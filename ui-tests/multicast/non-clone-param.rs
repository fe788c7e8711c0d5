use lumina::declare_multicast_delegate;

pub struct Texture {
    pub pixels: Vec<u8>,
}

declare_multicast_delegate!(pub OnTextureLoaded(name: &str, texture: Texture));

fn main() {
    let on_loaded = OnTextureLoaded::new();
    let _handle = on_loaded.add_lambda(|name, texture| println!("{name}: {}", texture.pixels.len()));
    on_loaded.broadcast("grass", Texture { pixels: Vec::new() });
}
