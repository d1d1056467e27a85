//! `/v1/webhooks`: endpoints that receive the events of the caller's links and domains
//! (or, registered by an admin key with `scope: all`, of everyone's).

use super::body::{ApiJson, ApiPath, ApiQuery, SMALL_BODY_LIMIT};
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::views::links::Page;
use crate::views::webhooks::{
    AttemptPageParams, AttemptView, CreateWebhook, Redeliver, UpdateWebhook, WebhookPageParams,
    WebhookView,
};
use crate::webhooks::Webhooks;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use std::sync::Arc;

/// `POST /v1/webhooks`: registers an endpoint; the answer holds its secret, once.
#[utoipa::path(post, path = "/v1/webhooks", operation_id = "create_webhook", tag = "webhooks", request_body = CreateWebhook,
    responses(
        (status = 201, description = "Registered; `secret` (`whsec_…`) verifies its deliveries and is shown only here", body = WebhookView),
        (status = 403, description = "`scope: all` needs an admin key; a key limited to some domains cannot manage webhooks", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a URL that is not https on a public address, an unknown event type, a long description", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateWebhook, SMALL_BODY_LIMIT>,
) -> Result<(StatusCode, Json<WebhookView>), AppError> {
    let made = state.create(&caller, body).await?;
    tracing::info!(endpoint = %made.id, by = %caller.key_id, "webhook endpoint registered");
    Ok((StatusCode::CREATED, Json(made)))
}

/// `GET /v1/webhooks`: the caller's endpoints (an admin key: everyone's), by id.
#[utoipa::path(get, path = "/v1/webhooks", operation_id = "list_webhooks", tag = "webhooks",
    params(WebhookPageParams),
    responses(
        (status = 200, description = "A page of endpoints", body = Page<WebhookView>),
        (status = 403, description = "a key limited to some domains", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a bad limit", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiQuery(params): ApiQuery<WebhookPageParams>,
) -> Result<Json<Page<WebhookView>>, AppError> {
    Ok(Json(
        state
            .list(&caller, params.cursor.as_deref(), params.limit)
            .await?,
    ))
}

/// `GET /v1/webhooks/{id}`.
#[utoipa::path(get, path = "/v1/webhooks/{id}", operation_id = "read_webhook", tag = "webhooks",
    params(("id" = String, Path)),
    responses(
        (status = 200, description = "The endpoint, and how its deliveries stand", body = WebhookView),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn read(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WebhookView>, AppError> {
    Ok(Json(state.get(&caller, &id).await?))
}

/// `PATCH /v1/webhooks/{id}`: its URL, event types, description; `enabled`.
#[utoipa::path(patch, path = "/v1/webhooks/{id}", operation_id = "update_webhook", tag = "webhooks", request_body = UpdateWebhook,
    params(("id" = String, Path)),
    responses(
        (status = 200, description = "Changed", body = WebhookView),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a bad field", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn update(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<UpdateWebhook, SMALL_BODY_LIMIT>,
) -> Result<Json<WebhookView>, AppError> {
    Ok(Json(state.update(&caller, &id, body).await?))
}

/// `DELETE /v1/webhooks/{id}`: the endpoint and its attempts.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", operation_id = "delete_webhook", tag = "webhooks",
    params(("id" = String, Path)),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn delete(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, AppError> {
    state.delete(&caller, &id).await?;
    tracing::info!(endpoint = %id, by = %caller.key_id, "webhook endpoint removed");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/webhooks/{id}/rotate`: a new secret; the old one also signs for 24 hours.
#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate", operation_id = "rotate_webhook_secret", tag = "webhooks",
    params(("id" = String, Path)),
    responses(
        (status = 200, description = "The new `secret`, shown only here; deliveries carry a signature with each secret until `previous_secret_until`", body = WebhookView),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn rotate(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WebhookView>, AppError> {
    Ok(Json(state.rotate(&caller, &id).await?))
}

/// `POST /v1/webhooks/{id}/redeliver`: an event and every later one, again, in order.
#[utoipa::path(post, path = "/v1/webhooks/{id}/redeliver", operation_id = "redeliver_webhook", tag = "webhooks", request_body = Redeliver,
    params(("id" = String, Path)),
    responses(
        (status = 200, description = "The endpoint, enabled, sending again from that event", body = WebhookView),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "no such event (never, or older than the retention)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn redeliver(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Redeliver, SMALL_BODY_LIMIT>,
) -> Result<Json<WebhookView>, AppError> {
    Ok(Json(state.redeliver(&caller, &id, body).await?))
}

/// `GET /v1/webhooks/{id}/attempts`: delivery attempts, newest first.
#[utoipa::path(get, path = "/v1/webhooks/{id}/attempts", operation_id = "list_webhook_attempts", tag = "webhooks",
    params(("id" = String, Path), AttemptPageParams),
    responses(
        (status = 200, description = "A page of attempts, newest first", body = Page<AttemptView>),
        (status = 404, description = "no such endpoint of this key's owner", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn attempts(
    State(state): State<Arc<Webhooks>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<AttemptPageParams>,
) -> Result<Json<Page<AttemptView>>, AppError> {
    Ok(Json(
        state
            .attempts(&caller, &id, params.cursor.as_deref(), params.limit)
            .await?,
    ))
}
