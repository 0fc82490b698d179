//! A key's scope (`docs/api.md#scopes`): what it may do. A `read` key calls only the
//! operations that change nothing; a `write` key, every operation.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// What a key may do (`docs/api.md#scopes`): every operation, or only those that change
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// The operations that change nothing, and the rate-limit inquiry: for a storefront
    /// that shows the catalogue, a dashboard, a read replica's consumer.
    Read,
    /// Every operation. The default.
    #[default]
    Write,
}

impl Scope {
    /// Every scope, the narrowest first.
    pub const ALL: [Self; 2] = [Self::Read, Self::Write];

    /// The scope's name, as the command line, the store and the document spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }

    /// Whether a key of this scope may call an operation that needs `needed`.
    pub const fn allows(self, needed: Self) -> bool {
        matches!((self, needed), (Self::Write, _) | (Self::Read, Self::Read))
    }
}

/// A scope name other than `read` and `write`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown scope {0:?}: expected read or write")]
pub struct ScopeError(pub String);

impl FromStr for Scope {
    type Err = ScopeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.name() == s)
            .ok_or_else(|| ScopeError(crate::excerpt(s)))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
