//! The API's request and response bodies, apart from the services that judge and make
//! them: plain data with its JSON form and its description (`utoipa`), shared by the
//! routes, the services and the command line's importer.

pub mod bans;
pub mod domains;
pub mod links;
pub mod problem;
pub mod stats;

use serde::{Deserialize, Deserializer};

/// Tells "absent" (`None`) from "null" (`Some(None)`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A whole number that a client may write as `210` or `210.0`: JSON, and the schema
/// that calls the field an integer, hold both to be the same number.
pub(crate) fn whole_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(u) = n.as_u64() {
        return Ok(Some(u));
    }
    match n.as_f64() {
        // Below 2^53 every whole float is exactly the integer it names.
        Some(f) if f.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&f) => {
            Ok(Some(f as u64))
        }
        _ => Err(D::Error::custom(format!(
            "invalid value: {n}, expected a whole number from 0"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct Ttl {
        #[serde(default, deserialize_with = "super::whole_u64")]
        ttl_s: Option<u64>,
    }

    fn ttl(json: &str) -> Result<Option<u64>, serde_json::Error> {
        serde_json::from_str::<Ttl>(json).map(|t| t.ttl_s)
    }

    #[test]
    fn a_whole_number_is_read_whichever_way_json_writes_it() {
        assert_eq!(ttl(r#"{"ttl_s": 210}"#).unwrap(), Some(210));
        assert_eq!(ttl(r#"{"ttl_s": 210.0}"#).unwrap(), Some(210));
        assert_eq!(ttl(r#"{"ttl_s": 2.1e2}"#).unwrap(), Some(210));
        assert_eq!(ttl(r#"{"ttl_s": null}"#).unwrap(), None);
        assert_eq!(ttl("{}").unwrap(), None);
        for refused in [
            r#"{"ttl_s": 210.5}"#,
            r#"{"ttl_s": -1}"#,
            r#"{"ttl_s": 1e300}"#,
            r#"{"ttl_s": "210"}"#,
        ] {
            assert!(ttl(refused).is_err(), "{refused}");
        }
    }
}
