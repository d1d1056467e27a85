//! Errors as HTTP responses: `application/problem+json` (RFC 9457).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error a handler returns; it knows its status and says what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("the database is not reachable")]
    Unavailable(#[source] crate::db::DbError),
}

#[derive(Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    detail: String,
}

impl AppError {
    fn status(&self) -> StatusCode {
        match self {
            AppError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            AppError::Unavailable(_) => "unavailable",
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, source = ?std::error::Error::source(&self), "request failed");
        }
        let problem = Problem {
            kind: self.kind(),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: self.to_string(),
        };
        let body = serde_json::to_string(&problem).unwrap_or_default();
        (
            status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response()
    }
}
