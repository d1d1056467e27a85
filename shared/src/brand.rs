//! A brand domain's look on the pages its visitors may get (issue 38): its name and its
//! colour, checked readable. Imports nothing of this crate: the domain's settings carry
//! a brand, and the pages are dressed in it (`crate::html`).

use serde::{Deserialize, Serialize};

/// A brand domain's look on its visitors' pages (not found, expired, the interstitial,
/// the password form, …): its name above each page, its colour for links and buttons.
///
/// Carried as a pair, `["Acme", "#8a1c1c"]`: a pair's serde code is a fraction of a
/// struct's with named fields in the edge's WebAssembly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(String, String)", into = "(String, String)")]
pub struct Brand {
    /// Shown above the page's own words, escaped.
    pub name: String,
    /// `#rrggbb`, dark enough to read on white ([`Brand::check`]).
    pub colour: String,
}

impl From<(String, String)> for Brand {
    fn from((name, colour): (String, String)) -> Brand {
        Brand { name, colour }
    }
}

impl From<Brand> for (String, String) {
    fn from(b: Brand) -> (String, String) {
        (b.name, b.colour)
    }
}

/// The longest brand name a domain takes, in characters.
pub const MAX_BRAND_NAME: usize = 60;

/// Why a brand was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BrandError {
    #[error("a brand's name is 1 to {MAX_BRAND_NAME} characters, without control characters")]
    Name,
    #[error("a colour is written #rrggbb, as #0b5cad")]
    Colour,
    #[error("{colour} on white reads at {ratio:.1}:1; links need at least 4.5:1 (WCAG AA): choose a darker colour")]
    TooLight { colour: String, ratio: f64 },
}

impl Brand {
    /// The brand as kept, or why not: a name people can read, and a colour whose text
    /// on white has at least 4.5:1 contrast, so that its links stay readable.
    pub fn check(name: &str, colour: &str) -> Result<Brand, BrandError> {
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_BRAND_NAME
            || name.chars().any(char::is_control)
        {
            return Err(BrandError::Name);
        }
        let colour = colour.trim().to_ascii_lowercase();
        let rgb = hex_colour(&colour).ok_or(BrandError::Colour)?;
        // WCAG 2's relative luminance and contrast ratio, against white (luminance 1).
        let channel = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.039_28 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let luminance =
            0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2]);
        let ratio = 1.05 / (luminance + 0.05);
        if ratio < 4.5 {
            return Err(BrandError::TooLight { colour, ratio });
        }
        Ok(Brand {
            name: name.to_owned(),
            colour,
        })
    }
}

/// `#rrggbb` as its three channels. By hand: the edge checks every colour it is given,
/// and `from_str_radix` costs its WebAssembly more than these lines.
pub(crate) fn hex_colour(colour: &str) -> Option<[u8; 3]> {
    let hex = colour.strip_prefix('#')?.as_bytes();
    if hex.len() != 6 {
        return None;
    }
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    };
    let mut rgb = [0u8; 3];
    for (i, channel) in rgb.iter_mut().enumerate() {
        *channel = nibble(hex[2 * i])? << 4 | nibble(hex[2 * i + 1])?;
    }
    Some(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brand_colour_must_be_readable_on_white() {
        let brand = Brand::check("  Acme  ", "#0B5CAD").expect("Hop's own blue");
        assert_eq!(
            (brand.name.as_str(), brand.colour.as_str()),
            ("Acme", "#0b5cad")
        );
        assert!(
            Brand::check("Acme", "#767676").is_ok(),
            "4.54:1, just enough"
        );
        assert!(matches!(
            Brand::check("Acme", "#777777"),
            Err(BrandError::TooLight { .. })
        ));
        assert!(matches!(
            Brand::check("Acme", "#ffcc00"),
            Err(BrandError::TooLight { .. })
        ));
        for colour in ["red", "#fff", "#12345g", "0b5cad", "#0b5cad;"] {
            assert_eq!(
                Brand::check("Acme", colour),
                Err(BrandError::Colour),
                "{colour}"
            );
        }
        assert_eq!(Brand::check(" ", "#000000"), Err(BrandError::Name));
        assert_eq!(
            Brand::check(&"x".repeat(61), "#000000"),
            Err(BrandError::Name)
        );
    }
}
