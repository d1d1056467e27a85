//! The dashboard's own assets, compiled into the binary: no CDN, no other host.
//!
//! htmx is the file of the `htmx.org` package that `package-lock.json` pins, copied here
//! so that building the origin needs no npm; a test holds the copy to the pin.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("../../assets/dashboard.css");
const JS: &str = include_str!("../../assets/dashboard.js");
const HTMX: &str = include_str!("../../assets/htmx.min.js");

/// `GET /assets/{name}`: cached for an hour (a new release may change them).
pub(super) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "dashboard.css" => (CSS, "text/css; charset=utf-8"),
        "dashboard.js" => (JS, "text/javascript; charset=utf-8"),
        "htmx.min.js" => (HTMX, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version the lock file pins for `package`.
    fn pinned(package: &str) -> String {
        let lock: serde_json::Value =
            serde_json::from_str(include_str!("../../../package-lock.json"))
                .expect("package-lock.json is JSON");
        lock["packages"][format!("node_modules/{package}")]["version"]
            .as_str()
            .expect("the package is pinned")
            .to_owned()
    }

    #[test]
    fn the_embedded_htmx_is_the_one_the_lock_file_pins() {
        let version = pinned("htmx.org");
        assert!(
            HTMX.contains(&format!("version:\"{version}\"")),
            "assets/htmx.min.js is not htmx {version}: copy node_modules/htmx.org/dist/htmx.min.js"
        );
        // Where npm installed the pinned package, the copy is its file byte for byte.
        let installed = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../node_modules/htmx.org/dist/htmx.min.js"
        );
        if let Ok(file) = std::fs::read_to_string(installed) {
            assert_eq!(
                file, HTMX,
                "assets/htmx.min.js differs from the installed package's"
            );
        }
    }
}
