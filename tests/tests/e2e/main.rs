//! The end-to-end tests, one binary: the real `hop-origin` and the real `wrangler dev`
//! (the harness is this crate's library). Each module was a binary of its own; one
//! links once and builds the worker once (docs/testing.md).

mod dashboard_browser;
mod edge_activation;
mod edge_bans;
mod edge_cache;
mod edge_clicks;
mod edge_domains;
mod edge_feeds;
mod edge_imports;
mod edge_kv_incident;
mod edge_legacy;
mod edge_memory;
mod edge_origin;
mod edge_random_codes;
mod edge_restore;
mod edge_scans;
mod edge_smoke;
mod edge_sync;
mod edge_targeting;
mod edge_webhooks;
mod hostile_origin;
mod hostile_requests;
mod publisher_failover;
mod run_command;
