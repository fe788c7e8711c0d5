use lumina::declare_multicast_delegate;

pub struct Window;

// The C++ DECLARE_MULTICAST_DELEGATE(Name, Args...) form: Rust takes a signature.
declare_multicast_delegate!(pub OnResize, &Window, u32);

fn main() {
    // The parameters were still read: no follow-on error here.
    let on_resize = OnResize::new();
    on_resize.broadcast(&Window, 3);
}
