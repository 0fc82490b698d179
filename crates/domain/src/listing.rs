//! Keyset pagination, written once for every listing (`docs/api.md`, listPets): a listing
//! asks for the items after a position, at most a page of them, in the order of their ids,
//! optionally only those that pass a filter; the store is asked for one item more than the
//! page holds, so that whether a next page exists is known without a second query.

use thiserror::Error;

use crate::excerpt::excerpt;

/// How many items one page of a listing holds: 1 to 100, 20 by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u8);

/// Why an integer is not a valid [`PageSize`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("limit must be between {min} and {max}, got {0}", min = PageSize::MIN, max = PageSize::MAX)]
pub struct PageSizeError(pub String);

impl PageSize {
    /// The smallest page.
    pub const MIN: u8 = 1;
    /// The largest page.
    pub const MAX: u8 = 100;
    /// The page size when the client gives none.
    pub const DEFAULT: Self = Self(20);

    /// Validates a page size.
    ///
    /// # Errors
    ///
    /// [`PageSizeError`] when `size` is outside `1..=100`.
    pub fn new(size: i64) -> Result<Self, PageSizeError> {
        u8::try_from(size)
            .ok()
            .filter(|l| (Self::MIN..=Self::MAX).contains(l))
            .map(Self)
            .ok_or_else(|| PageSizeError(excerpt(&size.to_string())))
    }

    /// The page size.
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

impl Default for PageSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a listing asks for: the items that pass `filter` (when given) after the position
/// `after` (when given), at most `size` of them, ordered by id ascending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listing<F, P> {
    /// Only items that pass it, when given (a status).
    pub filter: Option<F>,
    /// At most this many items.
    pub size: PageSize,
    /// Only items after this position: the one a cursor carries.
    pub after: Option<P>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T, P> {
    /// The items, ordered by id ascending.
    pub items: Vec<T>,
    /// Where the next page starts, when there is one.
    pub next_after: Option<P>,
}

/// The first page of everything, of the default size.
impl<F, P> Default for Listing<F, P> {
    fn default() -> Self {
        Self { filter: None, size: PageSize::default(), after: None }
    }
}

impl<F, P> Listing<F, P> {
    /// How many items to ask the store for: one more than the page holds.
    pub const fn fetch(&self) -> usize {
        self.size.get() + 1
    }

    /// The page of `fetched`, what the store answered to [`Self::fetch`] in order; `position`
    /// is where an item sits, for the next page to start after the last one.
    pub fn page<T>(&self, mut fetched: Vec<T>, position: impl Fn(&T) -> P) -> Page<T, P> {
        let size = self.size.get();
        let next_after = if fetched.len() > size {
            fetched.truncate(size);
            fetched.last().map(position)
        } else {
            None
        };
        Page { items: fetched, next_after }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn page_limit_rules() {
        assert_eq!(PageSize::default().get(), 20);
        assert_eq!(PageSize::new(1).map(PageSize::get), Ok(1));
        assert_eq!(PageSize::new(100).map(PageSize::get), Ok(100));
        assert_eq!(PageSize::new(0), Err(PageSizeError("0".into())));
        assert_eq!(PageSize::new(101), Err(PageSizeError("101".into())));
        assert_eq!(PageSize::new(-1), Err(PageSizeError("-1".into())));
        assert_eq!(PageSize::new(356), Err(PageSizeError("356".into())));
    }

    proptest! {
        #[test]
        fn page_sizes_are_accepted_exactly_in_range(size in any::<i64>()) {
            prop_assert_eq!(PageSize::new(size).is_ok(), (1..=100).contains(&size));
        }
    }

    fn listing(size: i64) -> Listing<(), i64> {
        Listing { filter: None, size: PageSize::new(size).expect("a size"), after: None }
    }

    #[test]
    fn one_more_than_the_page_says_a_next_page_exists() {
        let two = listing(2);
        assert_eq!(two.fetch(), 3);
        let page = two.page(vec![1, 2, 3], |n| *n);
        assert_eq!((page.items, page.next_after), (vec![1, 2], Some(2)));
        let last = two.page(vec![7, 8], |n| *n);
        assert_eq!((last.items, last.next_after), (vec![7, 8], None));
        let empty = two.page(Vec::<i64>::new(), |n| *n);
        assert_eq!((empty.items, empty.next_after), (vec![], None));
    }
}
