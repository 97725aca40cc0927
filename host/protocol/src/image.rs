//! Which image formats tern passes to a model, told by their first bytes (never by a file's
//! extension, which a renamed file or a screenshot tool gets wrong): the four every provider
//! tern speaks takes — PNG, JPEG, GIF and WebP (Anthropic's vision guide lists exactly these
//! media types; OpenAI's "Images and vision" guide the same four, GIF non-animated).
//!
//! One home for the check, shared by the host (`--image`, pasted paths, ACP prompts) and
//! `tern-fs` (`read_file` of an image), so both sides refuse the same files.

/// An image format a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// `\x89PNG\r\n\x1a\n`.
    Png,
    /// `FF D8 FF`.
    Jpeg,
    /// `GIF87a` / `GIF89a`.
    Gif,
    /// `RIFF....WEBP`.
    Webp,
}

impl ImageFormat {
    /// Every format, for messages that list them.
    pub const ALL: [ImageFormat; 4] = [
        ImageFormat::Png,
        ImageFormat::Jpeg,
        ImageFormat::Gif,
        ImageFormat::Webp,
    ];

    /// Bytes at the start of a file that [`sniff`] needs.
    pub const SNIFF_LEN: usize = 12;

    /// The media type the providers name it by.
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }

    /// Its usual name, for people.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Png => "PNG",
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Gif => "GIF",
            ImageFormat::Webp => "WebP",
        }
    }

    /// The format a media type names, if tern passes it on.
    pub fn from_mime_type(mime: &str) -> Option<ImageFormat> {
        let mime = mime.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|f| f.mime_type() == mime || (mime == "image/jpg" && *f == ImageFormat::Jpeg))
    }
}

/// The format `head` (a file's first bytes, at least [`ImageFormat::SNIFF_LEN`] of them when
/// the file has that many) starts like, or `None` when it is none of the four.
pub fn sniff(head: &[u8]) -> Option<ImageFormat> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some(ImageFormat::Webp)
    } else {
        None
    }
}

/// "PNG, JPEG, GIF or WebP", for messages.
pub fn formats_list() -> String {
    let names: Vec<&str> = ImageFormat::ALL.iter().map(|f| f.name()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// File name extensions of the four formats (lower case): what makes a pasted path worth
/// looking at; the bytes decide what it is.
pub const EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// Bytes a base64 text of `len` characters decodes to (padding `=` included in `len`).
pub fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

/// Characters of the base64 text of `bytes` bytes (padded).
pub fn encoded_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_decide_the_format() {
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            sniff(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(sniff(b"GIF89a\x01\0\x01\0"), Some(ImageFormat::Gif));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some(ImageFormat::Webp));
        // A RIFF that is not WebP (a WAV), text, a truncated PNG signature, nothing.
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"hello world, not an image"), None);
        assert_eq!(sniff(b"\x89PNG"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(formats_list(), "PNG, JPEG, GIF or WebP");
        assert_eq!(
            ImageFormat::from_mime_type("IMAGE/JPG"),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::from_mime_type("image/tiff"), None);
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(encoded_len(0), 0);
        assert_eq!(encoded_len(1), 4);
        assert_eq!(encoded_len(3), 4);
        assert_eq!(encoded_len(4), 8);
        assert_eq!(decoded_len("aGk="), 2);
        assert_eq!(decoded_len("aGVsbG8="), 5);
        assert_eq!(decoded_len("aGVsbG8h"), 6);
    }
}
