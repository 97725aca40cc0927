//! Images the person attaches to a message (`tern run --image`, `@pic.png` and a pasted path in
//! the REPL, an editor's image block over ACP): read, checked and handed to the next turn.
//!
//! Where an image is read from decides who reads it:
//! * **inside the workspace**: through the gateway, as an `fs__read_file` call (tern-fs returns
//!   an image file as an MCP image block) — permission-checked, `deny_read`-checked and audited
//!   like the `@path` text mentions ([`super::mention_read`]);
//! * **outside it**: only when the person named the file themselves on the command line
//!   (`--image`) or pasted/dragged its path into the REPL — their own act at their own terminal,
//!   never something the model or a file's text can trigger — tern reads it directly. The file
//!   must still be a regular file, an image by its magic bytes and within the model's limit.
//!
//! Whether the model takes images is checked before anything is sent
//! ([`Engine::check_images`]); a refusal says why and what to do.

use std::{
    io::Read,
    path::{Path, PathBuf},
};

use base64::Engine as _;
use tern_model::vision::{ImageSupport, Takes};
use tern_protocol::{
    Image,
    image::{self, ImageFormat},
};

use super::Engine;
use crate::units::format_bytes;

/// An image ready to go with a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    /// What the person called it (the path as given), for the screen.
    pub name: String,
    /// The image as the model gets it.
    pub image: Image,
    /// Its size in bytes.
    pub bytes: usize,
}

impl Attachment {
    /// An attachment of `image` named `name`.
    pub fn new(name: impl Into<String>, image: Image) -> Self {
        let bytes = image::decoded_len(&image.data);
        Self {
            name: name.into(),
            image,
            bytes,
        }
    }

    /// `[image: pic.png 120 KB]`: what the person sees attached.
    pub fn label(&self) -> String {
        let name = Path::new(&self.name)
            .file_name()
            .map_or_else(|| self.name.clone(), |n| n.to_string_lossy().into_owned());
        format!("[image: {name} {}]", format_bytes(self.bytes))
    }
}

/// `image/png, 120 KB`: an image in a note (the compaction marker, the summarizer's text).
pub fn describe(i: &Image) -> String {
    format!(
        "{}, {}",
        i.mime_type,
        format_bytes(image::decoded_len(&i.data))
    )
}

/// Why an image cannot be attached. Each message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("{name}: no such file\nhint: check the path (relative paths start at {cwd})")]
    NotFound { name: String, cwd: String },
    #[error("{name}: not a regular file\nhint: attach an image file")]
    NotAFile { name: String },
    #[error(
        "{name}: not a {formats} image ({what})\nhint: tern attaches images by their content; \
         to show the model a text file, mention it with @PATH or ask it to read the file"
    )]
    NotAnImage {
        name: String,
        formats: String,
        what: String,
    },
    #[error(
        "{name}: the image is {size}, over the model's limit of {limit} ({source_note})\nhint: \
         make it smaller (e.g. `convert {name} -resize 50% small.png`) and attach that"
    )]
    TooLarge {
        name: String,
        size: String,
        limit: String,
        source_note: &'static str,
    },
    #[error("cannot read {name}: {reason}")]
    Unreadable { name: String, reason: String },
}

/// Reads the image file at `path` (named `name`) directly: a file outside the workspace that
/// the person named. Checks it is a regular file, an image by its first bytes, and within
/// `support`'s limit before it reads the whole file.
pub fn read_outside(
    name: &str,
    path: &Path,
    support: &ImageSupport,
) -> Result<Attachment, AttachError> {
    let unreadable = |e: std::io::Error| AttachError::Unreadable {
        name: name.to_string(),
        reason: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AttachError::NotFound {
            name: name.to_string(),
            cwd: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        },
        _ => unreadable(e),
    })?;
    if !meta.is_file() {
        return Err(AttachError::NotAFile {
            name: name.to_string(),
        });
    }
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let mut head = Vec::with_capacity(ImageFormat::SNIFF_LEN);
    (&mut file)
        .take(ImageFormat::SNIFF_LEN as u64)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
    let Some(format) = image::sniff(&head) else {
        return Err(not_an_image(name, &head, meta.len()));
    };
    let size = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    check_size(name, size, support)?;
    let mut bytes = head;
    // One byte past the limit is enough to know the file grew over it since `stat`.
    (&mut file)
        .take((support.max_image_bytes as u64 + 1).saturating_sub(bytes.len() as u64))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    check_size(name, bytes.len(), support)?;
    let image = Image {
        mime_type: format.mime_type().to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    };
    Ok(Attachment::new(name, image))
}

/// The refusal for a file whose first bytes are no image tern knows.
fn not_an_image(name: &str, head: &[u8], len: u64) -> AttachError {
    let what = if len == 0 {
        "the file is empty".to_string()
    } else if !head.contains(&0) && std::str::from_utf8(head).is_ok() {
        "it is text".to_string()
    } else {
        let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("its first bytes are {}", hex.join(" "))
    };
    AttachError::NotAnImage {
        name: name.to_string(),
        formats: image::formats_list(),
        what,
    }
}

fn check_size(name: &str, size: usize, support: &ImageSupport) -> Result<(), AttachError> {
    if size > support.max_image_bytes {
        return Err(AttachError::TooLarge {
            name: name.to_string(),
            size: format_bytes(size),
            limit: format_bytes(support.max_image_bytes),
            source_note: support.limit_source,
        });
    }
    Ok(())
}

/// `path` resolved against `cwd`, and the path relative to `workspace` when it lies inside it
/// (after following symlinks, so a link out of the workspace counts as outside).
pub fn locate(path: &Path, cwd: &Path, workspace: &Path) -> (PathBuf, Option<String>) {
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let real = std::fs::canonicalize(&full).unwrap_or_else(|_| full.clone());
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let inside = real
        .strip_prefix(&root)
        .ok()
        .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        .filter(|rel| !rel.is_empty());
    (full, inside)
}

impl Engine {
    /// What the current model does with images (`/model` may change it).
    pub fn image_support(&self) -> ImageSupport {
        self.agent.model.images()
    }

    /// `Err` (the message, with a `hint:`) when the current model must not be sent `images`:
    /// it takes no images, or one is over its limit. Nothing has been sent when this refuses.
    pub fn check_images(&self, images: &[Attachment]) -> Result<(), String> {
        if images.is_empty() {
            return Ok(());
        }
        let support = self.image_support();
        if let Takes::No { why } = &support.takes {
            let names: Vec<String> = images.iter().map(Attachment::label).collect();
            return Err(format!(
                "{} cannot take images ({why}); not sent: {}\nhint: switch to a model that \
                 takes images (`/model NAME`, `--model NAME`), or set `[model] vision = true` \
                 if this one does",
                self.model_name(),
                names.join(", ")
            ));
        }
        for a in images {
            check_size(&a.name, a.bytes, &support).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Reads the image the person named at `path` (relative to `cwd`): through the gateway
    /// when it lies in the workspace, directly otherwise (see the module docs for why).
    pub async fn attach_image(&self, path: &Path, cwd: &Path) -> Result<Attachment, AttachError> {
        let name = path.display().to_string();
        let (full, inside) = locate(path, cwd, &self.workspace);
        let support = self.image_support();
        let Some(rel) = inside else {
            let attached = read_outside(&name, &full, &support)?;
            // No gateway call records this read: the events file does.
            self.bus.emit(tern_protocol::Event::Notice {
                message: format!(
                    "read {} ({}) outside the workspace for the user's message: named by the \
                     user",
                    full.display(),
                    describe(&attached.image)
                ),
            });
            return Ok(attached);
        };
        if !full.exists() {
            return Err(AttachError::NotFound {
                name,
                cwd: cwd.display().to_string(),
            });
        }
        let read =
            self.read_mentioned_file(&rel)
                .await
                .map_err(|reason| AttachError::Unreadable {
                    name: name.clone(),
                    reason,
                })?;
        let Some(image) = read.images.into_iter().next() else {
            return Err(AttachError::NotAnImage {
                name,
                formats: image::formats_list(),
                what: "tern-fs read it as text".into(),
            });
        };
        let attachment = Attachment::new(name, image);
        check_size(&attachment.name, attachment.bytes, &support)?;
        Ok(attachment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn support(max: usize) -> ImageSupport {
        ImageSupport {
            takes: Takes::Yes,
            max_image_bytes: max,
            limit_source: "a test limit",
        }
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

    #[test]
    fn outside_files_are_sniffed_sized_and_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("shot.dat");
        std::fs::write(&png, PNG).unwrap();
        let a = read_outside("shot.dat", &png, &support(1_000)).unwrap();
        assert_eq!(a.image.mime_type, "image/png", "by its bytes, not its name");
        assert_eq!(a.bytes, PNG.len());
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&a.image.data)
                .unwrap(),
            PNG
        );
        assert_eq!(a.label(), format!("[image: shot.dat {} B]", PNG.len()));

        let err = read_outside("shot.dat", &png, &support(10)).unwrap_err();
        assert!(matches!(err, AttachError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("a test limit"), "{err}");

        let txt = dir.path().join("notes.png");
        std::fs::write(&txt, "just some notes\n").unwrap();
        let err = read_outside("notes.png", &txt, &support(1_000)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("not a PNG, JPEG, GIF or WebP image (it is text)"),
            "{msg}"
        );
        assert!(msg.contains("hint:"), "{msg}");

        let err = read_outside("dir", dir.path(), &support(1_000)).unwrap_err();
        assert!(matches!(err, AttachError::NotAFile { .. }), "{err}");
        let err = read_outside("nope.png", &dir.path().join("nope.png"), &support(1)).unwrap_err();
        assert!(matches!(err, AttachError::NotFound { .. }), "{err}");
    }

    #[test]
    fn locate_tells_inside_from_outside() {
        let ws = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("img")).unwrap();
        std::fs::write(ws.path().join("img/a.png"), PNG).unwrap();
        std::fs::write(other.path().join("b.png"), PNG).unwrap();
        let (_, inside) = locate(Path::new("img/a.png"), ws.path(), ws.path());
        assert_eq!(inside.as_deref(), Some("img/a.png"));
        let (_, inside) = locate(&other.path().join("b.png"), ws.path(), ws.path());
        assert_eq!(inside, None);
        // A link inside the workspace to a file outside it is outside.
        std::os::unix::fs::symlink(other.path().join("b.png"), ws.path().join("link.png")).unwrap();
        let (_, inside) = locate(Path::new("link.png"), ws.path(), ws.path());
        assert_eq!(inside, None);
    }
}
