//! The dashboard: pages for the people who run campaigns and the operators, rendered on
//! the server from compile-time-checked templates (askama), served by `hop-origin` on
//! a listener of its own (`--dashboard-listen`), never on the short domains, where a
//! page could shadow a code (docs/dashboard.md).
//!
//! Every page works without JavaScript: forms post, and the answer is a page or a
//! redirect to one. A browser holds a session cookie, never an API key
//! ([`crate::accounts`]); every form carries the session's token, and a post from
//! another site is refused before it is read.

mod admin;
mod analytics;
mod assets;
mod bulk;
mod chart;
mod history;
mod imports;
mod keys;
mod link_form;
mod link_form_fields;
mod link_tools;
mod members;
mod overview;
mod page_error;
mod pages;
mod render;
mod request_id;
mod session;

use crate::app::AppState;
use axum::http::{header, HeaderValue, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use session::SESSION_COOKIE;

/// The largest form body taken.
const BODY_LIMIT: usize = 16 * 1024;

/// No page loads anything from another host, runs inline script, or is framed.
const CSP: &str = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
     form-action 'self'; base-uri 'none'; object-src 'none'";

/// A request's span, named by its route's template: a path may carry a secret (an
/// invitation's token), which never reaches a log.
fn span(req: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("(unmatched)", axum::extract::MatchedPath::as_str);
    tracing::debug_span!("request", method = %req.method(), route)
}

/// The dashboard's pages and assets.
pub fn router(state: AppState) -> Router {
    let header = |name, value: &'static str| {
        SetResponseHeaderLayer::if_not_present(name, HeaderValue::from_static(value))
    };
    Router::new()
        .route("/", get(pages::home))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", post(pages::logout))
        .route("/logout/everywhere", post(pages::logout_everywhere))
        .route("/account", get(pages::account))
        .route("/account/password", post(pages::change_password))
        .route("/o/{owner}", get(overview::page))
        .route(
            "/o/{owner}/links",
            get(pages::links).post(link_form::create),
        )
        .route("/o/{owner}/links/new", get(link_form::new_link))
        .route("/o/{owner}/links/bulk", post(bulk::apply))
        .route(
            "/o/{owner}/members",
            get(members::members).post(members::change),
        )
        .route("/o/{owner}/invitations", post(members::invite))
        .route("/o/{owner}/keys", get(keys::list).post(keys::create))
        .route("/o/{owner}/keys/{key_id}/revoke", post(keys::revoke))
        .route("/invite/{token}", get(members::open).post(members::accept))
        .route(
            "/o/{owner}/links/{domain}/{code}",
            get(link_form::edit).post(link_form::update),
        )
        .route("/o/{owner}/alias", get(link_tools::alias))
        .route(
            "/o/{owner}/links/{domain}/{code}/test",
            get(link_tools::test),
        )
        .route("/o/{owner}/links/{domain}/{code}/qr", get(link_tools::qr))
        .route(
            "/o/{owner}/links/{domain}/{code}/tokens",
            post(link_tools::token),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/stats",
            get(analytics::page),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/delete",
            post(link_form::delete),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/restore",
            post(link_form::restore),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/history",
            get(history::page),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/revert",
            post(history::revert),
        )
        .route("/admin", get(admin::overview))
        .route("/admin/outbox/retry", post(admin::retry))
        .route("/admin/bans", get(admin::bans).post(admin::ban))
        .route("/admin/bans/{id}/lift", post(admin::lift))
        .route("/admin/domains", get(admin::domains))
        .route("/admin/domains/{domain}", post(admin::update))
        .route("/admin/users", get(admin::users))
        .route("/admin/users/disable", post(admin::disable))
        .route("/admin/owner", get(admin::owner))
        // Assets go compressed to a browser that asks (htmx is 51 KB, 16 KB gzip); pages
        // do not: a page holds the session's form token beside text the visitor typed,
        // what a compression side channel (BREACH) needs (D-244).
        .route(
            "/assets/{name}",
            get(assets::asset).layer(tower_http::compression::CompressionLayer::new()),
        )
        // As the API's routes: a deadline, a span, and the route's time and answers in
        // the metrics (under its template: `/o/{owner}/links`, …).
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            crate::routes::REQUEST_TIMEOUT,
        ))
        // Past the deadline: an upload of up to 32 MB (read inside its handler, over
        // whatever uplink the user has) and a download of a link's visits, which a
        // deadline would cut off half-done.
        .route(
            "/o/{owner}/import",
            get(imports::form)
                .post(imports::submit)
                .layer(axum::extract::DefaultBodyLimit::max(imports::MAX_UPLOAD)),
        )
        .route(
            "/o/{owner}/links/{domain}/{code}/stats.csv",
            get(analytics::csv),
        )
        .route_layer(TraceLayer::new_for_http().make_span_with(span))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::routes::observe::observe,
        ))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            session::same_site_posts,
        ))
        // A form of this dashboard is a few hundred bytes; nothing needs more.
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .layer(header(header::CONTENT_SECURITY_POLICY, CSP))
        .layer(header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(header::REFERRER_POLICY, "same-origin"))
        .layer(header(header::CACHE_CONTROL, "no-store"))
        // Outermost: every answer names its request, refusals before routing too.
        .layer(axum::middleware::from_fn(request_id::with_request_id))
        .with_state(state)
}
