//! How far each operation may still change (`docs/api.md#stability`).
//!
//! - `stable`: changes only in ways that keep working clients working; removal only after a
//!   deprecation period (`getPet`'s).
//! - `beta`: may change in incompatible ways, announced with a deprecation period first.
//! - `experimental`: may change or go away without notice; `--disable-experimental` turns
//!   these operations off (404, and absent from the served document).
//!
//! An operation's stability is in the table of operations (`operations/table.rs`): the
//! document's `x-stability` is written from it, and the responses of a beta or experimental
//! operation carry `API-Stability` (see `edge/envelope.rs`). Its summary starts with
//! the same word for readers of the docs page (`[experimental] Place an order`, `[beta]
//! Update an order`; none for stable), which a test holds to the table.

use poem::http::HeaderValue;

/// How far an operation may still change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stability {
    /// Kept compatible; removed only after a deprecation period.
    #[default]
    Stable,
    /// May change incompatibly, after a deprecation period.
    Beta,
    /// May change or go away without notice.
    Experimental,
}

impl Stability {
    /// The name the document (`x-stability`) and the `API-Stability` header use.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::Beta => "beta",
            Self::Experimental => "experimental",
        }
    }

    /// The stability `summary` declares with its prefix, and the summary without it.
    #[cfg(test)]
    pub fn of_summary(summary: &str) -> (Self, &str) {
        for stability in [Self::Beta, Self::Experimental] {
            let prefix = format!("[{}] ", stability.as_str());
            if let Some(rest) = summary.strip_prefix(&prefix) {
                return (stability, rest);
            }
        }
        (Self::Stable, summary)
    }

    /// The value of the `API-Stability` header, for the operations that carry one.
    pub fn header(self) -> Option<HeaderValue> {
        (self != Self::Stable).then(|| HeaderValue::from_static(self.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_prefix_names_the_stability() {
        assert_eq!(
            Stability::of_summary("[experimental] Place an order"),
            (Stability::Experimental, "Place an order")
        );
        assert_eq!(Stability::of_summary("[beta] Update an order").0, Stability::Beta);
        assert_eq!(Stability::of_summary("List animals"), (Stability::Stable, "List animals"));
        assert_eq!(Stability::of_summary("[alpha] Something").0, Stability::Stable);
    }
}
