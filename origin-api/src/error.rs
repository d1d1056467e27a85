//! Errors as HTTP responses: `application/problem+json` (RFC 9457), each with a detail
//! a person can act on. Server-side failures are logged and answered without internals.

use crate::store::StoreError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error a handler returns; it knows its status and says what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("the database is not reachable")]
    Unavailable(#[source] crate::db::DbError),
    #[error("{0}")]
    Store(#[from] StoreError),
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
    #[error(
        "it changed since you read it; it is now at version {current}: read it again and retry"
    )]
    Stale { current: u64 },
    /// A change that what the domain holds forbids (409).
    #[error("{0}")]
    InUse(String),
    /// The domain's code sequence has passed the last code of its shape (409).
    #[error("{domain} has no generated codes left (all {size} of its shape are issued): give the link an alias, or create it on a domain with longer codes")]
    CodeSpaceFull { domain: String, size: u64 },
    #[error("the link is deleted; a deleted link cannot be changed")]
    Deleted,
    #[error("this key {what} faster than allowed; retry in {retry_after_s} s")]
    RateLimited {
        retry_after_s: u64,
        /// What the key did too fast: "creates links", "changes passwords".
        what: &'static str,
    },
    #[error("too many failed authentications from this address; retry in {retry_after_s} s")]
    TooManyFailures { retry_after_s: u64 },
    /// A bounded resource (the password hashing gate) is full: 503, retry shortly.
    #[error("too many passwords are being hashed now; retry in {retry_after_s} s")]
    Busy { retry_after_s: u64 },
}

impl AppError {
    pub fn invalid(field: &'static str, detail: impl std::fmt::Display) -> Self {
        AppError::Invalid {
            field,
            detail: detail.to_string(),
        }
    }

    /// The problem document of a client error, for per-item results of a bulk call.
    pub fn problem(&self) -> serde_json::Value {
        serde_json::to_value(self.problem_parts()).unwrap_or_default()
    }

    fn problem_parts(&self) -> Problem {
        let status = self.status();
        Problem {
            kind: format!("/problems/{}", self.kind()),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: self.to_string(),
            field: match self {
                AppError::Invalid { field, .. } => Some((*field).to_owned()),
                _ => None,
            },
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Unavailable(_)
            | AppError::NotConfigured(_)
            | AppError::NotReady
            | AppError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Store(e) if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Taken { .. } | AppError::InUse(_) | AppError::CodeSpaceFull { .. } => {
                StatusCode::CONFLICT
            }
            AppError::Store(e) if matches!(e.inner(), StoreError::Taken) => StatusCode::CONFLICT,
            AppError::Store(e)
                if matches!(
                    e.inner(),
                    StoreError::Registered | StoreError::DomainChanged
                ) =>
            {
                StatusCode::CONFLICT
            }
            AppError::Stale { .. } => StatusCode::PRECONDITION_FAILED,
            AppError::Store(e) if matches!(e.inner(), StoreError::Stale) => {
                StatusCode::PRECONDITION_FAILED
            }
            AppError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
            AppError::Unauthorized | AppError::EdgeUnauthorized | AppError::MetricsUnauthorized => {
                StatusCode::UNAUTHORIZED
            }
            AppError::NotHere(_) => StatusCode::NOT_FOUND,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound | AppError::BanNotFound => StatusCode::NOT_FOUND,
            AppError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::PreconditionRequired => StatusCode::PRECONDITION_REQUIRED,
            AppError::Deleted => StatusCode::GONE,
            AppError::RateLimited { .. } | AppError::TooManyFailures { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            AppError::Unavailable(_) | AppError::NotReady => "unavailable",
            AppError::Store(e) if e.is_unavailable() => "unavailable",
            AppError::NotConfigured(_) => "not-configured",
            AppError::Busy { .. } => "busy",
            AppError::Taken { .. } => "code-taken",
            AppError::InUse(_) => "domain-in-use",
            AppError::CodeSpaceFull { .. } => "code-space-full",
            AppError::Store(e) if matches!(e.inner(), StoreError::Taken) => "code-taken",
            AppError::Store(e) if matches!(e.inner(), StoreError::Registered) => {
                "domain-registered"
            }
            AppError::Store(e) if matches!(e.inner(), StoreError::DomainChanged) => {
                "domain-changed"
            }
            AppError::Stale { .. } => "stale-version",
            AppError::Store(e) if matches!(e.inner(), StoreError::Stale) => "stale-version",
            AppError::Store(_) => "internal",
            AppError::Unauthorized | AppError::EdgeUnauthorized | AppError::MetricsUnauthorized => {
                "unauthorized"
            }
            AppError::NotHere(_) => "not-found",
            AppError::Forbidden(_) => "forbidden",
            AppError::NotFound | AppError::BanNotFound => "not-found",
            AppError::Invalid { .. } => "invalid-field",
            AppError::BadRequest(_) => "bad-request",
            AppError::TooLarge { .. } => "too-large",
            AppError::UnsupportedMediaType(_) => "unsupported-media-type",
            AppError::PreconditionRequired => "precondition-required",
            AppError::Deleted => "deleted",
            AppError::RateLimited { .. } | AppError::TooManyFailures { .. } => "rate-limited",
        }
    }
}

/// What a 503 for an unreachable database tells the client to wait, in seconds.
pub const UNAVAILABLE_RETRY_AFTER_S: u64 = 2;

/// An error as the API answers it (RFC 9457, `application/problem+json`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `/problems/<kind>`, stable: branch on this, not on `detail`.
    #[serde(rename = "type")]
    #[schema(example = "/problems/invalid")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    /// What went wrong and what to do about it, for a person.
    pub detail: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let detail = if status.is_server_error() {
            tracing::error!(error = %self, source = ?std::error::Error::source(&self), "request failed");
            match &self {
                AppError::Store(e) if matches!(e.inner(), StoreError::ActivationFull { .. }) => {
                    e.to_string()
                }
                AppError::Store(e) if e.is_unavailable() => {
                    "the database cannot answer now; retry shortly".to_owned()
                }
                // Internals stay in the log.
                AppError::Store(_) => "an internal error occurred; it has been logged".to_owned(),
                _ => self.to_string(),
            }
        } else {
            self.to_string()
        };
        let problem = Problem {
            detail,
            ..self.problem_parts()
        };
        let body = serde_json::to_string(&problem).unwrap_or_default();
        let mut res = (
            status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response();
        match &self {
            AppError::RateLimited { retry_after_s, .. }
            | AppError::TooManyFailures { retry_after_s }
            | AppError::Busy { retry_after_s } => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, (*retry_after_s).into());
            }
            AppError::Store(e) if e.is_unavailable() => {
                let wait = match e.inner() {
                    StoreError::ActivationFull { retry_after_s } => *retry_after_s,
                    _ => UNAVAILABLE_RETRY_AFTER_S,
                };
                res.headers_mut().insert(header::RETRY_AFTER, wait.into());
            }
            _ => {}
        }
        // For `hop_api_refusals_total`: the layer that counts responses reads it.
        res.extensions_mut().insert(Refusal(self.kind()));
        res
    }
}

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
