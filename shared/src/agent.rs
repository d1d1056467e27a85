//! What a user agent says of its sender, read the same way wherever it is read: the
//! device class and bot flag a click keeps ([`classify_user_agent`]), whether it is a
//! link-preview crawler ([`is_previewer`], which gets a link's preview page), and how
//! much of it is read at all ([`MAX_UA_BYTES`]). Below the clicks, the previews, the
//! targeting rules and the decision, which all read agents.

use serde::{Deserialize, Serialize};

/// User agents are looked at up to this many bytes; real ones are shorter.
pub const MAX_UA_BYTES: usize = 512;

/// The kind of device a visit came from, as far as its user agent tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ClickDevice))]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Desktop,
    Mobile,
    Tablet,
    /// No user agent, or one naming no known platform (TVs, consoles, tools).
    Other,
}

impl Device {
    pub fn as_str(self) -> &'static str {
        match self {
            Device::Desktop => "desktop",
            Device::Mobile => "mobile",
            Device::Tablet => "tablet",
            Device::Other => "other",
        }
    }
}

/// The user-agent markers of link-preview crawlers (lower case). They fetch a link once
/// when it is shared, to show a card; they are not visitors, and are counted as bots.
/// Kept to crawlers that read Open Graph or Twitter tags, matched by markers unlikely in
/// a browser's agent; search engines are not here (they follow the redirect). Apple's
/// iMessage and Signal present themselves as facebookexternalhit or WhatsApp, Teams as
/// SkypeUriPreview.
pub const PREVIEWERS: &[&str] = &[
    "facebookexternalhit",
    "facebookcatalog",
    "meta-externalagent",
    "twitterbot",
    "slackbot",
    "slack-imgproxy",
    "linkedinbot",
    "discordbot",
    "whatsapp",
    "telegrambot",
    "skypeuripreview",
    "microsoftpreview",
    "pinterestbot",
    "redditbot",
    "embedly",
    "iframely",
    "vkshare",
    "mastodon",
    "bluesky",
    "cardyb",
    "google-pagerenderer",
    // Snapchat's crawler; its in-app browser says `Snapchat/…`, and is a person.
    "snap url preview",
    "viber",
    // LINE's crawler; its in-app browser says `Line/…`, and is a person.
    "line-poker",
    "kakaotalk-scrap",
    "mattermost",
];

/// Whether a user agent is a link-preview crawler.
pub fn is_previewer(user_agent: &str) -> bool {
    let ua = head(user_agent, MAX_UA_BYTES).to_ascii_lowercase();
    names_previewer(&ua)
}

/// [`is_previewer`] for an agent already cut and lowercased.
pub(crate) fn names_previewer(lowercase_ua: &str) -> bool {
    PREVIEWERS.iter().any(|m| lowercase_ua.contains(m))
}

/// Words in a user agent that mark an automated client: crawlers, link previewers,
/// monitors, HTTP libraries and headless browsers.
const BOT_MARKERS: &[&str] = &[
    "bot",
    "crawl",
    "spider",
    "slurp",
    "preview",
    "facebookexternalhit",
    "facebookcatalog",
    "embedly",
    "whatsapp",
    "headless",
    "lighthouse",
    "pingdom",
    "uptime",
    "monitor",
    "curl/",
    "wget/",
    "python",
    "go-http-client",
    "java/",
    "okhttp",
    "axios",
    "node-fetch",
    "httpclient",
    "libwww",
    "scrapy",
    "phantomjs",
];

/// The device class and bot flag of a user agent, by a compact rule set rather than a
/// full parser (which would cost the edge's WebAssembly far more than these few hundred
/// bytes; docs/analytics.md). A client is a bot when it names itself one of
/// [`BOT_MARKERS`], or does not present itself as a browser at all: every browser's agent
/// starts `Mozilla/` (or `Opera/`, for old Opera), and an empty agent is a script.
pub fn classify_user_agent(ua: &str) -> (Device, bool) {
    let ua = head(ua, MAX_UA_BYTES).to_ascii_lowercase();
    let browser = ua.starts_with("mozilla/") || ua.starts_with("opera/");
    // Link-preview crawlers are bots whatever they call themselves (several present a
    // browser's agent with the app's name in it).
    let bot = !browser || BOT_MARKERS.iter().any(|m| ua.contains(m)) || names_previewer(&ua);
    let has = |s: &str| ua.contains(s);
    let device = if has("ipad") || has("tablet") || (has("android") && !has("mobile")) {
        Device::Tablet
    } else if has("mobi") || has("iphone") || has("ipod") || has("android") || has("phone") {
        Device::Mobile
    } else if has("windows nt") || has("macintosh") || has("cros") || has("x11") || has("linux") {
        Device::Desktop
    } else {
        Device::Other
    };
    (device, bot)
}

/// At most the first `max` bytes of a header value, cut at a character boundary: what
/// is read of values a client controls.
pub(crate) fn head(value: &str, max: usize) -> &str {
    let mut end = value.len().min(max);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
    const CHROME_ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36";
    const ANDROID_TABLET: &str = "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    const IPAD: &str = "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1";
    const FIREFOX_LINUX: &str =
        "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
    const SAFARI_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15";

    #[test]
    fn browsers_are_people_on_their_devices() {
        for (ua, device) in [
            (CHROME_WINDOWS, Device::Desktop),
            (FIREFOX_LINUX, Device::Desktop),
            (SAFARI_MAC, Device::Desktop),
            (SAFARI_IPHONE, Device::Mobile),
            (CHROME_ANDROID, Device::Mobile),
            (ANDROID_TABLET, Device::Tablet),
            (IPAD, Device::Tablet),
        ] {
            assert_eq!(classify_user_agent(ua), (device, false), "{ua}");
        }
    }

    #[test]
    fn crawlers_previewers_and_tools_are_bots() {
        for ua in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "WhatsApp/2.23.20.0",
            "TelegramBot (like TwitterBot)",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36",
            "curl/8.5.0",
            "python-requests/2.31.0",
            "Go-http-client/1.1",
            "",
        ] {
            assert!(classify_user_agent(ua).1, "{ua:?} should be a bot");
        }
    }

    #[test]
    fn the_chat_apps_crawlers_are_previewers_and_browsers_and_search_engines_are_not() {
        for ua in [
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Twitterbot/1.0",
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
            "WhatsApp/2.23.20.0",
            "TelegramBot (like TwitterBot)",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        ] {
            assert!(is_previewer(ua), "{ua}");
        }
        for ua in [
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "curl/8.5.0",
            "",
            // In-app browsers are people: LINE's and Snapchat's name their app.
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Safari Line/13.17.0",
            "Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/116.0 Mobile Safari/537.36 Line/13.16.1/IAB",
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0 Mobile Safari/537.36 Snapchat/12.70.0.40 (like Safari/604.1)",
        ] {
            assert!(!is_previewer(ua), "{ua}");
        }
        // Their crawlers are previewers.
        for ua in [
            "facebookexternalhit/1.1;line-poker/1.0",
            "Mozilla/5.0 (compatible; Snap URL Preview Service; bot; snapchat; https://developers.snap.com/robots)",
        ] {
            assert!(is_previewer(ua), "{ua}");
        }
    }

    /// Previewers are never counted as people, whatever their agent looks like.
    #[test]
    fn every_previewer_is_classified_a_bot() {
        for marker in PREVIEWERS {
            let ua =
                format!("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 {marker} Safari/537.36");
            assert!(is_previewer(&ua), "{ua}");
            assert!(classify_user_agent(&ua).1, "{ua}");
        }
    }
}
