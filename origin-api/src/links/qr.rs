//! QR codes of short links: the full short URL (`https://{domain}/{code}`) encoded by a
//! maintained encoder (`qrcodegen`), drawn as SVG or PNG with whole pixels per module
//! so that a scanner never sees a blurred edge.

use crate::error::AppError;
use crate::views::links::{Ecc, QrFormat, QrParams};
use qrcodegen::{QrCode, QrCodeEcc};

/// Side of a PNG, in pixels, unless asked otherwise; and the bounds of what may be asked.
pub const DEFAULT_SIZE: u32 = 512;
pub const MIN_SIZE: u32 = 64;
pub const MAX_SIZE: u32 = 4096;
/// The quiet zone the standard asks for, in modules; and the most that may be asked.
pub const DEFAULT_MARGIN: u32 = 4;
pub const MAX_MARGIN: u32 = 32;

impl From<Ecc> for QrCodeEcc {
    fn from(e: Ecc) -> Self {
        match e {
            Ecc::L => QrCodeEcc::Low,
            Ecc::M => QrCodeEcc::Medium,
            Ecc::Q => QrCodeEcc::Quartile,
            Ecc::H => QrCodeEcc::High,
        }
    }
}

/// A drawn code: its bytes and their media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

/// The code of `text` drawn as `params` ask, or why it cannot be.
pub fn draw(text: &str, params: &QrParams) -> Result<Drawn, AppError> {
    let size = params.size.unwrap_or(DEFAULT_SIZE);
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return Err(AppError::invalid(
            "size",
            format!("{MIN_SIZE} to {MAX_SIZE} pixels, not {size}"),
        ));
    }
    let margin = params.margin.unwrap_or(DEFAULT_MARGIN);
    if margin > MAX_MARGIN {
        return Err(AppError::invalid(
            "margin",
            format!("0 to {MAX_MARGIN} modules, not {margin}"),
        ));
    }
    let ecc = params.ecc.unwrap_or(Ecc::M);
    // A short URL is at most a 253-byte domain and a 64-character code: every level
    // holds it (version 40-L holds 2,953 bytes, 40-H 1,273).
    let code = QrCode::encode_text(text, ecc.into()).map_err(|_| {
        AppError::invalid("ecc", "the short URL does not fit a QR code at this level")
    })?;
    match params.format.unwrap_or(QrFormat::Svg) {
        QrFormat::Svg => Ok(Drawn {
            content_type: "image/svg+xml",
            bytes: svg(&code, margin, size).into_bytes(),
        }),
        QrFormat::Png => Ok(Drawn {
            content_type: "image/png",
            bytes: png(&code, margin, size)?,
        }),
    }
}

/// Modules per side, quiet zone included.
fn side(code: &QrCode, margin: u32) -> u32 {
    code.size().unsigned_abs() + 2 * margin
}

/// One path of unit squares in module coordinates, scaled by the viewer: a few KB for a
/// short URL, sharp at any size.
fn svg(code: &QrCode, margin: u32, size: u32) -> String {
    let side = side(code, margin);
    let mut path = String::new();
    for y in 0..code.size() {
        for x in 0..code.size() {
            if code.get_module(x, y) {
                let (px, py) = (x.unsigned_abs() + margin, y.unsigned_abs() + margin);
                path.push_str(&format!("M{px},{py}h1v1h-1z"));
            }
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{size}\" height=\"{size}\" \
         viewBox=\"0 0 {side} {side}\" shape-rendering=\"crispEdges\">\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\
         <path d=\"{path}\" fill=\"#000\"/></svg>\n"
    )
}

/// An 8-bit greyscale PNG at most `size` pixels a side, a whole number of pixels per
/// module (at least one).
fn png(code: &QrCode, margin: u32, size: u32) -> Result<Vec<u8>, AppError> {
    let side = side(code, margin);
    let scale = (size / side).max(1);
    let px = side * scale;
    let mut pixels = vec![255u8; (px as usize) * (px as usize)];
    for y in 0..code.size() {
        for x in 0..code.size() {
            if !code.get_module(x, y) {
                continue;
            }
            let (mx, my) = (x.unsigned_abs() + margin, y.unsigned_abs() + margin);
            for row in my * scale..(my + 1) * scale {
                let start = (row * px + mx * scale) as usize;
                pixels[start..start + scale as usize].fill(0);
            }
        }
    }
    let mut out = Vec::new();
    let failed = |e: png::EncodingError| AppError::Internal(format!("writing a PNG: {e}"));
    let mut encoder = png::Encoder::new(&mut out, px, px);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://s.example/7Fk3aQx";

    /// What a scanner reads from a PNG: its pixels decoded, then the code found and read.
    fn scan(png_bytes: &[u8]) -> String {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("a frame");
        assert_eq!(info.color_type, png::ColorType::Grayscale);
        let (w, h) = (info.width as usize, info.height as usize);
        let mut img = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| buf[y * w + x]);
        let grids = img.detect_grids();
        assert_eq!(grids.len(), 1, "one code in the image");
        let (_, text) = grids[0].decode().expect("decodes");
        text
    }

    #[test]
    fn a_png_scans_back_to_the_short_url_at_every_level() {
        for ecc in [Ecc::L, Ecc::M, Ecc::Q, Ecc::H] {
            let params = QrParams {
                format: Some(QrFormat::Png),
                ecc: Some(ecc),
                ..QrParams::default()
            };
            let drawn = draw(URL, &params).unwrap();
            assert_eq!(drawn.content_type, "image/png");
            assert_eq!(scan(&drawn.bytes), URL, "{ecc:?}");
        }
    }

    #[test]
    fn a_png_is_at_most_its_size_with_whole_pixels_per_module() {
        let params = QrParams {
            format: Some(QrFormat::Png),
            size: Some(200),
            margin: Some(2),
            ..QrParams::default()
        };
        let drawn = draw(URL, &params).unwrap();
        let reader = png::Decoder::new(std::io::Cursor::new(&drawn.bytes[..]))
            .read_info()
            .unwrap();
        let w = reader.info().width;
        let code = QrCode::encode_text(URL, QrCodeEcc::Medium).unwrap();
        let side = code.size() as u32 + 4;
        assert!(w <= 200, "{w}");
        assert_eq!(w % side, 0, "{w} px for {side} modules");
        assert_eq!(scan(&drawn.bytes), URL);
    }

    #[test]
    fn an_svg_draws_every_dark_module_once_in_its_viewbox() {
        let drawn = draw(URL, &QrParams::default()).unwrap();
        assert_eq!(drawn.content_type, "image/svg+xml");
        let svg = String::from_utf8(drawn.bytes).unwrap();
        let code = QrCode::encode_text(URL, QrCodeEcc::Medium).unwrap();
        let side = code.size() + 8;
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {side} {side}\"")),
            "{svg}"
        );
        assert!(svg.contains("width=\"512\""));
        let dark = (0..code.size())
            .flat_map(|y| (0..code.size()).map(move |x| (x, y)))
            .filter(|(x, y)| code.get_module(*x, *y))
            .count();
        assert_eq!(svg.matches("h1v1h-1z").count(), dark);
        // The finder pattern's corner module, inside the quiet zone.
        assert!(svg.contains("M4,4h1v1h-1z"));
    }

    #[test]
    fn bad_sizes_and_margins_are_refused_naming_the_parameter() {
        for (params, field) in [
            (
                QrParams {
                    size: Some(10),
                    ..QrParams::default()
                },
                "size",
            ),
            (
                QrParams {
                    size: Some(5000),
                    ..QrParams::default()
                },
                "size",
            ),
            (
                QrParams {
                    margin: Some(33),
                    ..QrParams::default()
                },
                "margin",
            ),
        ] {
            match draw(URL, &params) {
                Err(AppError::Invalid { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{params:?}: {other:?}"),
            }
        }
    }
}
