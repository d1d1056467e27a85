//! `/v1/admin/*`: what an operator looks at. Admin keys only.

use super::body::ApiQuery;
use super::responses::AdminOnly;
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::model::time::rfc3339;
use crate::outbox::{FailedRow, Outbox};
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct OutboxQuery {
    /// `failed`: the rows set aside after the edge refused them.
    #[param(pattern = "^failed$")]
    state: String,
    /// The `next_after` of the previous page.
    #[serde(default)]
    after: Option<i64>,
    /// 1 to 1000 (default 100).
    #[serde(default)]
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// One row set aside.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct FailedView {
    /// Its place in the outbox; `hop-origin outbox retry --seq` takes it.
    pub seq: i64,
    pub lane: String,
    /// `link`, `deny` or `segment`.
    pub kind: String,
    /// `domain/code` for links.
    pub key: String,
    pub version: i64,
    /// Times the edge refused it.
    pub attempts: i64,
    /// Why, in the edge's (or the publisher's) words.
    pub last_error: String,
    pub created_at: String,
    pub failed_at: String,
}

/// A page of rows set aside.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct FailedPage {
    pub items: Vec<FailedView>,
    /// Pass as `after` for the next page; `null` on the last.
    pub next_after: Option<i64>,
}

impl From<FailedRow> for FailedView {
    fn from(r: FailedRow) -> Self {
        FailedView {
            seq: r.seq,
            lane: r.lane,
            kind: r.kind,
            key: r.route_key,
            version: r.version,
            attempts: r.attempts,
            last_error: r.last_error,
            created_at: rfc3339(r.created_at),
            failed_at: rfc3339(r.failed_at),
        }
    }
}

/// `GET /v1/admin/outbox?state=failed`: the dead letters of publishing, oldest first.
#[utoipa::path(get, path = "/v1/admin/outbox", operation_id = "admin_outbox", tag = "admin", params(OutboxQuery),
    responses(
        (status = 200, description = "Rows the edge refused until they were set aside; `hop-origin outbox retry` puts them back in line", body = FailedPage),
        AdminOnly,
        (status = 422, description = "a state other than `failed`, or a bad limit", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn outbox(
    State(outbox): State<Arc<Outbox>>,
    caller: Caller,
    ApiQuery(q): ApiQuery<OutboxQuery>,
) -> Result<Json<FailedPage>, AppError> {
    let page = outbox
        .listed(
            &caller.principal(),
            &q.state,
            q.after.unwrap_or(0),
            q.limit.unwrap_or(100),
        )
        .await?;
    Ok(Json(FailedPage {
        items: page.rows.into_iter().map(FailedView::from).collect(),
        next_after: page.next_after,
    }))
}
