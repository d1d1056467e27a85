//! Where the publisher pushes: the edge worker's sync endpoint (and, for large
//! deployments, Cloudflare's KV bulk API).

use async_trait::async_trait;
use shared::sync::{SyncBatch, SyncItem, SyncReply, MAX_SYNC_ITEMS, SYNC_PATH};
use std::time::Duration;

/// Why a push was not acknowledged; the publisher retries it.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("the edge is unreachable: {0}")]
    Unreachable(String),
    #[error("the edge answered {status}: {body}")]
    Refused { status: u16, body: String },
}

/// Takes KV writes and says which it wrote and which it refused.
#[async_trait]
pub trait Sink: Send + Sync + std::fmt::Debug + 'static {
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError>;
}

/// `POST {edge}/_hop/sync` with the sync token.
#[derive(Debug, Clone)]
pub struct WorkerSync {
    http: reqwest::Client,
    url: url::Url,
    token: String,
}

impl WorkerSync {
    /// The worker at `edge` (its base URL).
    pub fn new(edge: &url::Url, token: &str) -> Result<Self, SinkError> {
        let url = edge
            .join(SYNC_PATH)
            .map_err(|e| SinkError::Unreachable(format!("{edge}: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        Ok(WorkerSync {
            http,
            url,
            token: token.to_owned(),
        })
    }
}

#[async_trait]
impl Sink for WorkerSync {
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        let mut reply = SyncReply::default();
        for chunk in items.chunks(MAX_SYNC_ITEMS) {
            let batch = SyncBatch {
                items: chunk.to_vec(),
            };
            let res = self
                .http
                .post(self.url.clone())
                .bearer_auth(&self.token)
                .json(&batch)
                .send()
                .await
                .map_err(|e| SinkError::Unreachable(e.to_string()))?;
            let status = res.status();
            if !status.is_success() {
                return Err(SinkError::Refused {
                    status: status.as_u16(),
                    body: res.text().await.unwrap_or_default(),
                });
            }
            let part: SyncReply = res
                .json()
                .await
                .map_err(|e| SinkError::Unreachable(format!("unreadable answer: {e}")))?;
            reply.written.extend(part.written);
            reply.refused.extend(part.refused);
        }
        Ok(reply)
    }
}

/// Cloudflare's Workers KV bulk write:
/// `PUT {api}/accounts/{account}/storage/kv/namespaces/{namespace}/bulk` with a JSON
/// array of `{"key", "value", "expiration"?}` (at most 10,000 pairs) and an API token.
/// KV itself checks no versions: the publisher's one leader, coalescing to the newest
/// version and retiring rows an already delivered newer version supersedes, is the fence.
#[derive(Debug, Clone)]
pub struct KvBulk {
    http: reqwest::Client,
    url: url::Url,
    token: String,
}

/// The most pairs one bulk write may carry.
pub const KV_BULK_MAX: usize = 10_000;

#[derive(serde::Serialize)]
struct KvPair<'a> {
    key: &'a str,
    value: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiration: Option<i64>,
}

#[derive(serde::Deserialize)]
struct KvAnswer {
    success: bool,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
    #[serde(default)]
    result: Option<KvResult>,
}

#[derive(serde::Deserialize)]
struct KvResult {
    #[serde(default)]
    unsuccessful_keys: Vec<String>,
}

impl KvBulk {
    /// The namespace `namespace` of `account`, through the API at `api` (normally
    /// `https://api.cloudflare.com/client/v4`).
    pub fn new(
        api: &url::Url,
        account: &str,
        namespace: &str,
        token: &str,
    ) -> Result<Self, SinkError> {
        let base = api.as_str().trim_end_matches('/');
        let url = url::Url::parse(&format!(
            "{base}/accounts/{account}/storage/kv/namespaces/{namespace}/bulk"
        ))
        .map_err(|e| SinkError::Unreachable(format!("KV bulk URL: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        Ok(KvBulk {
            http,
            url,
            token: token.to_owned(),
        })
    }
}

#[async_trait]
impl Sink for KvBulk {
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        let mut reply = SyncReply::default();
        for chunk in items.chunks(KV_BULK_MAX) {
            let pairs: Vec<KvPair<'_>> = chunk
                .iter()
                .map(|i| KvPair {
                    key: &i.key,
                    value: &i.value,
                    expiration: i.expiration,
                })
                .collect();
            let res = self
                .http
                .put(self.url.clone())
                .bearer_auth(&self.token)
                .json(&pairs)
                .send()
                .await
                .map_err(|e| SinkError::Unreachable(e.to_string()))?;
            let status = res.status();
            let body = res.text().await.unwrap_or_default();
            let answer: Option<KvAnswer> = serde_json::from_str(&body).ok();
            match answer {
                Some(a) if status.is_success() && a.success => {
                    let failed = a.result.map(|r| r.unsuccessful_keys).unwrap_or_default();
                    if !failed.is_empty() {
                        return Err(SinkError::Refused {
                            status: status.as_u16(),
                            body: format!(
                                "KV did not write {} keys, e.g. {:?}",
                                failed.len(),
                                failed.first()
                            ),
                        });
                    }
                    reply.written.extend(chunk.iter().map(|i| i.key.clone()));
                }
                Some(a) => {
                    return Err(SinkError::Refused {
                        status: status.as_u16(),
                        body: serde_json::to_string(&a.errors).unwrap_or(body),
                    })
                }
                None => {
                    return Err(SinkError::Refused {
                        status: status.as_u16(),
                        body,
                    })
                }
            }
        }
        Ok(reply)
    }
}
