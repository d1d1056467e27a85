//! Listing an owner's links, newest first, a page at a time. Keyset pagination: the
//! cursor is the position of the last link shown, so pages never skip or repeat links
//! while others are created.

use crate::error::AppError;
use crate::model::time::{now_ms, parse_rfc3339};
use crate::model::{Creator, Link, ListFilter};
use crate::views::links::{
    ListParams, Page, DEFAULT_PAGE, MAX_PAGE, MAX_SEARCH_CHARS, MAX_TAG_CHARS,
};

impl ListFilter {
    /// The listing `params` ask for, of `caller`'s links: only on the domains its key is
    /// limited to, if it is (403 when `domain` names another).
    pub fn new(caller: &Creator<'_>, params: ListParams) -> Result<Self, AppError> {
        let limit = params.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(AppError::invalid(
                "limit",
                format!("between 1 and {MAX_PAGE}"),
            ));
        }
        let domain = params
            .domain
            .map(|d| shared::normalize_domain(&d).map_err(|e| AppError::invalid("domain", e)))
            .transpose()?;
        let domains = match (domain, caller.domains) {
            (Some(d), _) if !caller.reaches(&d) => {
                return Err(AppError::Forbidden(
                    "this key is limited to other domains (keys create --domain)",
                ))
            }
            (Some(d), _) => vec![d],
            (None, Some(limited)) => limited.to_vec(),
            (None, None) => Vec::new(),
        };
        let after = params
            .cursor
            .map(|c| {
                decode_cursor(&c)
                    .ok_or_else(|| AppError::invalid("cursor", "not a cursor this API gave out"))
            })
            .transpose()?;
        // A tag no link can carry is a mistake in the request, not an empty page.
        if let Some(tag) = &params.tag {
            if tag.is_empty() || tag.chars().count() > MAX_TAG_CHARS {
                return Err(AppError::invalid(
                    "tag",
                    format!("a tag is 1 to {MAX_TAG_CHARS} characters"),
                ));
            }
        }
        let search = params
            .q
            .map(|q| {
                let q = q.trim();
                if q.is_empty() || q.chars().count() > MAX_SEARCH_CHARS {
                    return Err(AppError::invalid(
                        "q",
                        format!("a search is 1 to {MAX_SEARCH_CHARS} characters"),
                    ));
                }
                Ok(q.to_lowercase())
            })
            .transpose()?;
        let instant = |field: &'static str, raw: Option<String>| {
            raw.map(|s| {
                parse_rfc3339(&s).ok_or_else(|| {
                    AppError::invalid(field, "use RFC 3339, e.g. 2026-11-01T00:00:00Z")
                })
            })
            .transpose()
        };
        let created_from = instant("created_after", params.created_after)?;
        let created_to = instant("created_before", params.created_before)?;
        if let (Some(from), Some(to)) = (created_from, created_to) {
            if from >= to {
                return Err(AppError::invalid(
                    "created_after",
                    "must be before created_before",
                ));
            }
        }
        Ok(ListFilter {
            owner_id: caller.owner.to_owned(),
            domains,
            tag: params.tag,
            status: params.status,
            search,
            condition: params.condition,
            access: params.access,
            feature: params.has,
            created_from,
            created_to,
            now: now_ms(),
            after,
            limit,
        })
    }

    /// Turns up to `limit + 1` links (as the store returns them) into a page.
    pub fn page(&self, mut links: Vec<Link>) -> Page<Link> {
        let more = links.len() > self.limit as usize;
        links.truncate(self.limit as usize);
        let next_cursor = more
            .then(|| links.last().map(|l| encode_cursor(l.created_at, l.link_id)))
            .flatten();
        Page {
            items: links,
            next_cursor,
        }
    }
}

fn encode_cursor(created_at: i64, link_id: u64) -> String {
    format!("{created_at}.{link_id}")
}

fn decode_cursor(cursor: &str) -> Option<(i64, u64)> {
    let (at, id) = cursor.split_once('.')?;
    // Link ids are stored as BIGINT: a larger one was never given out.
    let id: i64 = id.parse().ok()?;
    Some((at.parse().ok()?, u64::try_from(id).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        assert_eq!(
            decode_cursor(&encode_cursor(1_700_000_000_000, 42)),
            Some((1_700_000_000_000, 42))
        );
        assert_eq!(decode_cursor("42"), None);
        assert_eq!(decode_cursor("a.b"), None);
        assert_eq!(
            decode_cursor("1.9223372036854775808"),
            None,
            "past i64::MAX"
        );
        assert_eq!(decode_cursor("1.-1"), None);
        let bad = ListFilter::new(
            &Creator::owner("o"),
            ListParams {
                cursor: Some("x".into()),
                ..Default::default()
            },
        );
        assert!(bad.is_err());
        let bad = ListFilter::new(
            &Creator::owner("o"),
            ListParams {
                limit: Some(0),
                ..Default::default()
            },
        );
        assert!(bad.is_err());
        let bad = ListFilter::new(
            &Creator::owner("o"),
            ListParams {
                limit: Some(MAX_PAGE + 1),
                ..Default::default()
            },
        );
        assert!(bad.is_err());
    }
}
