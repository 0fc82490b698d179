//! A listing's query and its `Link` header, written once for every listing: `limit` (the
//! page size), `status` (the filter) and `cursor` (the position) in, and the address of the
//! next page, with the same `limit` and `status`, out.

use std::fmt::Display;
use std::str::FromStr;

use animal_store_domain::{Listing, PageSize};

use super::cursor::{decode_cursor, encode_cursor};
use super::params::parse_page_size;
use crate::error::ApiError;

/// The listing the raw `limit`, `status` and `cursor` of a query ask for; `position` makes
/// the cursor's id a position.
///
/// # Errors
///
/// 400: `validation_failed` for a page size or a status out of range, `invalid_request` for
/// a page size that is no integer or a malformed cursor.
pub fn listing<F, P>(
    limit: Option<&str>,
    status: Option<&str>,
    cursor: Option<&str>,
    position: impl Fn(i64) -> P,
) -> Result<Listing<F, P>, ApiError>
where
    F: FromStr,
    F::Err: Display,
{
    Ok(Listing {
        size: limit.map(parse_page_size).transpose()?.unwrap_or_default(),
        filter: status
            .map(str::parse::<F>)
            .transpose()
            .map_err(|e| ApiError::validation_failed(e.to_string()))?,
        after: cursor.map(decode_cursor).transpose()?.map(position),
    })
}

/// The `Link` header of the page after the item at `after` of `listing` at `path`; `more`
/// is the rest of the listing's query (`&id=3&id=7`), if any.
pub fn next_link<F: Display, P>(
    path: &str,
    listing: &Listing<F, P>,
    more: &str,
    after: i64,
) -> String {
    let status = listing.filter.as_ref().map(|s| format!("&status={s}")).unwrap_or_default();
    let size: PageSize = listing.size;
    let cursor = encode_cursor(after);
    format!("<{path}?limit={}{status}{more}&cursor={cursor}>; rel=\"next\"", size.get())
}

#[cfg(test)]
mod tests {
    use animal_store_domain::{PetId, PetStatus};

    use super::*;

    #[test]
    fn the_next_link_keeps_limit_and_status() {
        let listing: Listing<PetStatus, PetId> = Listing {
            filter: Some(PetStatus::Sold),
            size: PageSize::new(5).expect("a size"),
            after: None,
        };
        assert_eq!(
            next_link("/v1/pets", &listing, "&id=9&id=12", 9),
            format!(
                "</v1/pets?limit=5&status=sold&id=9&id=12&cursor={}>; rel=\"next\"",
                encode_cursor(9)
            )
        );
        let all: Listing<PetStatus, PetId> = Listing::default();
        assert_eq!(
            next_link("/v1/store/orders", &all, "", 3),
            format!("</v1/store/orders?limit=20&cursor={}>; rel=\"next\"", encode_cursor(3))
        );
    }
}
