//! Errors as HTTP responses: `application/problem+json` (RFC 9457), each with a detail
//! a person can act on. Server-side failures are logged and answered without internals.

pub use crate::store::StoreError;
pub use crate::views::problem::Problem;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// An error a handler returns; it knows its status and says what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("the database is not reachable")]
    Unavailable(#[source] crate::db::DbError),
    /// A failure of the database (unreachable, or holding what this version cannot read).
    #[error("{0}")]
    Store(StoreError),
    /// A failure that is neither the client's nor the database's.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("missing or invalid API key: send Authorization: Bearer hop_…")]
    Unauthorized,
    #[error("this endpoint is for the edge worker: send Authorization: Bearer <HOP_EDGE_TOKEN>")]
    EdgeUnauthorized,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("send Authorization: Bearer <HOP_METRICS_TOKEN>")]
    MetricsUnauthorized,
    #[error("{0}")]
    NotHere(&'static str),
    #[error("the database does not answer")]
    NotReady,
    #[error("no such link")]
    NotFound,
    #[error("no such ban")]
    BanNotFound,
    #[error("{field}: {detail}")]
    Invalid { field: &'static str, detail: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("the request body is larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{route} is taken: choose another alias")]
    Taken { route: String },
    #[error("this origin cannot {0}")]
    NotConfigured(&'static str),
    #[error("send If-Match with the version you read (its ETag), e.g. If-Match: \"3\"")]
    PreconditionRequired,
    #[error("it changed since you read it{}: read it again and retry", now_at(*.current))]
    Stale {
        /// The version there now, when it is known.
        current: Option<u64>,
    },
    #[error("that domain is registered already")]
    DomainRegistered,
    #[error("the link's domain changed while the link was being created: send it again")]
    DomainChanged,
    /// A change that what the domain holds forbids (409).
    #[error("{0}")]
    InUse(String),
    /// An owner holds as many webhook endpoints as it may (409).
    #[error("an owner has at most {limit} webhook endpoints: remove one (DELETE /v1/webhooks/{{id}}) before adding another")]
    TooManyEndpoints { limit: i64 },
    /// The domain's code sequence has passed the last code of its shape (409).
    #[error("{domain} has no generated codes left (all {size} of its shape are issued): give the link an alias, or create it on a domain with longer codes")]
    CodeSpaceFull { domain: String, size: u64 },
    #[error("the link is deleted; a deleted link cannot be changed")]
    Deleted,
    /// A restore of a link that is not deleted (409).
    #[error("the link is not deleted: there is nothing to restore")]
    NotDeleted,
    /// A restore after the restore window (410).
    #[error("the link was deleted at {deleted_at}, longer ago than links stay restorable ({days} days): its deletion is final and its code is never given out again")]
    DeletionFinal { deleted_at: String, days: u64 },
    #[error("{what} faster than allowed; retry in {retry_after_s} s")]
    RateLimited {
        retry_after_s: u64,
        /// Who did what too fast: "this key creates links", "this owner creates links".
        what: &'static str,
        /// The problem type: `rate-limited` (a key's), `owner-rate-limited`.
        problem: &'static str,
    },
    /// A create or a restore would take the owner past a quota (403).
    #[error("{}", quota_detail(*.quota, *.limit))]
    QuotaExceeded {
        quota: crate::model::quota::Quota,
        limit: i64,
    },
    #[error("too many failed authentications from this address; retry in {retry_after_s} s")]
    TooManyFailures { retry_after_s: u64 },
    /// A bounded resource (the password hashing gate) is full: 503, retry shortly.
    #[error("too many passwords are being hashed now; retry in {retry_after_s} s")]
    Busy { retry_after_s: u64 },
}

fn quota_detail(quota: crate::model::quota::Quota, limit: i64) -> String {
    match quota {
        crate::model::quota::Quota::Links => format!(
            "the owner holds its quota of {limit} live links: delete some, or ask the operator for more"
        ),
        crate::model::quota::Quota::LinksPerDay => format!(
            "the owner has created its quota of {limit} links today (UTC): create more tomorrow, or ask the operator for more"
        ),
    }
}

fn now_at(current: Option<u64>) -> String {
    current.map_or_else(String::new, |v| format!("; it is now at version {v}"))
}

impl AppError {
    pub fn invalid(field: &'static str, detail: impl std::fmt::Display) -> Self {
        AppError::Invalid {
            field,
            detail: detail.to_string(),
        }
    }

    /// A failure that is neither the client's nor the database's (a value this process
    /// made that it cannot encode, say): 500, its detail kept for the log.
    pub fn internal(what: impl std::fmt::Display) -> Self {
        AppError::Internal(what.to_string())
    }

    /// The problem document of a client error, for per-item results of a bulk call.
    pub fn problem(&self) -> serde_json::Value {
        serde_json::to_value(self.problem_of(&self.classify())).unwrap_or_default()
    }

    fn problem_of(&self, class: &Class) -> Problem {
        Problem {
            kind: format!("/problems/{}", class.kind),
            title: class
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_owned(),
            status: class.status.as_u16(),
            detail: match class.detail {
                Detail::Said => self.to_string(),
                Detail::Hidden(shown) => shown.to_owned(),
            },
            field: match self {
                AppError::Invalid { field, .. } => Some((*field).to_owned()),
                _ => None,
            },
        }
    }

    pub fn status(&self) -> StatusCode {
        self.classify().status
    }

    /// How long the client is told to wait before retrying (`Retry-After`), if at all.
    pub fn retry_after_s(&self) -> Option<u64> {
        self.classify().retry_after_s
    }

    /// The error and its sources as one line, for the log: what the answer hides.
    pub fn log_text(&self) -> String {
        failure_text(self)
    }

    /// How this error is answered: its status, its problem type, how long to wait before
    /// retrying, and whether its own words may be shown. The one place that says so, so
    /// no two of them can disagree.
    fn classify(&self) -> Class {
        use StatusCode as S;
        let class = |status, kind| Class {
            status,
            kind,
            retry_after_s: None,
            detail: Detail::Said,
        };
        let retry = |status, kind, retry_after_s: u64| Class {
            retry_after_s: Some(retry_after_s),
            ..class(status, kind)
        };
        match self {
            AppError::Unavailable(_) | AppError::NotReady => {
                class(S::SERVICE_UNAVAILABLE, "unavailable")
            }
            AppError::Store(e) => match e.inner() {
                // Its own words say when to retry, and nothing internal.
                StoreError::ActivationFull { retry_after_s } => {
                    retry(S::SERVICE_UNAVAILABLE, "unavailable", *retry_after_s)
                }
                StoreError::Unavailable(_) => Class {
                    detail: Detail::Hidden(UNAVAILABLE_DETAIL),
                    ..retry(
                        S::SERVICE_UNAVAILABLE,
                        "unavailable",
                        UNAVAILABLE_RETRY_AFTER_S,
                    )
                },
                // Internals stay in the log.
                _ => Class {
                    detail: Detail::Hidden(INTERNAL_DETAIL),
                    ..class(S::INTERNAL_SERVER_ERROR, "internal")
                },
            },
            AppError::Internal(_) => Class {
                detail: Detail::Hidden(INTERNAL_DETAIL),
                ..class(S::INTERNAL_SERVER_ERROR, "internal")
            },
            AppError::NotConfigured(_) => class(S::SERVICE_UNAVAILABLE, "not-configured"),
            AppError::Busy { retry_after_s } => {
                retry(S::SERVICE_UNAVAILABLE, "busy", *retry_after_s)
            }
            AppError::Taken { .. } => class(S::CONFLICT, "code-taken"),
            AppError::InUse(_) => class(S::CONFLICT, "domain-in-use"),
            AppError::CodeSpaceFull { .. } => class(S::CONFLICT, "code-space-full"),
            AppError::TooManyEndpoints { .. } => class(S::CONFLICT, "too-many-endpoints"),
            AppError::DomainRegistered => class(S::CONFLICT, "domain-registered"),
            AppError::DomainChanged => class(S::CONFLICT, "domain-changed"),
            AppError::Stale { .. } => class(S::PRECONDITION_FAILED, "stale-version"),
            AppError::Unauthorized | AppError::EdgeUnauthorized | AppError::MetricsUnauthorized => {
                class(S::UNAUTHORIZED, "unauthorized")
            }
            AppError::NotHere(_) | AppError::NotFound | AppError::BanNotFound => {
                class(S::NOT_FOUND, "not-found")
            }
            AppError::Forbidden(_) => class(S::FORBIDDEN, "forbidden"),
            AppError::Invalid { .. } => class(S::UNPROCESSABLE_ENTITY, "invalid-field"),
            AppError::BadRequest(_) => class(S::BAD_REQUEST, "bad-request"),
            AppError::TooLarge { .. } => class(S::PAYLOAD_TOO_LARGE, "too-large"),
            AppError::UnsupportedMediaType(_) => {
                class(S::UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type")
            }
            AppError::PreconditionRequired => {
                class(S::PRECONDITION_REQUIRED, "precondition-required")
            }
            AppError::Deleted => class(S::GONE, "deleted"),
            AppError::NotDeleted => class(S::CONFLICT, "not-deleted"),
            AppError::DeletionFinal { .. } => class(S::GONE, "deletion-final"),
            AppError::RateLimited {
                retry_after_s,
                problem,
                ..
            } => retry(S::TOO_MANY_REQUESTS, problem, *retry_after_s),
            AppError::TooManyFailures { retry_after_s } => {
                retry(S::TOO_MANY_REQUESTS, "rate-limited", *retry_after_s)
            }
            AppError::QuotaExceeded { quota, .. } => class(
                S::FORBIDDEN,
                match quota {
                    crate::model::quota::Quota::Links => "quota-links",
                    crate::model::quota::Quota::LinksPerDay => "quota-links-per-day",
                },
            ),
        }
    }
}

/// See [`AppError::classify`].
struct Class {
    status: StatusCode,
    /// The problem type: `/problems/<kind>`.
    kind: &'static str,
    retry_after_s: Option<u64>,
    detail: Detail,
}

/// Whether an error's own words are its answer's detail.
enum Detail {
    Said,
    /// What is said instead; the error itself goes to the log.
    Hidden(&'static str),
}

const UNAVAILABLE_DETAIL: &str = "the database cannot answer now; retry shortly";
const INTERNAL_DETAIL: &str = "an internal error occurred; it has been logged";

/// A store's outcome that is an answer to the request (taken, stale, registered) becomes
/// that answer; every other store error is the database's.
impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e.inner() {
            StoreError::Taken => AppError::Taken {
                route: "that code".to_owned(),
            },
            StoreError::Stale => AppError::Stale { current: None },
            StoreError::Registered => AppError::DomainRegistered,
            StoreError::DomainChanged => AppError::DomainChanged,
            StoreError::HoldsLinks => AppError::InUse(e.to_string()),
            StoreError::OverQuota { quota, limit } => AppError::QuotaExceeded {
                quota: *quota,
                limit: *limit,
            },
            _ => AppError::Store(e),
        }
    }
}

/// What a 503 for an unreachable database tells the client to wait, in seconds.
pub const UNAVAILABLE_RETRY_AFTER_S: u64 = 2;

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let class = self.classify();
        let body = serde_json::to_string(&self.problem_of(&class)).unwrap_or_default();
        let mut res = (
            class.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response();
        if let Some(wait) = class.retry_after_s {
            res.headers_mut().insert(header::RETRY_AFTER, wait.into());
        }
        // For `hop_api_refusals_total`: the layer that counts responses reads it.
        res.extensions_mut().insert(Refusal(class.kind));
        // What the answer hides, for the layer that logs it (`routes::observe`).
        if class.status.is_server_error() {
            res.extensions_mut().insert(Failure(failure_text(&self)));
        }
        res
    }
}

/// An error and its sources, as one line for the log.
fn failure_text(e: &AppError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A server-side failure carried in its response's extensions, for the observing layer to
/// log with the route it happened on: the answer itself says nothing internal.
#[derive(Debug, Clone)]
pub struct Failure(pub String);

/// Why a request was refused, as its problem type names it (`code-taken`, `banned`, …),
/// carried in the response's extensions to the layer that counts refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal(pub &'static str);

impl From<JsonRejection> for AppError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            // Unknown or missing fields, wrong types: the body parsed but does not fit.
            JsonRejection::JsonDataError(e) => AppError::Invalid {
                field: "body",
                detail: e.body_text(),
            },
            JsonRejection::JsonSyntaxError(e) => AppError::BadRequest(e.body_text()),
            JsonRejection::MissingJsonContentType(_) => {
                AppError::UnsupportedMediaType("send Content-Type: application/json".into())
            }
            other => AppError::BadRequest(other.body_text()),
        }
    }
}

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> Self {
        AppError::Invalid {
            field: "path",
            detail: rejection.body_text(),
        }
    }
}

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> Self {
        AppError::Invalid {
            field: "query",
            detail: rejection.body_text(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(e: AppError) -> (StatusCode, serde_json::Value, Response) {
        let res = e.into_response();
        let problem = res
            .extensions()
            .get::<Refusal>()
            .map(|r| serde_json::json!({ "type": format!("/problems/{}", r.0) }))
            .unwrap_or_default();
        (res.status(), problem, res)
    }

    #[test]
    fn an_internal_failure_is_logged_not_shown_and_is_not_blamed_on_the_database() {
        let e = AppError::internal("writing a PNG: out of memory");
        assert_eq!(e.problem()["detail"], INTERNAL_DETAIL);
        assert_eq!(e.problem()["type"], "/problems/internal");
        let (status, _, res) = answer(e);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let Failure(logged) = res.extensions().get::<Failure>().expect("left for the log");
        assert!(logged.contains("out of memory"), "{logged}");
        assert!(!logged.contains("database"), "{logged}");
    }

    #[test]
    fn a_store_outcome_is_answered_as_the_outcome_whichever_way_it_arrives() {
        let shared = |e| StoreError::Shared(std::sync::Arc::new(e));
        for (e, status, kind) in [
            (StoreError::Taken, StatusCode::CONFLICT, "code-taken"),
            (
                shared(StoreError::Taken),
                StatusCode::CONFLICT,
                "code-taken",
            ),
            (
                StoreError::Stale,
                StatusCode::PRECONDITION_FAILED,
                "stale-version",
            ),
            (
                StoreError::Registered,
                StatusCode::CONFLICT,
                "domain-registered",
            ),
            (
                StoreError::DomainChanged,
                StatusCode::CONFLICT,
                "domain-changed",
            ),
            (
                StoreError::HoldsLinks,
                StatusCode::CONFLICT,
                "domain-in-use",
            ),
            (
                StoreError::Unavailable("gone".into()),
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
            ),
            (
                StoreError::Corrupt("x".into()),
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
            ),
        ] {
            let e = AppError::from(e);
            assert_eq!(e.status(), status, "{e}");
            assert_eq!(e.problem()["type"], format!("/problems/{kind}"), "{e}");
            let (answered, refusal, res) = answer(e);
            assert_eq!(answered, status);
            assert_eq!(refusal["type"], format!("/problems/{kind}"));
            // Only a server-side failure is left for the log, and it alone says retry.
            assert_eq!(
                res.extensions().get::<Failure>().is_some(),
                status.is_server_error()
            );
            assert_eq!(
                res.headers().contains_key(header::RETRY_AFTER),
                status == StatusCode::SERVICE_UNAVAILABLE
            );
        }
    }

    #[test]
    fn a_stale_write_names_the_version_there_when_it_is_known() {
        let known = AppError::Stale { current: Some(4) }.to_string();
        assert!(known.contains("it is now at version 4"), "{known}");
        let unknown = AppError::Stale { current: None }.to_string();
        assert!(!unknown.contains("version"), "{unknown}");
    }
}
