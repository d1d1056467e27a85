//! Which unique index refused a write, by its name: the one place that knows the
//! constraints' names on both databases (PostgreSQL names the constraint, SQLite names
//! the columns in its message).

/// What a unique index refusing a write means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `UNIQUE (domain, code)` on `links`: the code is taken.
    Route,
    /// The registry's primary key: the domain is registered already.
    Domain,
    /// `users_by_email`: a user has that email.
    Email,
    /// Any other index (a primary key reused, say, as when two processes were handed
    /// the same ids): a fault of the system, never of the request.
    Other(String),
}

/// PostgreSQL's name for `UNIQUE (domain, code)` on `links`.
const ROUTE_CONSTRAINT: &str = "links_domain_code_key";
/// PostgreSQL's name for the registry's primary key.
const DOMAIN_CONSTRAINT: &str = "domains_pkey";
/// PostgreSQL's name for the unique index of users' emails.
const EMAIL_CONSTRAINT: &str = "users_by_email";

/// The unique index that refused `e`, if a unique index did.
pub(crate) fn refused(e: &sqlx::Error) -> Option<Refused> {
    let d = e.as_database_error()?;
    if !d.is_unique_violation() {
        return None;
    }
    let (route, domain, email) = match d.constraint() {
        Some(name) => (
            name == ROUTE_CONSTRAINT,
            name == DOMAIN_CONSTRAINT,
            name == EMAIL_CONSTRAINT,
        ),
        None => (
            d.message().ends_with(": links.domain, links.code"),
            d.message().ends_with(": domains.domain"),
            d.message().ends_with(": users.email"),
        ),
    };
    Some(if route {
        Refused::Route
    } else if domain {
        Refused::Domain
    } else if email {
        Refused::Email
    } else {
        Refused::Other(d.message().to_owned())
    })
}
