//! A small hand-written bit-flag type generator, used for [`EventCategory`](super::EventCategory)
//! and [`Modifiers`](super::Modifiers).
//!
//! Hand-written rather than the `bitflags` crate: two tiny `u8` sets need a dozen lines of
//! operators, not a dependency with its own macro dialect in our public API.

/// Declares a `Copy` bit-flag newtype over an unsigned integer with named constants, set
/// operations as operators (`|`, `&`, `-`, `!` and their assignments), `contains`, `From` /
/// `TryFrom` conversions to and from the integer, and a `Debug` listing the names.
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

            /// No flag set (also the [`Default`]).
            pub const NONE: $Name = $Name(0);

            /// Every named flag with its name, in declaration order.
            pub const NAMED: &'static [(&'static str, $Name)] = &[$((stringify!($FLAG), $Name::$FLAG)),*];

            /// Every named flag set.
            pub const fn all() -> Self {
                $Name(0 $(| $bit)*)
            }

            /// Whether no flag is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// Whether every flag of `other` is set in `self` (for "any of them", test
            /// `!(self & other).is_empty()`).
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }

        /// The raw bits.
        impl From<$Name> for $Int {
            fn from(flags: $Name) -> $Int {
                flags.0
            }
        }

        /// The flags of raw bits; an error if a bit names no flag (mask with `all()`'s bits to
        /// drop those).
        impl TryFrom<$Int> for $Name {
            type Error = $crate::event::UnknownFlagsError;

            fn try_from(bits: $Int) -> Result<Self, Self::Error> {
                let unknown = bits & !Self::all().0;
                if unknown == 0 {
                    Ok($Name(bits))
                } else {
                    Err($crate::event::UnknownFlagsError::new(stringify!($Name), u64::from(unknown)))
                }
            }
        }

        impl ::core::ops::BitOr for $Name {
            type Output = Self;
            fn bitor(self, other: Self) -> Self {
                $Name(self.0 | other.0)
            }
        }

        impl ::core::ops::BitOrAssign for $Name {
            fn bitor_assign(&mut self, other: Self) {
                self.0 |= other.0;
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
                $Name(self.0 & !other.0)
            }
        }

        impl ::core::ops::SubAssign for $Name {
            fn sub_assign(&mut self, other: Self) {
                self.0 &= !other.0;
            }
        }

        impl ::core::ops::Not for $Name {
            type Output = Self;
            fn not(self) -> Self {
                $Name(Self::all().0 & !self.0)
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

/// The error of converting raw bits to a flag set ([`EventCategory`](super::EventCategory) or
/// [`Modifiers`](super::Modifiers)) when some bit names no flag.
///
/// ```
/// use lumina::event::Modifiers;
///
/// assert_eq!(Modifiers::try_from(0b11), Ok(Modifiers::SHIFT | Modifiers::CONTROL));
/// let error = Modifiers::try_from(0x80).unwrap_err();
/// assert_eq!(error.to_string(), "bits 0x80 name no flag of Modifiers");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownFlagsError {
    type_name: &'static str,
    unknown: u64,
}

impl UnknownFlagsError {
    pub(crate) const fn new(type_name: &'static str, unknown: u64) -> Self {
        UnknownFlagsError { type_name, unknown }
    }
}

impl std::fmt::Display for UnknownFlagsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bits {:#x} name no flag of {}",
            self.unknown, self.type_name
        )
    }
}

impl std::error::Error for UnknownFlagsError {}
