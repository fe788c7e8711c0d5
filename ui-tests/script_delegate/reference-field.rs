use lumina::script_delegate;

#[script_delegate]
pub struct Named<'a> {
    pub name: &'a str,
}

fn main() {}
