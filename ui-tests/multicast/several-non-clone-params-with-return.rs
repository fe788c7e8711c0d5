// mistakes: 2
use lumina::declare_multicast_delegate;

pub struct Texture;
pub struct Mesh;

// One error per non-Clone parameter, at its type; none in the generated code.
declare_multicast_delegate!(pub Validate(texture: Texture, mesh: Mesh, lod: u32) -> bool);

fn main() {
    let validate = Validate::new();
    let _all = validate.broadcast_collect(Texture, Mesh, 0);
}
