//! The abuse desk's routes (docs/abuse.md): the public report form at `/_hop/report`
//! (never in a code's path space: no code holds a `/`), and the reports for admins at
//! `/v1/admin/reports`.

use super::body::{ApiJson, ApiPath, ApiQuery};
use super::responses::AdminOnly;
use crate::abuse::reports::{ReportForm, ReportView, Reports};
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::views::links::Page;
use askama::Template;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::{Form, Json};
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

#[derive(Template)]
#[template(path = "public/report.html")]
struct ReportPage {
    form: ReportForm,
    categories: [(&'static str, &'static str); 4],
    error: Option<String>,
    thanked: bool,
}

const CATEGORIES: [(&str, &str); 4] = [
    (
        "phishing",
        "Phishing: it imitates a site to take passwords or payments",
    ),
    ("malware", "Malware: it downloads or runs something harmful"),
    ("spam", "Spam: it was sent unasked, in bulk"),
    ("other", "Something else"),
];

fn page(status: StatusCode, page: ReportPage) -> Response {
    match page.render() {
        Ok(html) => {
            let mut res = (status, Html(html)).into_response();
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; form-action 'self'; base-uri 'none'"),
            );
            res
        }
        Err(e) => AppError::Internal(e.to_string()).into_response(),
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Prefill {
    #[serde(default)]
    url: String,
}

/// `GET /_hop/report[?url=…]`: the form.
pub(crate) async fn form(Query(q): Query<Prefill>) -> Response {
    page(
        StatusCode::OK,
        ReportPage {
            form: ReportForm {
                url: q.url.chars().take(300).collect(),
                ..ReportForm::default()
            },
            categories: CATEGORIES,
            error: None,
            thanked: false,
        },
    )
}

/// `POST /_hop/report`: records the report; the same thanks whether or not the link
/// exists.
pub(crate) async fn submit(
    State(reports): State<Arc<Reports>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    Form(form): Form<ReportForm>,
) -> Response {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| *a);
    match reports.submit(&form, peer, &headers).await {
        Ok(()) => page(
            StatusCode::OK,
            ReportPage {
                form: ReportForm::default(),
                categories: CATEGORIES,
                error: None,
                thanked: true,
            },
        ),
        Err(e) if e.status().is_client_error() => {
            let status = e.status();
            let mut res = page(
                status,
                ReportPage {
                    form,
                    categories: CATEGORIES,
                    error: Some(e.to_string()),
                    thanked: false,
                },
            );
            if let AppError::RateLimited { retry_after_s, .. } = e {
                if let Ok(v) = HeaderValue::from_str(&retry_after_s.to_string()) {
                    res.headers_mut().insert(header::RETRY_AFTER, v);
                }
            }
            res
        }
        Err(e) => e.into_response(),
    }
}

/// `?all&cursor&limit` of the reports.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ReportParams {
    /// `true`: resolved reports too (default: open ones only).
    #[serde(default)]
    all: bool,
    /// From a previous page's `next_cursor`.
    #[param(pattern = "^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
}

/// `GET /v1/admin/reports`: reports from the public form, newest first.
#[utoipa::path(get, path = "/v1/admin/reports", operation_id = "list_reports", tag = "admin",
    params(ReportParams),
    responses(
        (status = 200, description = "A page of reports, newest first, each with the link it names as it is now (owner, target, status) and how many reports name it", body = Page<ReportView>),
        AdminOnly,
        (status = 422, description = "a bad cursor or limit", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(reports): State<Arc<Reports>>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ReportParams>,
) -> Result<Json<Page<ReportView>>, AppError> {
    let (items, next_cursor) = reports
        .list(
            &caller.principal(),
            params.all,
            params.cursor.as_deref(),
            params.limit.unwrap_or(100),
        )
        .await?;
    Ok(Json(Page { items, next_cursor }))
}

/// The body of `POST /v1/admin/reports/{id}/resolve`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Resolve {
    /// What was done: `banned`, `dismissed`, or a few words.
    #[schema(min_length = 1, max_length = 500)]
    resolution: String,
}

/// `POST /v1/admin/reports/{id}/resolve`: closes a report.
#[utoipa::path(post, path = "/v1/admin/reports/{id}/resolve", operation_id = "resolve_report", tag = "admin",
    request_body = Resolve, params(("id" = i64, Path)),
    responses(
        (status = 204, description = "Closed (or closed already)"),
        AdminOnly,
        (status = 404, description = "no such report", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "an empty resolution", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn resolve(
    State(reports): State<Arc<Reports>>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<Resolve>,
) -> Result<StatusCode, AppError> {
    reports
        .resolve(&caller.principal(), id, &body.resolution)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
