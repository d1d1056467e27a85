//! `/openapi.json`: the API description, generated from the handlers' annotations and
//! the request and response types themselves, so it changes when they do.

use super::{
    abuse, admin, bans, domains, edge, health, history, imports, links, owners, redirect, stats,
    webhooks,
};
use crate::health::Health;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;
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
        links::qr,
        links::issue_token,
        links::restore,
        history::list,
        history::revert,
        stats::link,
        stats::owner,
        owners::me,
        domains::create,
        domains::list,
        domains::read,
        domains::update,
        domains::delete,
        domains::legacy_misses,
        domains::add_legacy_codes,
        domains::read_legacy_codes,
        imports::create,
        webhooks::create,
        webhooks::list,
        webhooks::read,
        webhooks::update,
        webhooks::delete,
        webhooks::rotate,
        webhooks::redeliver,
        webhooks::attempts,
        bans::create,
        bans::list,
        bans::lift,
        edge::resolve,
        edge::clicks,
        edge::denylist,
        admin::outbox,
        abuse::list,
        abuse::resolve,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi,
        redirect::redirect,
        redirect::password_form,
    ),
    modifiers(&BearerKey, &CommonResponses),
    tags(
        (name = "links", description = "Marketers' links, isolated per owner"),
        (name = "stats", description = "Clicks on the caller's links: time series, top dimensions, account summary"),
        (name = "domains", description = "The domains links live on: admin keys register them; every key sees those it may use"),
        (name = "webhooks", description = "Endpoints told of changes to the caller's links and domains, signed per Standard Webhooks (docs/webhooks.md)"),
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

/// The answers every `/v1` operation can give besides its own, added to each so that
/// the description names every status the API sends (schemathesis checks it does), and
/// the handlers list only their own: a missing credential's 401 (API key or edge token,
/// by the operation's security), a throttled guesser's 429 and an unreachable
/// database's 503 anywhere; 400, 413, 415 and 422 wherever a body is read; 400 and 422
/// wherever parameters are.
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let problem = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("Problem")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/v1/") {
                continue;
            }
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.patch,
                &mut item.delete,
                &mut item.put,
            ];
            for operation in operations.into_iter().flatten() {
                // The shapes of the headers the API parses itself.
                for parameter in operation.parameters.iter_mut().flatten() {
                    let pattern = match parameter.name.as_str() {
                        "If-Match" => r#"^("[0-9]{1,18}"|[0-9]{1,18})$"#,
                        "Idempotency-Key" => "^[!-~]{1,255}$",
                        _ => continue,
                    };
                    parameter.schema = Some(
                        utoipa::openapi::ObjectBuilder::new()
                            .schema_type(utoipa::openapi::schema::Type::String)
                            .pattern(Some(pattern))
                            .into(),
                    );
                }
                let mut add = |status: &str, description: &str| {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| problem(description).into());
                };
                let edge =
                    operation.security.iter().flatten().any(|s| {
                        serde_json::to_value(s).is_ok_and(|v| v.get("edge_token").is_some())
                    });
                add(
                    "401",
                    if edge {
                        "no edge token, or a wrong one"
                    } else {
                        "no live API key"
                    },
                );
                add(
                    "429",
                    "too many failed authentications from this address; see Retry-After",
                );
                add("503", "the database cannot answer now; see Retry-After");
                let body = operation.request_body.is_some();
                let parameters = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
                match (body, parameters) {
                    (true, true) => add(
                        "400",
                        "malformed JSON, or a malformed header (such as If-Match)",
                    ),
                    (true, false) => add("400", "malformed JSON"),
                    (false, true) => add("400", "a malformed header (such as If-Match)"),
                    (false, false) => {}
                }
                if body {
                    add("413", "body too large (the detail names the limit)");
                    add("415", "not JSON");
                    add("422", "a field is invalid (the problem names it)");
                }
                if parameters {
                    add("422", "a parameter is invalid (the problem names it)");
                }
            }
        }
    }
}

/// Built once: the description is fixed for the life of the process. `/metrics` is on
/// the public listener only with `HOP_METRICS_TOKEN`: without one, the description does
/// not name it, rather than name an operation nobody can call.
static WITH_METRICS: LazyLock<String> =
    LazyLock::new(|| ApiDoc::openapi().to_pretty_json().unwrap_or_default());
static WITHOUT_METRICS: LazyLock<String> = LazyLock::new(|| {
    let mut doc = ApiDoc::openapi();
    doc.paths.paths.remove("/metrics");
    doc.to_pretty_json().unwrap_or_default()
});

/// `GET /openapi.json`
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "operations",
    responses((status = 200, description = "This description (OpenAPI 3.1)", content_type = "application/json")))]
pub(crate) async fn openapi(State(health): State<Arc<Health>>) -> impl IntoResponse {
    let doc = if health.serves_public_metrics() {
        &WITH_METRICS
    } else {
        &WITHOUT_METRICS
    };
    ([(header::CONTENT_TYPE, "application/json")], doc.as_str())
}
