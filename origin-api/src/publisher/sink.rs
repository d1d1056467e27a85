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
