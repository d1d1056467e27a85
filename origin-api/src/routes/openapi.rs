//! `/openapi.json`: the API description, generated from the handlers' annotations and
//! the request and response types themselves, so it changes when they do.

use super::{admin, bans, edge, health, links, redirect, stats};
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::LazyLock;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Hop origin API",
        description = "The control plane of the Hop URL shortener: links, bans, operations, and the origin's own redirect. Errors are application/problem+json."
    ),
    paths(
        links::create,
        links::create_bulk,
        links::list,
        links::read,
        links::update,
        links::delete,
        stats::link,
        stats::owner,
        bans::create,
        bans::list,
        bans::lift,
        edge::resolve,
        edge::clicks,
        admin::outbox,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi,
        redirect::redirect,
    ),
    modifiers(&BearerKey),
    tags(
        (name = "links", description = "Marketers' links, isolated per owner"),
        (name = "stats", description = "Clicks on the caller's links: time series, top dimensions, account summary"),
        (name = "bans", description = "Trust & safety; admin keys only"),
        (name = "admin", description = "Operators: the publisher's dead letters; admin keys only"),
        (name = "edge", description = "What the edge worker asks the origin; edge token only"),
        (name = "operations", description = "Health, metrics and this description"),
        (name = "redirect", description = "The origin's own redirect, decided as at the edge"),
    )
)]
pub struct ApiDoc;

/// API keys travel as `Authorization: Bearer hop_…`.
struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("hop_<key id>_<secret>")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "edge_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "metrics_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Built once: the description is fixed for the life of the process.
static DOCUMENT: LazyLock<String> =
    LazyLock::new(|| ApiDoc::openapi().to_pretty_json().unwrap_or_default());

/// `GET /openapi.json`
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "operations",
    responses((status = 200, description = "This description (OpenAPI 3.1)", content_type = "application/json")))]
pub(crate) async fn openapi() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
}
