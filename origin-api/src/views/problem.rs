//! An error as the API answers it: the body of every refusal.

use serde::Serialize;

/// An error as the API answers it (RFC 9457, `application/problem+json`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `/problems/<kind>`, stable: branch on this, not on `detail`.
    #[serde(rename = "type")]
    #[schema(example = "/problems/invalid")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    /// What went wrong and what to do about it, for a person.
    pub detail: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
