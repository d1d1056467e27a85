//! Writes a `shared` decision out as a Workers response.

use shared::{Body, Decision};
use worker::{Headers, Response, Result};

pub(crate) fn to_response(decision: Decision) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in &decision.headers {
        headers.set(name, value)?;
    }
    // Built by hand: `Response::redirect` returns immutable headers.
    let response = match decision.body {
        Body::Empty => Response::empty()?,
        Body::Text(text) | Body::Html(text) => Response::ok(text)?,
    };
    Ok(response.with_status(decision.status).with_headers(headers))
}
