use lumina::script_delegate;

#[script_delegate]
pub struct Changed<T> {
    pub value: T,
}

fn main() {}
