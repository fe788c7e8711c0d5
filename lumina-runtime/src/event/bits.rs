//! A small hand-written bit-flag type generator, used for [`EventCategory`](super::EventCategory)
//! and [`Modifiers`](super::Modifiers).
//!
//! Hand-written rather than the `bitflags` crate: two tiny `u8` sets need a dozen lines of
//! operators, not a dependency with its own macro dialect in our public API.

/// Declares a `Copy` bit-flag newtype over an unsigned integer with named constants, set
/// operations (`|`, `&`, `-`, `!`), `contains` / `intersects`, and a `Debug` listing the names.
macro_rules! bit_flags {
    (
        $(#[$meta:meta])*
        pub struct $Name:ident($Int:ty) {
            $( $(#[$flag_meta:meta])* const $FLAG:ident = $bit:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        pub struct $Name($Int);

        impl $Name {
            $( $(#[$flag_meta])* pub const $FLAG: $Name = $Name($bit); )*

            /// Every named flag with its name, in declaration order.
            pub const NAMED: &'static [(&'static str, $Name)] = &[$((stringify!($FLAG), $Name::$FLAG)),*];

            /// No flag set.
            pub const fn empty() -> Self {
                $Name(0)
            }

            /// Every named flag set.
            pub const fn all() -> Self {
                $Name(0 $(| $bit)*)
            }

            /// The raw bits.
            pub const fn bits(self) -> $Int {
                self.0
            }

            /// The flags of `bits`, or `None` if `bits` has a bit that names no flag.
            pub const fn from_bits(bits: $Int) -> Option<Self> {
                if bits & !Self::all().0 == 0 { Some($Name(bits)) } else { None }
            }

            /// The flags of `bits`, ignoring bits that name no flag.
            pub const fn from_bits_truncate(bits: $Int) -> Self {
                $Name(bits & Self::all().0)
            }

            /// Whether no flag is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// Whether every flag of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether `self` and `other` share at least one flag.
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }

            /// `self` with every flag of `other` added.
            pub const fn union(self, other: Self) -> Self {
                $Name(self.0 | other.0)
            }

            /// `self` with every flag of `other` removed.
            pub const fn difference(self, other: Self) -> Self {
                $Name(self.0 & !other.0)
            }

            /// Adds the flags of `other`.
            pub fn insert(&mut self, other: Self) {
                self.0 |= other.0;
            }

            /// Removes the flags of `other`.
            pub fn remove(&mut self, other: Self) {
                self.0 &= !other.0;
            }
        }

        impl ::core::ops::BitOr for $Name {
            type Output = Self;
            fn bitor(self, other: Self) -> Self {
                self.union(other)
            }
        }

        impl ::core::ops::BitOrAssign for $Name {
            fn bitor_assign(&mut self, other: Self) {
                self.insert(other);
            }
        }

        impl ::core::ops::BitAnd for $Name {
            type Output = Self;
            fn bitand(self, other: Self) -> Self {
                $Name(self.0 & other.0)
            }
        }

        impl ::core::ops::BitAndAssign for $Name {
            fn bitand_assign(&mut self, other: Self) {
                self.0 &= other.0;
            }
        }

        impl ::core::ops::Sub for $Name {
            type Output = Self;
            fn sub(self, other: Self) -> Self {
                self.difference(other)
            }
        }

        impl ::core::ops::Not for $Name {
            type Output = Self;
            fn not(self) -> Self {
                Self::all().difference(self)
            }
        }

        impl ::core::fmt::Debug for $Name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                if self.is_empty() {
                    return write!(f, "{}(empty)", stringify!($Name));
                }
                write!(f, "{}(", stringify!($Name))?;
                let mut first = true;
                for (name, flag) in Self::NAMED {
                    if self.contains(*flag) {
                        if !first {
                            f.write_str(" | ")?;
                        }
                        f.write_str(name)?;
                        first = false;
                    }
                }
                f.write_str(")")
            }
        }
    };
}

pub(crate) use bit_flags;
