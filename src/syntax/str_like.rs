//! The impls that make a wrapper of a shared string read like a `&str`.

/// Implements `Deref<Target = str>`, `Borrow<str>`, `AsRef<str>`,
/// `Display`, and equality with `str`, `&str` and `String` both ways, for
/// a tuple struct whose field `0` derefs to `str`.
macro_rules! str_like {
    ($type:ty) => {
        impl std::ops::Deref for $type {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $type {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $type {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $type {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $type {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl PartialEq<String> for $type {
            fn eq(&self, other: &String) -> bool {
                *self.0 == **other
            }
        }

        impl PartialEq<$type> for str {
            fn eq(&self, other: &$type) -> bool {
                *self == *other.0
            }
        }

        impl PartialEq<$type> for &str {
            fn eq(&self, other: &$type) -> bool {
                **self == *other.0
            }
        }

        impl PartialEq<$type> for String {
            fn eq(&self, other: &$type) -> bool {
                **self == *other.0
            }
        }
    };
}

pub(crate) use str_like;
