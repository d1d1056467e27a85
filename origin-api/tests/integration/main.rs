//! The origin's integration tests, one binary: each module was a test binary of its
//! own, and on two cores linking fifteen copies of the origin and its dependencies took
//! longer than running most of them (docs/testing.md). `common` is the fresh-database
//! harness they share.

mod common;

mod abuse;
mod activation;
mod clicks;
mod config_check;
mod dashboard;
mod domains_api;
mod faults;
mod fingerprints;
mod freshness;
mod history;
mod hostile;
mod import_export;
mod import_restart;
mod imports;
mod key_rotation;
mod links_api;
mod notes;
mod observability;
mod openapi;
mod postgres_tls;
mod publisher;
mod quotas;
mod races;
mod random_codes;
mod restore;
mod retention;
mod scanners;
mod scoped_keys;
mod sequences;
mod skeleton;
mod store_conformance;
mod targeting;
mod upgrade;
mod visitor_urls;
mod webhooks;
mod words;
