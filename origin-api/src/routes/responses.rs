//! Answers that several operations give alike, named once for their `responses(...)`
//! lists in the API description. They describe, and are never built: the handlers
//! answer with `AppError`.

use crate::error::Problem;

/// The 403 of an operation only admin keys may call.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 403,
    description = "not an admin key",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub(crate) struct AdminOnly(Problem);

/// The 403 of a change to a link whose domain no longer admits its owner, or is
/// disabled: such links are read and delete only.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 403,
    description = "the link's domain no longer admits its owner, or is disabled: read and delete only",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub(crate) struct ReadAndDeleteOnly(Problem);

/// The 404 of a link that is not the caller's, or is nobody's, or lies outside the
/// domains the key is limited to: they look alike.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 404,
    description = "no such link for this owner (or this key's domains)",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub(crate) struct NoSuchLink(Problem);

/// The 404 of a domain the registry does not hold.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 404,
    description = "not registered",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub(crate) struct NotRegistered(Problem);

/// The answers of a change that must name the version it read (`If-Match`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub(crate) enum IfMatchRequired {
    #[response(
        status = 412,
        description = "the version moved on",
        content_type = "application/problem+json"
    )]
    Stale(Problem),
    #[response(
        status = 428,
        description = "If-Match is missing",
        content_type = "application/problem+json"
    )]
    Missing(Problem),
}

/// The 412 of a change whose `If-Match` is optional.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 412,
    description = "the version moved on",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub(crate) struct IfMatchHonoured(Problem);
