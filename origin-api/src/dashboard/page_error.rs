//! The dashboard's one error model: what a page answers when it cannot be what was
//! asked.
//!
//! A service's refusal becomes a page by its status, as the API's problem does: what is
//! not the user's to see is not found, what their role does not allow says why, what
//! they can fix is said (a form handler shows the form again itself, with what was
//! typed), a busy or unreachable origin asks them to try again after `Retry-After`, and
//! a failure is an opaque page naming the request id, its detail only in the log.

use super::render::{message, Nav};
use super::request_id;
use crate::accounts::{AccountError, SignedIn};
use crate::error::{AppError, StoreError, UNAVAILABLE_RETRY_AFTER_S};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Why a page could not be what was asked.
#[derive(Debug)]
pub(super) enum PageError {
    /// Nothing the user may see (404): another owner's, or nothing at all.
    NotFound { nav: Option<Nav> },
    /// Their role does not allow it (403), in the service's words.
    Forbidden { nav: Option<Nav>, why: String },
    /// Something the user can change, said on a page of its own (the status of the
    /// service's refusal: 409, 410, 422, 429…).
    Refused {
        status: StatusCode,
        nav: Option<Nav>,
        text: String,
        /// When to try again (a 429's wait), sent as `Retry-After`.
        retry_after_s: Option<u64>,
    },
    /// The origin cannot do it now (503): try again after this many seconds.
    Unavailable { retry_after_s: u64 },
    /// The origin failed (500): the page names the request, the log says what failed.
    Failed(String),
}

impl PageError {
    /// A service's refusal, as the signed-in user's page.
    pub(super) fn of(signed: &SignedIn, e: AppError) -> PageError {
        let nav = || Nav::of(signed, None);
        match e {
            AppError::NotFound => PageError::NotFound { nav: nav() },
            AppError::Forbidden(why) => PageError::Forbidden {
                nav: nav(),
                why: why.to_owned(),
            },
            e => PageError::from(e).with_nav(nav()),
        }
    }

    fn with_nav(self, nav: Option<Nav>) -> PageError {
        match self {
            PageError::Refused {
                status,
                text,
                retry_after_s,
                ..
            } => PageError::Refused {
                status,
                nav,
                text,
                retry_after_s,
            },
            other => other,
        }
    }
}

impl From<&AppError> for PageError {
    fn from(e: &AppError) -> PageError {
        let status = e.status();
        match e {
            // What is not configured does not come back by waiting.
            AppError::NotConfigured(_) => PageError::Refused {
                status,
                nav: None,
                text: e.to_string(),
                retry_after_s: None,
            },
            _ if status == StatusCode::SERVICE_UNAVAILABLE => PageError::Unavailable {
                retry_after_s: e.retry_after_s().unwrap_or(UNAVAILABLE_RETRY_AFTER_S),
            },
            AppError::NotFound => PageError::NotFound { nav: None },
            AppError::Forbidden(why) => PageError::Forbidden {
                nav: None,
                why: (*why).to_owned(),
            },
            e if status.is_server_error() => PageError::Failed(e.log_text()),
            e => PageError::Refused {
                status,
                nav: None,
                text: e.to_string(),
                retry_after_s: e.retry_after_s(),
            },
        }
    }
}

impl From<AppError> for PageError {
    fn from(e: AppError) -> PageError {
        PageError::from(&e)
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> PageError {
        PageError::from(AppError::from(e))
    }
}

impl From<AccountError> for PageError {
    fn from(e: AccountError) -> PageError {
        use AccountError as A;
        let refused = |status: StatusCode, e: &AccountError| PageError::Refused {
            status,
            nav: None,
            text: e.to_string(),
            retry_after_s: match e {
                A::Locked { retry_after_s } => Some(*retry_after_s),
                _ => None,
            },
        };
        match e {
            A::Store(e) => PageError::from(AppError::from(e)),
            A::Internal(detail) => PageError::Failed(detail),
            // The hashing gate is full for a moment.
            A::Busy => PageError::Unavailable { retry_after_s: 1 },
            A::NotAnOperator | A::NoSuchUser | A::NotAMember => PageError::NotFound { nav: None },
            A::WrongCredentials => refused(StatusCode::UNAUTHORIZED, &e),
            A::Disabled => refused(StatusCode::FORBIDDEN, &e),
            A::Locked { .. } | A::Throttled => refused(StatusCode::TOO_MANY_REQUESTS, &e),
            A::BadEmail(_) | A::BadPassword(_) => refused(StatusCode::UNPROCESSABLE_ENTITY, &e),
            A::InvitationGone => refused(StatusCode::GONE, &e),
            A::EmailTaken | A::LastAdmin | A::InvitedElsewhere { .. } => {
                refused(StatusCode::CONFLICT, &e)
            }
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::NotFound { nav } => message(
                StatusCode::NOT_FOUND,
                nav,
                "Not found",
                "There is nothing here, or nothing you may see.",
            ),
            PageError::Forbidden { nav, why } => message(
                StatusCode::FORBIDDEN,
                nav,
                "Not allowed",
                &format!("{}.", super::render::capitalized(&why)),
            ),
            PageError::Refused {
                status,
                nav,
                text,
                retry_after_s,
            } => {
                let mut res = message(
                    status,
                    nav,
                    "Not done",
                    &format!("{}.", super::render::capitalized(&text)),
                );
                if let Some(wait) = retry_after_s {
                    res.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from(wait));
                }
                res
            }
            PageError::Unavailable { retry_after_s } => {
                let mut res = message(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    "Try again",
                    &format!(
                        "The dashboard cannot do that right now. Nothing was changed: try again in {retry_after_s} seconds."
                    ),
                );
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
                res
            }
            PageError::Failed(detail) => {
                let id = request_id::current();
                tracing::error!(request_id = %id, %detail, "dashboard failure");
                message(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    None,
                    "Something went wrong",
                    &format!(
                        "The dashboard could not do that just now. Try again in a moment; if it goes on, give your operator this reference: {id}."
                    ),
                )
            }
        }
    }
}

/// A failure of the origin, logged with the request's id, and shown without its
/// details ([`PageError::Failed`]).
pub(super) fn failure(detail: &str) -> Response {
    PageError::Failed(detail.to_owned()).into_response()
}

/// A service's error as a page, by its status ([`PageError`]).
pub(super) fn failed(e: impl Into<PageError>) -> Response {
    e.into().into_response()
}

pub(super) fn not_found_for(signed: &SignedIn) -> Response {
    PageError::NotFound {
        nav: Nav::of(signed, None),
    }
    .into_response()
}

/// A service's refusal as a page: what is not the user's to see is not found, what
/// their role does not allow says why, the origin's failure is opaque.
pub(super) fn refusal(signed: &SignedIn, e: crate::error::AppError) -> Response {
    PageError::of(signed, e).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(res: Response) -> String {
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .expect("a page");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    #[tokio::test]
    async fn a_failure_names_its_request_and_hides_what_failed() {
        let res = request_id::scope("0123abcd".to_owned(), async {
            PageError::from(AppError::Internal("the disk is full at /var/x".into())).into_response()
        })
        .await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let page = body(res).await;
        assert!(page.contains("0123abcd"), "{page}");
        assert!(!page.contains("disk"), "{page}");
    }

    #[tokio::test]
    async fn busy_or_unreachable_says_try_again_with_retry_after() {
        for e in [
            AppError::Busy { retry_after_s: 7 },
            AppError::NotReady,
            AppError::from(StoreError::Unavailable("connection refused".into())),
        ] {
            let wanted = e.retry_after_s().unwrap_or(UNAVAILABLE_RETRY_AFTER_S);
            let res = PageError::from(e).into_response();
            assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(
                res.headers()[header::RETRY_AFTER],
                wanted.to_string().as_str()
            );
            let page = body(res).await;
            assert!(page.contains("Try again"), "{page}");
            assert!(page.contains(&format!("{wanted} seconds")), "{page}");
        }
    }

    #[tokio::test]
    async fn a_refusal_keeps_its_status_and_its_words() {
        let res =
            PageError::from(AppError::invalid("title", "at most 200 characters")).into_response();
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(body(res).await.contains("at most 200 characters"));
        let res = PageError::from(AppError::NotFound).into_response();
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let res = PageError::from(AppError::TooManyFailures { retry_after_s: 9 }).into_response();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "9");
    }
}
